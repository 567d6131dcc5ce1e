// Brokers, topics and transactions.
import { useState } from "preact/hooks";
import { enc, html } from "./api.js";

export function Brokers({ brokers, act }) {
  return html`<section class="brokers">
    <h2>Brokers</h2>
    <div class="cards">
      ${brokers.map(
        (b) => html`<div class=${"card broker " + (b.alive ? "alive" : "dead")} data-testid=${"broker-" + b.id}>
          <div class="title">Broker ${b.id} <span class=${"badge " + (b.alive ? "good" : "bad")}>
            ${b.alive ? "up" : "down"}</span></div>
          <div class="muted">${b.host}:${b.port}${b.rack ? ` · rack ${b.rack}` : ""}</div>
          <div>leads <b>${b.leads}</b> partition${b.leads === 1 ? "" : "s"}</div>
          ${b.coordinates.length > 0 &&
          html`<div data-testid=${"coordinates-" + b.id}>coordinator of <b>${b.coordinates.join(", ")}</b></div>`}
          ${b.transactions.length > 0 && html`<div>transactions: ${b.transactions.join(", ")}</div>`}
          <div class="buttons">
            ${b.alive
              ? html`<button class="danger" data-testid=${"stop-broker-" + b.id}
                  onClick=${() => act(`stop broker ${b.id}`, "POST", `/brokers/${b.id}/stop`)}>Stop</button>`
              : html`<button data-testid=${"start-broker-" + b.id}
                  onClick=${() => act(`start broker ${b.id}`, "POST", `/brokers/${b.id}/start`)}>Start</button>`}
            <button onClick=${() => act(`restart broker ${b.id}`, "POST", `/brokers/${b.id}/restart`)}>
              Restart</button>
          </div>
        </div>`,
      )}
    </div>
    <button onClick=${() => act("preferred leaders", "POST", "/leaders/preferred")}>Elect preferred leaders</button>
  </section>`;
}

function LeaderPicker({ topic, partition, brokers, act }) {
  const alive = brokers.filter((b) => b.alive);
  return html`<select data-testid=${`leader-${topic}-${partition.partition}`} value=${partition.leader}
    onChange=${(e) =>
      act(`move ${topic}-${partition.partition}`, "POST", `/topics/${enc(topic)}/partitions/${partition.partition}/leader`,
        { broker: Number(e.target.value) })}>
    ${!alive.some((b) => b.id === partition.leader) &&
    html`<option value=${partition.leader}>${partition.leader} (down)</option>`}
    ${alive.map((b) => html`<option value=${b.id}>${b.id}</option>`)}
  </select>`;
}

export function Topics({ topics, brokers, act }) {
  const [name, setName] = useState("");
  const [count, setCount] = useState("3");
  const create = (e) => {
    e.preventDefault();
    act(`create ${name}`, "POST", "/topics", { name, partitions: Number(count) }).then(() => setName(""), () => {});
  };
  return html`<section class="topics">
    <h2>Topics</h2>
    ${topics.length === 0 && html`<p class="muted">No topics yet.</p>`}
    ${topics.map(
      (t) => html`<details open data-testid=${"topic-" + t.name}>
        <summary><b>${t.name}</b> · ${t.partitions.length} partitions ·
          <span data-testid=${"rate-" + t.name}>${t.records_per_s}</span> records/s</summary>
        <table>
          <thead><tr><th>partition</th><th>leader</th><th>log start</th><th>end</th><th>records/s</th></tr></thead>
          <tbody>
            ${t.partitions.map(
              (p) => html`<tr>
                <td>${p.partition}</td>
                <td><${LeaderPicker} topic=${t.name} partition=${p} brokers=${brokers} act=${act} /></td>
                <td>${p.log_start_offset}</td>
                <td data-testid=${`end-${t.name}-${p.partition}`}>${p.high_watermark}</td>
                <td>${p.records_per_s}</td>
              </tr>`,
            )}
          </tbody>
        </table>
      </details>`,
    )}
    <form class="inline" onSubmit=${create}>
      <input placeholder="new topic" value=${name} onInput=${(e) => setName(e.target.value)} required />
      <input type="number" min="1" value=${count} onInput=${(e) => setCount(e.target.value)} title="partitions" />
      <button>Create</button>
    </form>
  </section>`;
}

export function Transactions({ transactions, brokers, act }) {
  return html`<section class="transactions">
    <h2>Transactions</h2>
    ${transactions.length === 0
      ? html`<p class="muted">No transactional ids yet.</p>`
      : html`<table>
          <thead><tr><th>id</th><th>state</th><th>producer</th><th>partitions</th><th>coordinator</th><th></th></tr></thead>
          <tbody>
            ${transactions.map(
              (t) => html`<tr data-testid=${"txn-" + t.transactional_id}>
                <td>${t.transactional_id}</td><td>${t.state}</td>
                <td>${t.producer_id}/${t.producer_epoch}</td><td>${t.partitions.join(" ")}</td><td>${t.coordinator}</td>
                <td><button onClick=${() =>
                  act(`move ${t.transactional_id}'s coordinator`, "POST",
                    `/transactions/${enc(t.transactional_id)}/coordinator`, {})}>Move coordinator</button></td>
              </tr>`,
            )}
          </tbody>
        </table>`}
  </section>`;
}
