// symbolize.js: the flame page's symbolization panel. It follows the
// profile's event stream (server-sent events from /p/ID/events): each
// binary's state, where its debug info comes from and the download's
// progress. When a copy with more names is stored it redraws the flame graph
// through flamestate.js's reload() (page.js's), which keeps zoom and search.
// It also wires the Skip (one binary), Disable (debuginfod for this
// profile) and Retry buttons.
//
// A fetching row says what is going on: the phase, the bytes so far, the
// speed, the time since the fetch started and, when the size is known, the
// time left; before the first byte, how long it has waited. The server
// reports at least once a second while a fetch is alive, and the row's
// clock ticks on its own between reports. Long reasons (the kernel's) show
// one line, with the rest behind a "why" disclosure. When the job ends, the
// panel folds to its one-line summary (how many binaries are symbolized and
// how many were left without symbols).

import { reload } from './flamestate.js';
import { formatValue } from './flame.js';
import { readConfig, responseError } from './common.js';
import { BinaryState, RunState, SymbolizeEvent } from './states.js';

const config = readConfig('flame-config');
const section = document.getElementById('symbolization');
const tbody = /** @type {HTMLTableSectionElement} */ (document.getElementById('binaries'));
const summary = document.getElementById('symbolization-summary');
const base = `/p/${config.id}`;

// BinaryState.NotFound ("no symbols") is neutral (stripped, nothing found:
// the row says what to do); Pseudo rows ([vdso], JIT maps) are not
// binaries and are not counted. The names are the server's (states.js).
/** @type {Set<string>} */
const FINAL = new Set([BinaryState.Symbolized, BinaryState.NotFound, BinaryState.Skipped, BinaryState.Error]);
/** @type {Set<string>} */
const MISSED = new Set([BinaryState.NotFound, BinaryState.Skipped, BinaryState.Error]);
const helpURL = section.dataset.helpUrl || '';
let source = null; // the EventSource while following a job
let running = false;
let status = null; // the latest job status
let folded = false; // folded once when everything resolved; the user may open it again

// ---- panel scaffolding ----

const headRow = section.querySelector('thead tr');
if (headRow && !headRow.querySelector('.actions')) {
  const th = document.createElement('th');
  th.className = 'actions';
  headRow.appendChild(th);
}
const controls = document.createElement('div');
controls.className = 'symbolize-controls';
controls.innerHTML = '<span class="symbolize-note" id="symbolize-note"></span>'
  + '<button type="button" class="button" id="symbolize-disable" hidden title="Stop asking debuginfod servers for this profile">Disable debuginfod</button>'
  + '<button type="button" class="button" id="symbolize-retry" hidden title="Look again for the binaries that missed">Retry</button>';
section.querySelector('details').insertBefore(controls, section.querySelector('table'));
const note = controls.querySelector('#symbolize-note');
const disableBtn = /** @type {HTMLButtonElement} */ (controls.querySelector('#symbolize-disable'));
const retryBtn = /** @type {HTMLButtonElement} */ (controls.querySelector('#symbolize-retry'));

function keyOf(b) {
  return b.key || (b.build_id ? b.build_id.toLowerCase() : `file:${b.file}`);
}

function rowFor(b) {
  const key = keyOf(b);
  for (const tr of tbody.rows) {
    if (tr.dataset.key === key) return tr;
  }
  // Rows rendered by the server carry only the build ID (and the file).
  for (const tr of tbody.rows) {
    if (tr.dataset.key) continue;
    const bid = (tr.dataset.buildId || '').toLowerCase();
    const file = tr.cells[0] ? tr.cells[0].title || tr.cells[0].textContent : '';
    if ((b.build_id && bid === b.build_id.toLowerCase()) || (!b.build_id && !bid && file === b.file)) {
      tr.dataset.key = key;
      return tr;
    }
  }
  const tr = document.createElement('tr');
  tr.dataset.key = key;
  tr.dataset.buildId = b.build_id || '';
  tr.innerHTML = '<td class="file"></td><td class="build-id"><code></code></td><td><span class="state"></span></td><td class="source"></td><td class="detail"></td>';
  tbody.appendChild(tr);
  section.hidden = false;
  return tr;
}

function ensureActions(tr) {
  let td = tr.querySelector('td.actions');
  if (!td) {
    td = document.createElement('td');
    td.className = 'actions';
    const btn = document.createElement('button');
    btn.type = 'button';
    btn.className = 'button small skip';
    btn.textContent = 'Skip';
    btn.title = 'Stop looking for this binary';
    btn.hidden = true;
    btn.addEventListener('click', () => skip(tr.dataset.key, btn));
    td.appendChild(btn);
    tr.appendChild(td);
  }
  return td;
}

function stateClass(state) {
  return `state state-${String(state).toLowerCase().replace(/[^a-z0-9]/g, '-')}`;
}

function size(n) {
  return formatValue(n, 'bytes');
}

function shortID(id) {
  return id && id.length > 16 ? `${id.slice(0, 12)}…` : (id || '');
}

// live holds, per fetching row (by key), when the fetch was first seen,
// when its first byte came and recent byte counts for the speed.
const live = new Map();
const SPEED_WINDOW_MS = 5000;
const STALLED_MS = 3000; // no new byte for this long: say it stalled, not slow

function duration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s`;
  const m = Math.floor(s / 60);
  return m < 120 ? `${m} min ${s % 60} s` : `${(s / 3600).toFixed(1)} h`;
}

function liveOf(tr) {
  const key = tr.dataset.key || tr.dataset.buildId;
  let l = live.get(key);
  if (!l) {
    l = { start: performance.now(), first: 0, changed: performance.now(), samples: [], bytes: 0, total: -1, phase: '' };
    live.set(key, l);
  }
  return l;
}

// showProgress puts a progress bar and the live line in the row.
function showProgress(tr, bytes, total, phase) {
  const td = tr.cells[4];
  let bar = td.querySelector('progress');
  let text = td.querySelector('.live');
  if (!bar || !text) {
    td.textContent = '';
    bar = document.createElement('progress');
    text = document.createElement('span');
    text.className = 'bytes live';
    td.append(bar, ' ', text);
  }
  if (total > 0) {
    bar.max = total;
    bar.value = Math.min(bytes, total);
  } else {
    bar.removeAttribute('value'); // indeterminate
  }
  const l = liveOf(tr);
  const now = performance.now();
  if (phase) l.phase = phase;
  if (bytes > 0 && !l.first) l.first = now;
  if (bytes !== l.bytes || !l.samples.length) { l.samples.push([now, bytes]); l.changed = now; }
  while (l.samples.length > 2 && now - l.samples[1][0] > SPEED_WINDOW_MS) l.samples.shift();
  l.bytes = bytes;
  l.total = total;
  tr.dataset.phase = l.phase;
  text.textContent = liveText(l, now);
}

/** The row's live line: "downloading · 1.2 MiB of 4.0 MiB · 850 KiB/s · 3 s · 4 s left". */
function liveText(l, now) {
  const parts = [l.phase || BinaryState.Fetching];
  const elapsed = duration(now - l.start);
  if (l.bytes <= 0) {
    parts.push(`waiting for the first byte (${elapsed})`);
    return parts.join(' · ');
  }
  parts.push(l.total > 0 ? `${size(l.bytes)} of ${size(l.total)}` : size(l.bytes));
  const [t0, b0] = l.samples[0];
  const span = (now - t0) / 1000;
  const still = now - l.changed;
  const speed = span > 0.2 && still < STALLED_MS ? (l.bytes - b0) / span : 0;
  parts.push(still >= STALLED_MS ? `stalled: no byte for ${duration(still)}` : speed > 0 ? `${size(speed)}/s` : 'starting');
  parts.push(`${elapsed} elapsed`);
  if (l.total > 0 && speed > 0 && l.bytes < l.total) parts.push(`${duration(((l.total - l.bytes) / speed) * 1000)} left`);
  return parts.join(' · ');
}

// The clock of fetching rows ticks between the server's reports.
setInterval(() => {
  const now = performance.now();
  for (const tr of tbody.rows) {
    if (tr.dataset.state !== BinaryState.Fetching) continue;
    const text = tr.cells[4].querySelector('.live');
    if (text) text.textContent = liveText(liveOf(tr), now);
  }
}, 1000);

// A reason longer than a line shows its first clause, the rest (and the
// full text, build IDs and all) behind "why".
const LONG_REASON = 90;
function showReason(td, reason) {
  td.textContent = '';
  if (!reason || reason.length <= LONG_REASON) {
    td.textContent = reason || '';
    return;
  }
  const m = /^(.*?)[:;(]\s*/.exec(reason);
  let head = m && m[1].length >= 12 ? m[1] : reason.slice(0, LONG_REASON);
  head = head.replace(/\b[0-9a-f]{40}\b/gi, (id) => shortID(id));
  if (head.length > LONG_REASON) head = `${head.slice(0, LONG_REASON - 1)}…`;
  const line = document.createElement('span');
  line.className = 'reason-line';
  line.textContent = `${head} `;
  const why = document.createElement('details');
  why.className = 'why';
  const sum = document.createElement('summary');
  sum.textContent = 'why';
  const full = document.createElement('span');
  full.className = 'reason-full';
  full.textContent = reason;
  why.append(sum, full);
  td.append(line, why);
}

function updateRow(b) {
  const tr = rowFor(b);
  const was = tr.dataset.state;
  tr.dataset.state = b.state;
  tr.cells[0].textContent = b.file || b.name || '';
  tr.cells[0].title = b.file || '';
  tr.cells[1].title = b.build_id || '';
  tr.cells[1].querySelector('code').textContent = shortID(b.build_id);
  const st = tr.cells[2].querySelector('span') || tr.cells[2];
  st.className = stateClass(b.state);
  st.textContent = b.state;
  const src = b.server && b.state === BinaryState.Fetching ? b.server : (b.source || '');
  tr.cells[3].textContent = src;
  tr.cells[3].title = src;
  if (b.state === BinaryState.Fetching) {
    showProgress(tr, b.bytes || 0, b.total || -1, b.phase || '');
  } else {
    live.delete(tr.dataset.key || tr.dataset.buildId);
    delete tr.dataset.phase;
    showReason(tr.cells[4], b.reason || '');
    if (b.help) {
      const help = document.createElement('span');
      help.className = 'help';
      help.textContent = `${b.help} `;
      if (helpURL) {
        const a = document.createElement('a');
        a.href = helpURL;
        a.textContent = 'Where debug info comes from';
        help.appendChild(a);
      }
      tr.cells[4].appendChild(help);
    }
  }
  const td = ensureActions(tr);
  td.querySelector('button.skip').hidden = !running || FINAL.has(b.state);
  return was !== b.state;
}

function updateSummary() {
  const rows = Array.from(tbody.rows).filter((tr) => tr.dataset.state !== BinaryState.Pseudo);
  const done = rows.filter((tr) => tr.dataset.state === BinaryState.Symbolized).length;
  const missed = rows.filter((tr) => MISSED.has(tr.dataset.state || '')).length;
  let text = rows.length ? `${done} of ${rows.length} symbolized` : 'no binaries to symbolize';
  if (missed) text += ` · ${missed} without symbols`;
  if (running) text += ' · working…';
  summary.textContent = text;
  // The job ended (every row final): fold the panel to this line, once, so
  // the flame graph has the room; the user may open it again.
  const details = section.querySelector('details');
  const resolved = rows.length > 0 && done === rows.length;
  const ended = rows.every((tr) => FINAL.has(tr.dataset.state));
  if (details && ended && !running && !folded) { details.open = false; folded = true; }
  section.dataset.resolved = resolved ? '1' : '';
  retryBtn.hidden = running || missed === 0;
}

function showStatus(s) {
  status = s;
  const servers = s.servers || [];
  const asked = s.asked || [];
  let text;
  if (!servers.length) {
    text = 'Local debug info only: this server asks no debuginfod server.';
  } else if (!s.debuginfod) {
    text = s.disabled
      ? 'debuginfod disabled for this profile.'
      : 'debuginfod not asked: the upload asked not to send its build IDs.';
  } else {
    text = `Build IDs are sent to ${servers.join(', ')}.`;
  }
  if (asked.length) text += ` Asked: ${asked.join(', ')}.`;
  if (s.error) text += ` ${s.error}`;
  note.textContent = text;
  section.dataset.asked = asked.join(' ');
  disableBtn.hidden = !running || !s.debuginfod;
}

// ---- the event stream ----

function follow(url) {
  if (source) source.close();
  running = true;
  section.dataset.job = RunState.Running;
  for (const tr of tbody.rows) ensureActions(tr);
  source = new EventSource(url);
  source.addEventListener(SymbolizeEvent.Job, (e) => {
    showStatus(JSON.parse(e.data));
    updateSummary();
  });
  source.addEventListener(SymbolizeEvent.Binary, (e) => {
    updateRow(JSON.parse(e.data));
    updateSummary();
  });
  source.addEventListener(SymbolizeEvent.Progress, (e) => {
    const p = JSON.parse(e.data);
    const tr = rowFor(p);
    if (tr.dataset.state !== BinaryState.Fetching) return;
    if (p.server) { tr.cells[3].textContent = p.server; tr.cells[3].title = p.server; }
    showProgress(tr, p.bytes || 0, p.total || -1, p.phase || '');
  });
  // A copy with more names is stored: redraw with them.
  source.addEventListener(SymbolizeEvent.Names, () => { reload().catch(() => {}); });
  source.addEventListener(SymbolizeEvent.Symbolized, (e) => {
    const s = JSON.parse(e.data);
    source.close();
    source = null;
    running = false;
    for (const b of s.binaries || []) updateRow(b);
    showStatus(s);
    updateSummary();
    section.dataset.job = RunState.Done;
    reload().then(() => { section.dataset.redrawn = '1'; }).catch(() => {});
    watch();
  });
  source.addEventListener('error', () => {
    if (source && source.readyState === EventSource.CLOSED) {
      note.textContent = 'Lost the connection to the server; reload the page to follow symbolization.';
      running = false;
      updateSummary();
    }
  });
}

// ---- waiting for debug info ----

// A job that ended with binaries left without symbols runs again by itself
// when their debug info is uploaded to this server (viewer
// upload-debuginfo): the page asks for the status now and then, and follows
// the new run (or, when it already ended, takes its outcome) without a
// reload.
const WATCH_MS = 5000;
let watchTimer = null;

function watch() {
  clearTimeout(watchTimer);
  watchTimer = null;
  if (running || !config.statusURL) return;
  if (!Array.from(tbody.rows).some((tr) => tr.dataset.state === BinaryState.NotFound)) return;
  watchTimer = setTimeout(async () => {
    watchTimer = null;
    if (running) return;
    try {
      const r = await fetch(config.statusURL, { headers: { Accept: 'application/json' } });
      const s = r.ok ? await r.json() : null;
      const known = status ? status.resolved : 0;
      if (s && (s.state === RunState.Queued || s.state === RunState.Running || (s.state === RunState.Done && s.resolved !== known))) {
        follow(`${base}/events`);
        return;
      }
    } catch (err) {
      // the server is away: ask again later
    }
    watch();
  }, WATCH_MS);
}

// ---- buttons ----

async function post(path) {
  const resp = await fetch(`${base}${path}`, { method: 'POST', headers: { Accept: 'application/json' } });
  if (!resp.ok) {
    const after = resp.headers.get('Retry-After');
    const text = await responseError(resp);
    throw new Error(`${text || resp.statusText}${after ? ` (retry in ${after} s)` : ''}`);
  }
  return resp.json().catch(() => ({}));
}

async function skip(key, btn) {
  btn.disabled = true;
  try {
    await post(`/symbolize/skip?key=${encodeURIComponent(key)}`);
  } catch (err) {
    note.textContent = `Skip failed: ${err.message}`;
    btn.disabled = false;
  }
}

disableBtn.addEventListener('click', async () => {
  disableBtn.disabled = true;
  try {
    await post('/symbolize/disable');
  } catch (err) {
    note.textContent = `Disable failed: ${err.message}`;
    disableBtn.disabled = false;
  }
});

retryBtn.addEventListener('click', async () => {
  retryBtn.disabled = true;
  try {
    const r = await post('/symbolize/retry');
    follow(r.events || `${base}/events`);
  } catch (err) {
    note.textContent = `Retry failed: ${err.message}`;
  } finally {
    retryBtn.disabled = false;
  }
});

// Keyboard: s skips the first binary still being fetched, d disables
// debuginfod (perf's keys), unless typing in a field.
document.addEventListener('keydown', (e) => {
  if (!running || e.ctrlKey || e.metaKey || e.altKey) return;
  const t = /** @type {HTMLElement} */ (e.target);
  if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.isContentEditable)) return;
  if (e.key === 'd' && !disableBtn.hidden) disableBtn.click();
  if (e.key === 's') {
    const tr = Array.from(tbody.rows).find((r) => r.dataset.state === BinaryState.Fetching);
    const btn = tr && /** @type {HTMLButtonElement} */ (tr.querySelector('button.skip'));
    if (btn && !btn.hidden) btn.click();
  }
});

// ---- start ----

// The server's rows: long reasons to one line too.
for (const tr of tbody.rows) {
  const td = tr.cells[4];
  if (!td || tr.dataset.state === BinaryState.Fetching) continue;
  const help = td.querySelector('.help');
  const reason = Array.from(td.childNodes).filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.textContent).join('').trim();
  if (reason.length <= LONG_REASON) continue;
  showReason(td, reason);
  if (help) td.append(help);
}

if (config.eventsURL) {
  follow(config.eventsURL);
} else if (!config.statusURL) {
  updateSummary(); // the server does not symbolize: nothing to ask
} else {
  // Finished before this page was drawn: show the outcome and Retry.
  fetch(config.statusURL, { headers: { Accept: 'application/json' } })
    .then((r) => (r.ok ? r.json() : null))
    .then((s) => {
      if (!s || s.state === RunState.None) { updateSummary(); return; }
      for (const b of s.binaries || []) updateRow(b);
      showStatus(s);
      updateSummary();
      section.dataset.job = s.state;
      watch();
    })
    .catch(() => {});
}
