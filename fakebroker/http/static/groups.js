// Groups of every type: state, generation or epoch, members, the assignment as a
// partition x member grid, committed offsets with lag, the swim-lane timeline, and actions.
import { useEffect, useRef, useState } from "preact/hooks";
import { call, enc, html, ranges, shortId } from "./api.js";
import { Timeline } from "./timeline.js";

const partitionsOf = (assignment) =>
  assignment && typeof assignment === "object" && !Array.isArray(assignment) ? assignment : null;

function key(topic, p) {
  return `${topic}-${p}`;
}

// The rows of the grid: every partition any member holds, targets or revokes, or that has a
// committed offset, in topic then partition order.
function gridRows(group) {
  const rows = new Map();
  const add = (topic, p) => rows.set(key(topic, p), [topic, p]);
  for (const m of group.members || []) {
    for (const field of ["assignment", "target", "revoking"]) {
      const parts = partitionsOf(m[field]);
      if (parts) for (const [t, ps] of Object.entries(parts)) if (Array.isArray(ps)) ps.forEach((p) => add(t, p));
    }
  }
  for (const o of group.offsets || []) add(o.topic, o.partition);
  return [...rows.values()].sort((a, b) => (a[0] === b[0] ? a[1] - b[1] : a[0] < b[0] ? -1 : 1));
}

function holds(member, field, topic, p) {
  const parts = partitionsOf(member[field]);
  return !!parts && Array.isArray(parts[topic]) && parts[topic].includes(p);
}

function Grid({ group }) {
  const members = group.members || [];
  const rows = gridRows(group);
  if (!members.length) return html`<p class="muted">No members.</p>`;
  if (!members.some((m) => partitionsOf(m.assignment))) {
    return html`<table class="tasks"><tbody>
      ${members.map(
        (m) => html`<tr><td>${m.client_id}</td><td>${Object.entries(m.tasks || {})
          .map(([kind, tasks]) => (tasks.length ? `${kind} ${tasks.join(" ")}` : ""))
          .filter(Boolean)
          .join(" · ")}</td></tr>`,
      )}
    </tbody></table>`;
  }
  const offsets = new Map((group.offsets || []).map((o) => [key(o.topic, o.partition), o]));
  return html`<table class="grid" data-testid="assignment-grid">
    <thead><tr><th>partition</th>
      ${members.map((m, i) => html`<th data-testid=${"member-" + i} title=${m.member_id}>${m.client_id}<br />
        <span class="muted">${shortId(m.member_id)}</span></th>`)}
      <th>committed</th><th>end</th><th>lag</th></tr></thead>
    <tbody>
      ${rows.map(([t, p]) => {
        const o = offsets.get(key(t, p));
        return html`<tr>
          <td>${t}-${p}</td>
          ${members.map((m, i) => {
            const owned = holds(m, "assignment", t, p);
            const revoking = holds(m, "revoking", t, p);
            const target = !owned && holds(m, "target", t, p);
            const cls = revoking ? "revoking" : owned ? "owned" : target ? "target" : "";
            const mark = revoking ? "◐" : owned ? "●" : target ? "○" : "";
            return html`<td class=${"cell " + cls} data-testid=${`cell-${t}-${p}-${i}`}
              title=${revoking ? "being revoked" : target ? "assigned, not yet taken" : owned ? "owned" : ""}>${mark}</td>`;
          })}
          <td>${o ? o.offset : ""}</td><td>${o && o.end_offset !== null ? o.end_offset : ""}</td>
          <td data-testid=${`lag-${t}-${p}`} class="lag">${o && o.lag !== null ? html`${o.lag}
            <span class="bar" style=${`width:${Math.min(o.lag, 100)}px`}></span>` : ""}</td>
        </tr>`;
      })}
      <tr class="totals"><td>partitions</td>
        ${members.map((m, i) => {
          const parts = partitionsOf(m.assignment) || {};
          const n = Object.values(parts).reduce((s, ps) => s + (Array.isArray(ps) ? ps.length : 0), 0);
          return html`<td data-testid=${"count-" + i}>${n}</td>`;
        })}
        <td></td><td></td>
        <td data-testid="total-lag">${(group.offsets || []).reduce((s, o) => s + (o.lag || 0), 0)}</td>
      </tr>
    </tbody>
  </table>`;
}

function Members({ group }) {
  return html`<table class="members">
    <thead><tr><th>client id</th><th>host</th><th>member</th><th>instance</th><th>epoch</th><th>holds</th></tr></thead>
    <tbody>
      ${(group.members || []).map(
        (m) => html`<tr>
          <td>${m.client_id}</td><td>${m.client_host}</td><td title=${m.member_id}>${shortId(m.member_id)}</td>
          <td>${m.group_instance_id || m.instance_id || ""}</td><td>${m.member_epoch ?? ""}</td>
          <td>${Object.entries(partitionsOf(m.assignment) || {})
            .map(([t, ps]) => `${t} ${ranges(ps)}`)
            .join("; ")}</td>
        </tr>`,
      )}
    </tbody>
  </table>`;
}

function Churn({ group, vocabulary, act }) {
  const [blocks, setBlocks] = useState([]);
  const [steps, setSteps] = useState("2");
  const [seed, setSeed] = useState("");
  const [running, setRunning] = useState(false);
  const topics = [...new Set((group.offsets || []).map((o) => o.topic).concat(
    (group.members || []).flatMap((m) => Object.keys(partitionsOf(m.assignment) || {}))))];
  const [topic, setTopic] = useState("");
  const run = async (e) => {
    e.preventDefault();
    setRunning(true);
    const body = { topic: topic || topics[0], steps: Number(steps) };
    if (blocks.length) body.blocks = blocks;
    if (seed !== "") body.seed = Number(seed);
    try {
      await act(`churn ${group.group_id}`, "POST", `/groups/${enc(group.group_id)}/churn`, body);
    } catch (err) {
      // shown by act
    } finally {
      setRunning(false);
    }
  };
  const names = vocabulary ? vocabulary.churn_blocks : [];
  return html`<form class="churn" onSubmit=${run}>
    <b>Churn</b>
    <select value=${topic || topics[0]} onChange=${(e) => setTopic(e.target.value)}>
      ${topics.map((t) => html`<option>${t}</option>`)}</select>
    ${names.map(
      (n) => html`<label><input type="checkbox" checked=${blocks.includes(n)}
        onChange=${(e) => setBlocks(e.target.checked ? [...blocks, n] : blocks.filter((b) => b !== n))} />${n}</label>`,
    )}
    <label>steps <input type="number" min="1" max="20" value=${steps} onInput=${(e) => setSteps(e.target.value)} /></label>
    <label>seed <input type="number" value=${seed} onInput=${(e) => setSeed(e.target.value)} /></label>
    <button disabled=${running || !topics.length}>${running ? "Running…" : "Run"}</button>
  </form>`;
}

// The timeline is read again when an event of the group arrives, at most once a second.
function useTimeline(groupId, events) {
  const [lanes, setLanes] = useState(null);
  const last = useRef({ seq: -1, at: 0, timer: null });
  const newest = events.filter((e) => e.group === groupId).reduce((s, e) => Math.max(s, e.seq), 0);
  useEffect(() => {
    if (!groupId) return undefined;
    const state = last.current;
    if (newest === state.seq && lanes && lanes.group === groupId) return undefined;
    const fetchNow = () => {
      state.seq = newest;
      state.at = Date.now();
      call("GET", `/groups/${enc(groupId)}/timeline`).then(setLanes, () => setLanes(null));
    };
    const wait = Math.max(0, 1000 - (Date.now() - state.at));
    clearTimeout(state.timer);
    state.timer = setTimeout(fetchNow, wait);
    return () => clearTimeout(state.timer);
  }, [groupId, newest]);
  return lanes && lanes.group === groupId ? lanes : null;
}

function Detail({ group, snapshot, events, vocabulary, act }) {
  const lanes = useTimeline(group.group_id, events);
  const alive = snapshot.brokers.filter((b) => b.alive && b.id !== group.coordinator);
  const generation = group.generation ?? group.epoch ?? group.group_epoch;
  return html`<div class="detail" data-testid="group-detail">
    <div class="facts">
      <span class="badge state" data-testid="group-state">${group.state}</span>
      <span>${group.group_type || "classic"}</span>
      <span>generation/epoch <b data-testid="group-generation">${generation ?? "-"}</b></span>
      <span>coordinator <b data-testid="group-coordinator">${group.coordinator ?? "-"}</b></span>
      ${group.protocol && html`<span>assignor ${group.protocol}</span>`}
      <span>${(group.members || []).length} members</span>
      ${alive.length > 0 &&
      html`<button data-testid="move-coordinator" onClick=${() =>
        act(`move ${group.group_id}'s coordinator`, "POST", `/groups/${enc(group.group_id)}/coordinator`, {})}>
        Move coordinator</button>`}
    </div>
    <${Grid} group=${group} />
    <${Members} group=${group} />
    <${Churn} group=${group} vocabulary=${vocabulary} act=${act} />
    <h3>Timeline</h3>
    <${Timeline} lanes=${lanes} />
  </div>`;
}

export function Groups({ groups, selected, select, snapshot, events, vocabulary, act }) {
  const group = groups.find((g) => g.group_id === selected);
  return html`<section class="groups">
    <h2>Groups</h2>
    ${groups.length === 0 && html`<p class="muted">No groups yet: start a consumer.</p>`}
    <nav class="tabs">
      ${groups.map(
        (g) => html`<button class=${g.group_id === selected ? "tab on" : "tab"} data-testid=${"group-" + g.group_id}
          onClick=${() => select(g.group_id)}>${g.group_id} <span class="muted">${g.state}</span></button>`,
      )}
    </nav>
    ${group && html`<${Detail} group=${group} snapshot=${snapshot} events=${events} vocabulary=${vocabulary} act=${act} />`}
  </section>`;
}
