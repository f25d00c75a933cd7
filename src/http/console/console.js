// Cairn's web console: plain ES module, no build step, no dependencies.
// It reads the same HTTP API as rabbitmqadmin does (and Cairn's own /api/log,
// /api/sessions, /api/collections); every value is inserted as text, never
// as HTML. Only the visible tab is refreshed; the overview's charts sample
// every second whatever the tab, so they have a history when looked at.

const overviewIntervalMs = 1000;
const tabIntervalMs = 2000;
const chartPointsMax = 120;

const $ = (id) => document.getElementById(id);

function setStatus(text, isError = false) {
  const status = $('status');
  status.textContent = text;
  status.className = isError ? 'error' : '';
}

async function api(path, init) {
  const response = await fetch(path, init);
  const text = await response.text();
  const body = text === '' ? undefined : response.headers.get('content-type')?.startsWith('application/json') ? JSON.parse(text) : text;
  if (!response.ok) throw new Error(body?.reason ?? `${response.status} ${response.statusText}`);
  return body;
}

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function cellText(value) {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** A table of rows; columns are [heading, (row) => value] pairs; actions add a cell of buttons. */
function table(rows, columns, actions = []) {
  if (rows.length === 0) return element('p', '(none)');
  const result = element('table');
  const head = result.createTHead().insertRow();
  for (const [heading] of columns) head.appendChild(element('th', heading));
  if (actions.length > 0) head.appendChild(element('th', ''));
  const body = result.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    for (const [, read] of columns) {
      const value = read(row);
      const cell = tr.insertCell();
      cell.textContent = cellText(value);
      if (typeof value === 'number') cell.className = 'number';
    }
    if (actions.length > 0) {
      const cell = tr.insertCell();
      for (const [label, run, when] of actions) {
        if (when && !when(row)) continue;
        const button = element('button', label);
        button.addEventListener('click', () => run(row, button).catch((error) => setStatus(error.message, true)));
        cell.appendChild(button);
      }
    }
  }
  return result;
}

function show(id, node) {
  $(id).replaceChildren(node);
}

function totals(id, pairs) {
  $(id).replaceChildren(...pairs.map(([label, value]) => {
    const box = element('div', label);
    box.appendChild(element('b', cellText(value)));
    return box;
  }));
}

// ───────────── charts: one canvas line chart per figure, scaled to its largest value ─────────────

class LineChart {
  constructor(canvas, names, colours) {
    this.canvas = canvas;
    this.names = names;
    this.colours = colours;
    this.points = names.map(() => []);
  }

  push(values) {
    values.forEach((value, index) => {
      const series = this.points[index];
      series.push(Number.isFinite(value) ? value : 0);
      if (series.length > chartPointsMax) series.shift();
    });
    this.draw();
  }

  draw() {
    const { canvas } = this;
    const context = canvas.getContext('2d');
    const { width, height } = canvas;
    const top = 18;
    const max = Math.max(1e-9, ...this.points.flat());
    context.clearRect(0, 0, width, height);
    context.strokeStyle = '#dde2e8';
    context.strokeRect(0.5, top + 0.5, width - 1, height - top - 1);
    this.points.forEach((series, index) => {
      context.strokeStyle = this.colours[index];
      context.lineWidth = 1.5;
      context.beginPath();
      series.forEach((value, x) => {
        const px = (x / (chartPointsMax - 1)) * (width - 2) + 1;
        const py = height - 2 - (value / max) * (height - top - 4);
        if (x === 0) context.moveTo(px, py);
        else context.lineTo(px, py);
      });
      context.stroke();
    });
    context.fillStyle = '#1d2228';
    context.font = '12px system-ui, sans-serif';
    const legend = this.names.map((name, index) => `${name} ${formatNumber(this.points[index].at(-1) ?? 0)}`).join('   ');
    context.fillText(`${legend}   (max ${formatNumber(max)})`, 4, 13);
    // What was drawn, for people reading the DOM and for the browser test.
    canvas.dataset.points = String(this.points[0].length);
    canvas.dataset.max = String(Math.max(0, ...this.points.flat()));
  }
}

function formatNumber(value) {
  if (Math.abs(value) >= 100) return value.toFixed(0);
  if (Math.abs(value) >= 1) return value.toFixed(1);
  return value.toPrecision(2);
}

const charts = {
  messages: new LineChart($('chart-messages'), ['in', 'out'], ['#2f6fdb', '#1e9e63']),
  fsync: new LineChart($('chart-fsync'), ['fsync ms'], ['#c0562c']),
  batch: new LineChart($('chart-batch'), ['records'], ['#8a4fd1']),
  log: new LineChart($('chart-log'), ['MiB'], ['#55606c']),
  connections: new LineChart($('chart-connections'), ['connections'], ['#2f6fdb']),
};

/** The unlabelled value of a sample in a Prometheus exposition. */
function sample(text, name) {
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : 0;
}

let previous;
/** The fsync figures of the last /metrics that showed new fsyncs, and the latency and batch size they gave. */
let previousFsync;
let lastFsync;

async function sampleOverview() {
  const [overview, metrics] = await Promise.all([api('/api/overview'), api('/metrics')]);
  const cairn = overview.cairn;
  $('version').textContent = overview.product_version;
  const now = performance.now();
  const current = {
    at: now,
    in: cairn.messages.messagesIn.mqtt + cairn.messages.messagesIn.amqp,
    out: cairn.messages.messagesOut.mqtt + cairn.messages.messagesOut.amqp,
  };
  const fsyncFigures = {
    fsyncSeconds: sample(metrics, 'cairn_log_fsync_seconds_sum'),
    fsyncs: sample(metrics, 'cairn_log_fsync_seconds_count'),
    batchRecords: sample(metrics, 'cairn_log_batch_records_sum'),
  };
  if (previous !== undefined) {
    const seconds = (current.at - previous.at) / 1000;
    charts.messages.push([(current.in - previous.in) / seconds, (current.out - previous.out) / seconds]);
  }
  previous = current;
  // /metrics is rendered once per --stats-interval: a sample without new fsyncs holds the last figures rather than
  // drawing 0, and the next fsyncs are averaged over the whole stretch since the last ones.
  const fsyncs = previousFsync === undefined ? 0 : fsyncFigures.fsyncs - previousFsync.fsyncs;
  if (fsyncs > 0) {
    lastFsync = [((fsyncFigures.fsyncSeconds - previousFsync.fsyncSeconds) / fsyncs) * 1000, (fsyncFigures.batchRecords - previousFsync.batchRecords) / fsyncs];
  }
  if (previousFsync === undefined || fsyncs > 0) previousFsync = fsyncFigures;
  if (lastFsync !== undefined) {
    charts.fsync.push([lastFsync[0]]);
    charts.batch.push([lastFsync[1]]);
  }
  charts.log.push([(cairn.log.bytes ?? 0) / 1048576]);
  charts.connections.push([overview.object_totals.connections]);
  totals('totals', [
    ['uptime', `${cairn.uptimeSeconds} s`], ['connections', overview.object_totals.connections], ['channels', overview.object_totals.channels],
    ['queues', overview.object_totals.queues], ['queued messages', overview.queue_totals.messages], ['consumers', overview.object_totals.consumers],
    ['MQTT sessions', cairn.sessions.total], ['session backlog', cairn.sessions.pending], ['next LSN', cairn.log.nextLsn],
    ['durable LSN', cairn.log.durableLsn], ['log bytes', cairn.log.bytes ?? 'n/a'], ['segments', cairn.log.segments ?? 'n/a'],
  ]);
}

// ───────────── tabs ─────────────

async function showQueues() {
  const filter = $('queues-filter').value.trim();
  const query = `columns=name,durable,auto_delete,exclusive,messages_ready,messages_unacknowledged,consumers${filter ? `&name=${encodeURIComponent(filter)}` : ''}`;
  const queues = await api(`/api/queues?${query}`);
  show('queues-table', table(queues, [
    ['name', (q) => q.name], ['durable', (q) => q.durable], ['auto-delete', (q) => q.auto_delete], ['exclusive', (q) => q.exclusive],
    ['ready', (q) => q.messages_ready], ['unacked', (q) => q.messages_unacknowledged], ['consumers', (q) => q.consumers],
  ], [['Browse', (q) => browse(q.name)]]));
}

async function browse(queue) {
  const messages = await api(`/api/queues/%2F/${encodeURIComponent(queue)}/get`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ count: 50, ackmode: 'ack_requeue_true', encoding: 'auto', truncate: 2000 }),
  });
  $('browser').hidden = false;
  $('browser-queue').textContent = queue;
  show('browser-messages', table(messages, [
    ['exchange', (m) => m.exchange || '(default)'], ['routing key', (m) => m.routing_key], ['redelivered', (m) => m.redelivered],
    ['bytes', (m) => m.payload_bytes], ['properties', (m) => m.properties], ['payload', (m) => (m.payload_encoding === 'base64' ? `base64:${m.payload}` : m.payload)],
  ]));
}

async function showSessions() {
  const { sessions, truncated, total } = await api('/api/sessions');
  show('sessions-table', table(sessions, [
    ['client id', (s) => s.clientId], ['connected', (s) => s.connected], ['persistent', (s) => s.persistent], ['backlog', (s) => s.pending],
    ['in flight', (s) => s.inflight], ['dropped', (s) => s.dropped], ['subscriptions', (s) => s.subscriptions.map((x) => `${x.filter} q${x.qos}`).join(', ')],
  ]));
  if (truncated) $('sessions-table').appendChild(element('p', `first ${sessions.length} of ${total}`));
}

async function showConnections() {
  const [connections, channels, consumers] = await Promise.all([api('/api/connections'), api('/api/channels'), api('/api/consumers')]);
  show('connections-table', table(connections, [
    ['name', (c) => c.name], ['protocol', (c) => c.protocol], ['user', (c) => c.user], ['client', (c) => c.client_properties.client_id ?? c.client_properties.product ?? ''],
    ['state', (c) => c.state], ['channels', (c) => c.channels], ['received', (c) => c.recv_oct], ['sent', (c) => c.send_oct],
  ], [['Close', async (c) => { await api(`/api/connections/${encodeURIComponent(c.name)}`, { method: 'DELETE' }); await showConnections(); }]]));
  show('channels-table', table(channels, [
    ['name', (c) => c.name], ['consumers', (c) => c.consumer_count], ['unacked', (c) => c.messages_unacknowledged], ['prefetch', (c) => c.prefetch_count],
    ['confirm', (c) => c.confirm], ['unconfirmed', (c) => c.messages_unconfirmed],
  ]));
  show('consumers-table', table(consumers, [
    ['tag', (c) => c.consumer_tag], ['queue', (c) => c.queue.name], ['channel', (c) => c.channel_details.name], ['ack', (c) => c.ack_required],
    ['prefetch', (c) => c.prefetch_count], ['exclusive', (c) => c.exclusive],
  ]));
}

async function showExchanges() {
  const [exchanges, bindings] = await Promise.all([api('/api/exchanges'), api('/api/bindings')]);
  show('exchanges-table', table(exchanges, [
    ['name', (x) => x.name || '(AMQP default)'], ['type', (x) => x.type], ['durable', (x) => x.durable], ['auto-delete', (x) => x.auto_delete], ['bindings', (x) => x.cairn?.bindings],
  ]));
  show('bindings-table', table(bindings, [['source', (b) => b.source || '(AMQP default)'], ['destination', (b) => b.destination], ['routing key', (b) => b.routing_key]]));
}

let logQuery = '';

async function showLog() {
  const position = await api('/api/log');
  totals('log-position', [['first LSN', position.firstLsn], ['next LSN', position.nextLsn], ['durable LSN', position.durableLsn], ['bytes', position.bytes ?? 'n/a'], ['last snapshot', position.lastSnapshot?.lsn ?? 'none']]);
  const { records, examined, partial, reason } = await api(`/api/log/records?limit=100${logQuery}`);
  $('log-scope').textContent = `${records.length} shown, ${examined} records examined${partial ? ` — partial: ${reason}` : ''}`;
  show('log-records', table(records, [['LSN', (r) => r.lsn], ['time', (r) => r.time], ['kind', (r) => r.kind], ['record', (r) => r.summary]],
    [['Trace', (r) => trace(r.lsn), (r) => r.kind === 'msg']]));
}

async function trace(lsn) {
  const traced = await api(`/api/log/trace?lsn=${lsn}`);
  $('trace').hidden = false;
  $('trace-lsn').textContent = String(lsn);
  const steps = [{ lsn: traced.lsn, time: traced.time, destination: '', what: `published${traced.from ? ` by ${traced.from}` : ''} to ${traced.exchange !== undefined ? `exchange ${traced.exchange || '(default)'} key ${traced.topic}` : `topic ${traced.topic}`} (${traced.bytes} B)` }];
  for (const destination of traced.destinations) {
    for (const step of destination.steps) steps.push({ lsn: step.lsn, time: step.time, destination: `${destination.destination} seq ${destination.seq}`, what: step.what });
    if (destination.status === 'pending') steps.push({ lsn: '', time: '', destination: `${destination.destination} seq ${destination.seq}`, what: 'still pending' });
  }
  if (traced.destinations.length === 0) steps.push({ lsn: '', time: '', destination: '', what: 'no durable destination' });
  if (traced.partial) steps.push({ lsn: traced.throughLsn ?? '', time: '', destination: '', what: `partial: ${traced.reason}` });
  show('trace-body', table(steps, [['LSN', (s) => s.lsn], ['time', (s) => s.time], ['destination', (s) => s.destination], ['step', (s) => s.what]]));
}

async function showCollections() {
  const { collections } = await api('/api/collections');
  show('collections-table', table(collections, [['name', (c) => c.name], ['documents', (c) => c.documents]]));
  const select = $('documents-form').elements.namedItem('collection');
  const chosen = select.value;
  select.replaceChildren(...collections.map((c) => element('option', c.name)));
  if (chosen) select.value = chosen;
}

async function findDocuments(form) {
  const collection = form.elements.namedItem('collection').value;
  const filter = form.elements.namedItem('filter').value.trim();
  const found = await api(`/api/collections/${encodeURIComponent(collection)}/documents${filter ? `?filter=${encodeURIComponent(filter)}` : ''}`);
  const shown = element('div');
  // A query stopped by the server's cap on documents examined says so: the list may be missing matches.
  const scope = `${found.count} shown, ${found.examined} examined${found.partial ? ' — partial: the server stopped at its cap on documents examined per query (--query-documents-max)' : ''}`;
  shown.append(table(found.documents, [['_id', (d) => d._id], ['document', (d) => d]]), element('p', scope));
  show('documents', shown);
}

const tabs = { overview: async () => undefined, queues: showQueues, sessions: showSessions, connections: showConnections, exchanges: showExchanges, log: showLog, collections: showCollections };

function currentTab() {
  const name = location.hash.slice(1);
  return name in tabs ? name : 'overview';
}

async function refreshTab() {
  const name = currentTab();
  for (const section of document.querySelectorAll('[data-tab]')) section.hidden = section.id !== name;
  for (const link of document.querySelectorAll('#tabs a')) link.classList.toggle('active', link.getAttribute('href') === `#${name}`);
  try {
    await tabs[name]();
    setStatus(`updated ${new Date().toLocaleTimeString()}`);
  } catch (error) {
    setStatus(error.message, true);
  }
}

$('log-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const data = new FormData(event.target);
  logQuery = ['kind', 'topic', 'client', 'queue'].map((name) => [name, String(data.get(name) ?? '').trim()]).filter(([, value]) => value !== '').map(([name, value]) => `&${name}=${encodeURIComponent(value)}`).join('');
  refreshTab();
});
$('documents-form').addEventListener('submit', (event) => {
  event.preventDefault();
  findDocuments(event.target).catch((error) => setStatus(error.message, true));
});
$('queues-filter').addEventListener('input', () => refreshTab());
window.addEventListener('hashchange', () => refreshTab());

async function overviewLoop() {
  try {
    await sampleOverview();
  } catch (error) {
    setStatus(error.message, true);
  }
  setTimeout(overviewLoop, overviewIntervalMs);
}

async function tabLoop() {
  // The log and the queue browser change under the reader's eyes if refreshed: they refresh on demand.
  if (!['log', 'collections'].includes(currentTab())) await refreshTab();
  setTimeout(tabLoop, tabIntervalMs);
}

refreshTab();
overviewLoop();
tabLoop();
