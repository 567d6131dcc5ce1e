// Calls to the control endpoint's JSON API, on the console's cookie. The page holds no logic
// of its own: every action is one of these calls, answered (and checked) by the endpoint.
import { h } from "preact";
import htm from "htm";

export const html = htm.bind(h);

export async function call(method, path, body) {
  const init = { method, credentials: "same-origin", headers: {} };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(data.error || `${method} ${path}: HTTP ${res.status}`);
  return data;
}

export const enc = encodeURIComponent;

export function shortId(memberId) {
  const tail = /-([0-9a-f]{8})-[0-9a-f-]{27}$/i.exec(memberId || "");
  return tail ? tail[1] : (memberId || "").slice(-8);
}

export function ranges(parts) {
  const sorted = [...parts].sort((a, b) => a - b);
  const out = [];
  for (let i = 0; i < sorted.length; i++) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    out.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j;
  }
  return out.join(",");
}
