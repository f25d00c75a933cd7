/**
 * The overview page at `/`: static HTML whose script reads the JSON API and
 * renders it as tables, refreshed every few seconds. No build step, no
 * dependencies; every value is inserted as text (textContent), never as HTML.
 */
export function overviewPage(version: string | undefined): string {
  const title = `Cairn${version === undefined ? '' : ` ${escapeHtml(version)}`}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title}</title>
<style>
body{font:14px system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin-bottom:1.5em}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}
th{background:#f3f3f3}h2{margin-bottom:.3em}
</style></head><body>
<h1>${title}</h1>
<div id="sections"></div>
<script>
const sections = [
  ['Overview', '/api/overview', (d) => [{ uptimeSeconds: d.cairn.uptimeSeconds, nextLsn: d.cairn.log.nextLsn, durableLsn: d.cairn.log.durableLsn, bytes: d.cairn.log.bytes, sessions: d.cairn.sessions.total, connected: d.cairn.sessions.connected, queues: d.object_totals.queues }]],
  ['Sessions', '/api/sessions', (d) => d.sessions.map((s) => ({ ...s, subscriptions: s.subscriptions.map((x) => x.filter + ' q' + x.qos).join(', ') }))],
  ['Queues', '/api/queues?columns=name,durable,auto_delete,exclusive,messages_ready,messages_unacknowledged,consumers', (d) => d],
  ['Exchanges', '/api/exchanges?columns=name,type,durable,auto_delete', (d) => d.map((x) => ({ ...x, name: x.name === '' ? '(AMQP default)' : x.name }))],
  ['Bindings', '/api/bindings?columns=source,destination,routing_key', (d) => d],
  ['Collections', '/api/collections', (d) => d.collections],
];
function table(rows) {
  const t = document.createElement('table');
  if (rows.length === 0) { t.textContent = '(none)'; return t; }
  const head = t.insertRow();
  for (const key of Object.keys(rows[0])) { const th = document.createElement('th'); th.textContent = key; head.appendChild(th); }
  for (const row of rows) { const tr = t.insertRow(); for (const value of Object.values(row)) tr.insertCell().textContent = typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value); }
  return t;
}
async function refresh() {
  const root = document.getElementById('sections');
  const parts = [];
  for (const [name, path, rows] of sections) {
    const h = document.createElement('h2'); h.textContent = name; parts.push(h);
    try { const r = await fetch(path); const body = await r.json(); parts.push(r.ok ? table(rows(body)) : Object.assign(document.createElement('p'), { textContent: body.reason })); }
    catch (e) { parts.push(Object.assign(document.createElement('p'), { textContent: String(e) })); }
  }
  root.replaceChildren(...parts);
}
refresh(); setInterval(refresh, 5000);
</script></body></html>
`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
