// A group's swim lanes (GET /groups/{id}/timeline) drawn as SVG: a band of group states, then
// a lane per member with a segment per generation (labelled with its assignment) and markers
// for expiries, faults and cluster actions.
import { html, ranges } from "./api.js";

const WIDTH = 900;
const LEFT = 170;
const LANE = 26;
const BAND = 20;

const hue = (generation) => (generation === null ? 0 : (generation * 67) % 360);

function short(assignment) {
  if (!assignment) return "";
  return Object.entries(assignment)
    .map(([t, ps]) => `${t.length > 10 ? t.slice(0, 9) + "…" : t} ${ranges(ps)}`)
    .join(" ");
}

export function Timeline({ lanes }) {
  if (!lanes) return html`<p class="muted">No timeline yet.</p>`;
  const span = Math.max(lanes.end - lanes.start, 0.001);
  const x = (t) => LEFT + ((t - lanes.start) / span) * (WIDTH - LEFT - 10);
  const rows = lanes.lanes;
  const states = Object.values(lanes.states)[0] || [];
  const height = BAND + 8 + rows.length * LANE + 22;
  return html`<svg class="timeline" data-testid="timeline" viewBox=${`0 0 ${WIDTH} ${height}`} width="100%">
    ${states.map(([start, end, state]) => html`<g>
      <rect x=${x(start)} y="0" width=${Math.max(x(end) - x(start), 1)} height=${BAND}
        class=${"state " + state} />
      ${x(end) - x(start) > 60 && html`<text x=${x(start) + 3} y="14" class="small">${state}</text>`}
    </g>`)}
    <text x="4" y="14" class="small">state</text>
    ${rows.map((lane, i) => {
      const y = BAND + 8 + i * LANE;
      return html`<g>
        <text x="4" y=${y + 17} class="small" title=${lane.member_id}>${lane.label}</text>
        ${lane.segments.map((s) => {
          const end = s.end ?? lanes.end;
          const w = Math.max(x(end) - x(s.start), 1);
          const fill = s.generation === null ? "#ccc" : `hsl(${hue(s.generation)} 55% 72%)`;
          return html`<g>
            <rect x=${x(s.start)} y=${y + 3} width=${w} height=${LANE - 6} rx="3" fill=${fill}>
              <title>${`generation ${s.generation ?? "(joining)"}: ${short(s.assignment)}`}</title></rect>
            ${w > 50 && html`<text x=${x(s.start) + 3} y=${y + 17} class="small">${
              s.generation === null ? "joining" : `g${s.generation} ${short(s.assignment)}`.slice(0, Math.floor(w / 6))
            }</text>`}
          </g>`;
        })}
        ${lane.ended && html`<text x=${x(lane.segments.length ? lane.segments[lane.segments.length - 1].end ?? lanes.end : lanes.end) + 2}
          y=${y + 17} class="small ended">${lane.ended}</text>`}
      </g>`;
    })}
    ${lanes.markers.map((m) => html`<line x1=${x(m.x)} x2=${x(m.x)} y1="0" y2=${height - 20}
      class=${"marker " + m.kind}><title>${m.label}</title></line>`)}
    <text x=${LEFT} y=${height - 4} class="small">0 s</text>
    <text x=${WIDTH - 60} y=${height - 4} class="small">${span.toFixed(1)} s</text>
  </svg>`;
}
