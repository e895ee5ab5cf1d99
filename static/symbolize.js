// symbolize.js: the flame page's symbolization panel. It follows the
// profile's event stream (server-sent events from /p/ID/events): each
// binary's state, where its debug info comes from and the download's
// progress. When a copy with more names is stored it redraws the flame graph
// through page.js's reload(), which keeps zoom and search. It also wires the
// Skip (one binary), Disable (debuginfod for this profile) and Retry buttons.

import { reload } from './page.js';
import { formatValue } from './flame.js';

const config = JSON.parse(document.getElementById('flame-config').textContent);
const section = document.getElementById('symbolization');
const tbody = document.getElementById('binaries');
const summary = document.getElementById('symbolization-summary');
const base = `/p/${config.id}`;

// 'no symbols' is neutral (stripped, nothing found: the row says what to
// do); 'pseudo' rows ([vdso], JIT maps) are not binaries and are not counted.
const FINAL = new Set(['symbolized', 'no symbols', 'skipped', 'error']);
const helpURL = section.dataset.helpUrl || '';
let source = null; // the EventSource while following a job
let running = false;
let status = null; // the latest job status

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
const disableBtn = controls.querySelector('#symbolize-disable');
const retryBtn = controls.querySelector('#symbolize-retry');

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

// showProgress puts a progress bar and "bytes of total" in the row.
function showProgress(tr, bytes, total) {
  const td = tr.cells[4];
  let bar = td.querySelector('progress');
  let text = td.querySelector('.bytes');
  if (!bar) {
    td.textContent = '';
    bar = document.createElement('progress');
    text = document.createElement('span');
    text.className = 'bytes';
    td.append(bar, ' ', text);
  }
  if (total > 0) {
    bar.max = total;
    bar.value = Math.min(bytes, total);
  } else {
    bar.removeAttribute('value'); // indeterminate
  }
  text.textContent = bytes > 0 ? (total > 0 ? `${size(bytes)} of ${size(total)}` : size(bytes)) : '';
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
  const src = b.server && b.state === 'fetching' ? b.server : (b.source || '');
  tr.cells[3].textContent = src;
  tr.cells[3].title = src;
  if (b.state === 'fetching') {
    showProgress(tr, b.bytes || 0, b.total || -1);
  } else {
    tr.cells[4].textContent = b.reason || '';
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
  const rows = Array.from(tbody.rows).filter((tr) => tr.dataset.state !== 'pseudo');
  const done = rows.filter((tr) => tr.dataset.state === 'symbolized').length;
  const missed = rows.filter((tr) => ['no symbols', 'skipped', 'error'].includes(tr.dataset.state)).length;
  let text = rows.length ? `${done} of ${rows.length} symbolized` : 'no binaries to symbolize';
  if (running) text += ' · working…';
  summary.textContent = text;
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
  section.dataset.job = 'running';
  for (const tr of tbody.rows) ensureActions(tr);
  source = new EventSource(url);
  source.addEventListener('job', (e) => {
    showStatus(JSON.parse(e.data));
    updateSummary();
  });
  source.addEventListener('binary', (e) => {
    updateRow(JSON.parse(e.data));
    updateSummary();
  });
  source.addEventListener('progress', (e) => {
    const p = JSON.parse(e.data);
    const tr = rowFor(p);
    if (tr.dataset.state !== 'fetching') return;
    if (p.server) { tr.cells[3].textContent = p.server; tr.cells[3].title = p.server; }
    showProgress(tr, p.bytes || 0, p.total || -1);
  });
  // A copy with more names is stored: redraw with them.
  source.addEventListener('names', () => { reload().catch(() => {}); });
  source.addEventListener('symbolized', (e) => {
    const s = JSON.parse(e.data);
    source.close();
    source = null;
    running = false;
    for (const b of s.binaries || []) updateRow(b);
    showStatus(s);
    updateSummary();
    section.dataset.job = 'done';
    reload().then(() => { section.dataset.redrawn = '1'; }).catch(() => {});
  });
  source.addEventListener('error', () => {
    if (source && source.readyState === EventSource.CLOSED) {
      note.textContent = 'Lost the connection to the server; reload the page to follow symbolization.';
      running = false;
      updateSummary();
    }
  });
}

// ---- buttons ----

async function post(path) {
  const resp = await fetch(`${base}${path}`, { method: 'POST', headers: { Accept: 'application/json' } });
  if (!resp.ok) {
    const text = (await resp.text()).trim();
    const after = resp.headers.get('Retry-After');
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
  const t = e.target;
  if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.isContentEditable)) return;
  if (e.key === 'd' && !disableBtn.hidden) disableBtn.click();
  if (e.key === 's') {
    const tr = Array.from(tbody.rows).find((r) => r.dataset.state === 'fetching');
    const btn = tr && tr.querySelector('button.skip');
    if (btn && !btn.hidden) btn.click();
  }
});

// ---- start ----

if (config.eventsURL) {
  follow(config.eventsURL);
} else if (!config.statusURL) {
  updateSummary(); // the server does not symbolize: nothing to ask
} else {
  // Finished before this page was drawn: show the outcome and Retry.
  fetch(config.statusURL, { headers: { Accept: 'application/json' } })
    .then((r) => (r.ok ? r.json() : null))
    .then((s) => {
      if (!s || s.state === 'none') { updateSummary(); return; }
      for (const b of s.binaries || []) updateRow(b);
      showStatus(s);
      updateSummary();
      section.dataset.job = s.state;
    })
    .catch(() => {});
}
