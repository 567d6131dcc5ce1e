// The event stream, newest first, with filters on group, client id and kind.
import { useState } from "preact/hooks";
import { html } from "./api.js";

const SHOWN = 300;

function details(d) {
  return Object.entries(d || {})
    .map(([k, v]) => `${k}=${typeof v === "object" && v !== null ? JSON.stringify(v) : v}`)
    .join(" ");
}

export function Events({ events, skipped, dropped, vocabulary, groups }) {
  const [group, setGroup] = useState("");
  const [client, setClient] = useState("");
  const [kind, setKind] = useState("");
  const shown = [];
  for (let i = events.length - 1; i >= 0 && shown.length < SHOWN; i--) {
    const e = events[i];
    if (group && e.group !== group) continue;
    if (client && !(e.client_id || "").includes(client)) continue;
    if (kind && e.kind !== kind) continue;
    shown.push(e);
  }
  const first = events.length ? events[0].time_ms : 0;
  return html`<section class="events">
    <h2>Events</h2>
    <div class="filters">
      <select data-testid="filter-group" value=${group} onChange=${(e) => setGroup(e.target.value)}>
        <option value="">every group</option>
        ${groups.map((g) => html`<option>${g.group_id}</option>`)}
      </select>
      <input data-testid="filter-client" placeholder="client id" value=${client}
        onInput=${(e) => setClient(e.target.value)} />
      <select data-testid="filter-kind" value=${kind} onChange=${(e) => setKind(e.target.value)}>
        <option value="">every kind</option>
        ${(vocabulary ? vocabulary.event_kinds : []).map((k) => html`<option>${k}</option>`)}
      </select>
      <span class="muted">${events.length} kept${skipped ? `, ${skipped} skipped in bursts` : ""}${
        dropped ? `, ${dropped} dropped by the log` : ""}</span>
    </div>
    <div class="event-scroll"><table class="event-list" data-testid="event-list">
      <thead><tr><th>seq</th><th>time</th><th>kind</th><th>broker</th><th>group</th><th>client</th><th>details</th></tr></thead>
      <tbody>
        ${shown.map(
          (e) => html`<tr class=${"kind-" + e.kind} data-kind=${e.kind}>
            <td>${e.seq}</td><td>+${((e.time_ms - first) / 1000).toFixed(3)}s</td><td>${e.kind}</td>
            <td>${e.broker ?? ""}</td><td>${e.group ?? ""}</td><td>${e.client_id ?? ""}</td>
            <td class="details">${details(e.details)}</td>
          </tr>`,
        )}
      </tbody>
    </table></div>
  </section>`;
}
