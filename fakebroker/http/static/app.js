// The console's page: one live stream (GET /stream, server-sent events) feeds every view;
// actions are calls to the JSON API, whose answers the next snapshot shows.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { call, html } from "./api.js";
import { Brokers, Topics, Transactions } from "./cluster.js";
import { Events } from "./events.js";
import { Clock, Faults, Network } from "./forms.js";
import { Groups } from "./groups.js";

const MAX_EVENTS = 2000; // the newest events the page keeps

function useLive() {
  const [live, setLive] = useState({ snapshot: null, events: [], connected: false, skipped: 0 });
  useEffect(() => {
    const source = new EventSource("/stream");
    source.addEventListener("open", () => setLive((l) => ({ ...l, connected: true })));
    source.addEventListener("error", () => setLive((l) => ({ ...l, connected: false })));
    source.addEventListener("state", (m) => setLive((l) => ({ ...l, snapshot: JSON.parse(m.data) })));
    source.addEventListener("events", (m) => {
      const batch = JSON.parse(m.data);
      setLive((l) => {
        const known = l.events.length ? l.events[l.events.length - 1].seq : 0;
        const fresh = batch.events.filter((e) => e.seq > known);
        return { ...l, events: [...l.events, ...fresh].slice(-MAX_EVENTS), skipped: l.skipped + batch.skipped };
      });
    });
    return () => source.close();
  }, []);
  return live;
}

function Notice({ notice, clear }) {
  if (!notice) return null;
  return html`<div class=${"notice " + (notice.error ? "bad" : "good")} data-testid="notice" onClick=${clear}>
    ${notice.text}
  </div>`;
}

function App() {
  const live = useLive();
  const [vocabulary, setVocabulary] = useState(null);
  const [notice, setNotice] = useState(null);
  const [selected, setSelected] = useState(null);
  useEffect(() => {
    call("GET", "/vocabulary").then(setVocabulary, (e) => setNotice({ error: true, text: e.message }));
  }, []);
  // every action goes through here: its answer or its error is shown, the stream shows the rest
  const act = async (what, method, path, body) => {
    try {
      const answer = await call(method, path, body);
      setNotice({ text: `${what}: done` });
      return answer;
    } catch (e) {
      setNotice({ error: true, text: `${what}: ${e.message}` });
      throw e;
    }
  };
  const snap = live.snapshot;
  const groups = snap ? snap.groups : [];
  const group = selected ?? (groups.length ? groups[0].group_id : null);
  return html`
    <header>
      <h1>fakebroker</h1>
      <span class=${"dot " + (live.connected ? "up" : "down")} data-testid="connection"
        title=${live.connected ? "live" : "reconnecting"}>${live.connected ? "live" : "offline"}</span>
      ${snap && html`<${Clock} clock=${snap.clock} act=${act} />`}
    </header>
    <${Notice} notice=${notice} clear=${() => setNotice(null)} />
    ${!snap
      ? html`<p class="loading">Waiting for the cluster…</p>`
      : html`<main>
          <${Brokers} brokers=${snap.brokers} act=${act} />
          <${Groups} groups=${groups} selected=${group} select=${setSelected} snapshot=${snap}
            events=${live.events} vocabulary=${vocabulary} act=${act} />
          <${Topics} topics=${snap.topics} brokers=${snap.brokers} act=${act} />
          <${Faults} faults=${snap.faults} vocabulary=${vocabulary} brokers=${snap.brokers} act=${act} />
          <${Network} cuts=${snap.cuts} brokers=${snap.brokers} act=${act} />
          <${Transactions} transactions=${snap.transactions} brokers=${snap.brokers} act=${act} />
          <${Events} events=${live.events} skipped=${live.skipped} dropped=${snap.events.dropped}
            vocabulary=${vocabulary} groups=${groups} />
        </main>`}
  `;
}

render(html`<${App} />`, document.getElementById("app"));
