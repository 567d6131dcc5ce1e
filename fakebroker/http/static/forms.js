// Fault rules, network cuts and the clock: lists with their forms. A form sends what was typed
// and shows the endpoint's answer; the endpoint checks it, with the same messages as the API.
import { useState } from "preact/hooks";
import { html } from "./api.js";

const NUMBERS = ["broker", "partition", "times", "nth", "after", "delay", "duration", "probability", "throttle_ms", "seed"];
const FIELDS = ["api", "error", "action", "group", "topic", "partition", "client_id", "transactional_id", "broker",
  "times", "nth", "after", "delay", "duration", "probability", "throttle_ms"];

function ruleText(rule) {
  return Object.entries(rule)
    .filter(([k]) => !["id", "matched", "fired", "active"].includes(k))
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(",") : v}`)
    .join(" ");
}

export function Faults({ faults, vocabulary, act }) {
  const [form, setForm] = useState({});
  const [error, setError] = useState("");
  const set = (name) => (e) => setForm({ ...form, [name]: e.target.value });
  const submit = async (e) => {
    e.preventDefault();
    const body = {};
    for (const [k, v] of Object.entries(form)) {
      if (v === "") continue;
      body[k] = NUMBERS.includes(k) && !Number.isNaN(Number(v)) ? Number(v) : v;
    }
    try {
      await act("add fault", "POST", "/faults", body);
      setError("");
      setForm({});
    } catch (err) {
      setError(err.message);
    }
  };
  const actions = vocabulary ? Object.entries(vocabulary.actions) : [];
  return html`<section class="faults">
    <h2>Fault rules</h2>
    ${faults.length === 0
      ? html`<p class="muted">No fault rules.</p>`
      : html`<table data-testid="fault-list">
          <thead><tr><th>id</th><th>rule</th><th>matched</th><th>fired</th><th></th></tr></thead>
          <tbody>
            ${faults.map(
              (r) => html`<tr data-testid=${"fault-" + r.id} class=${r.active ? "" : "muted"}>
                <td>${r.id}</td><td>${ruleText(r)}</td><td>${r.matched}</td>
                <td data-testid=${"fired-" + r.id}>${r.fired}</td>
                <td><button onClick=${() => act(`remove rule ${r.id}`, "DELETE", `/faults/${r.id}`)}>Remove</button></td>
              </tr>`,
            )}
          </tbody>
        </table>
        <button onClick=${() => act("remove every rule", "DELETE", "/faults")}>Remove all</button>`}
    <form class="fault-form" data-testid="fault-form" onSubmit=${submit}>
      <datalist id="apis">${(vocabulary ? vocabulary.apis : []).map((a) => html`<option value=${a} />`)}</datalist>
      <datalist id="errors">${(vocabulary ? vocabulary.errors : []).map((a) => html`<option value=${a} />`)}</datalist>
      ${FIELDS.map((name) =>
        name === "action"
          ? html`<label>action <select name="action" value=${form.action || ""} onChange=${set("action")}>
              <option value="">(error if one is given)</option>
              ${actions.map(([a, what]) => html`<option value=${a} title=${what}>${a}</option>`)}
            </select></label>`
          : html`<label>${name} <input name=${name} value=${form[name] || ""} onInput=${set(name)}
              list=${name === "api" ? "apis" : name === "error" ? "errors" : undefined} /></label>`,
      )}
      <button data-testid="add-fault">Add rule</button>
      ${error && html`<p class="error" data-testid="fault-error">${error}</p>`}
    </form>
  </section>`;
}

export function Network({ cuts, brokers, act }) {
  const [client, setClient] = useState("");
  const [broker, setBroker] = useState("");
  const cut = (e) => {
    e.preventDefault();
    const body = { client_id: client };
    if (broker !== "") body.broker = Number(broker);
    act(`cut ${client}`, "POST", "/network/cut", body).then(() => setClient(""), () => {});
  };
  return html`<section class="network">
    <h2>Network</h2>
    ${cuts.length === 0
      ? html`<p class="muted">No cuts.</p>`
      : html`<ul data-testid="cuts">${cuts.map(
          (c) => html`<li>${c.client_id} cut from ${c.broker === null ? "every broker" : "broker " + c.broker}
            <button onClick=${() => act(`heal ${c.client_id}`, "POST", "/network/heal",
              c.broker === null ? { client_id: c.client_id } : { client_id: c.client_id, broker: c.broker })}>Heal</button></li>`,
        )}</ul>`}
    <form class="inline" onSubmit=${cut}>
      <input placeholder="client id or glob (svc-*)" value=${client} onInput=${(e) => setClient(e.target.value)} required />
      <select value=${broker} onChange=${(e) => setBroker(e.target.value)}>
        <option value="">every broker</option>
        ${brokers.map((b) => html`<option value=${b.id}>broker ${b.id}</option>`)}
      </select>
      <button>Cut</button>
    </form>
  </section>`;
}

export function Clock({ clock, act }) {
  const [seconds, setSeconds] = useState("1");
  const when = new Date(clock.now_ms).toISOString().replace("T", " ").replace("Z", "");
  return html`<span class="clock" data-testid="clock">
    ${clock.virtual ? "virtual" : "real"} clock ${when}
    ${clock.virtual &&
    html`<form class="inline" onSubmit=${(e) => {
      e.preventDefault();
      act(`advance ${seconds} s`, "POST", "/clock/advance", { seconds: Number(seconds) });
    }}>
      <input type="number" min="0" step="any" value=${seconds} onInput=${(e) => setSeconds(e.target.value)} />
      <button data-testid="advance-clock">Advance s</button></form>`}
  </span>`;
}
