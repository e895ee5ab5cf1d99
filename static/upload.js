// upload.js: the index page. Picking a file, or dropping one anywhere on the
// page, uploads it to the JSON API, showing the bytes sent and then the
// server's conversion phases under a progress bar, and then opens the returned
// link (without scripts the form is a plain multipart POST to /upload). Each
// upload is remembered in this browser's localStorage only, and listed
// under "Recent uploads"; the server keeps no such list.

import { formatValue } from './flame.js';
import { UploadPhase } from './states.js';

const form = document.getElementById('upload-form');
const input = /** @type {HTMLInputElement} */ (document.getElementById('file'));
const mapsInput = /** @type {HTMLInputElement} */ (document.getElementById('sourcemaps'));
const status = document.getElementById('upload-status');

for (const el of document.querySelectorAll('[data-origin]')) el.textContent = location.origin;

function say(text, kind) {
  status.textContent = text;
  status.className = `upload-status ${kind || ''}`;
}

function size(n) {
  return formatValue(n, 'bytes');
}

input.addEventListener('change', () => {
  const f = input.files && input.files[0];
  if (!f) return;
  upload(f);
});

// ---- recent uploads (localStorage) ----

const RECENT = 'viewer.recent';
const RECENT_KEPT = 12;

function recent() {
  try {
    const v = JSON.parse(localStorage.getItem(RECENT) || '[]');
    return Array.isArray(v) ? v.filter((r) => r && typeof r.url === 'string' && r.url.startsWith('/p/')) : [];
  } catch { return []; }
}

function remember(file, url) {
  const list = recent().filter((r) => r.url !== url);
  list.unshift({ name: file.name, size: file.size, url, at: Date.now() });
  try { localStorage.setItem(RECENT, JSON.stringify(list.slice(0, RECENT_KEPT))); } catch { /* storage full or off */ }
}

function showRecent() {
  const box = document.getElementById('recent');
  const ul = document.getElementById('recent-list');
  if (!box || !ul) return;
  const list = recent();
  ul.textContent = '';
  for (const r of list) {
    const li = document.createElement('li');
    const a = document.createElement('a');
    a.href = r.url;
    a.textContent = r.name || r.url;
    const meta = document.createElement('span');
    meta.className = 'muted';
    meta.textContent = ` ${size(r.size || 0)} · ${new Date(r.at).toLocaleString()}`;
    li.append(a, meta);
    ul.append(li);
  }
  box.hidden = list.length === 0;
}

document.getElementById('recent-clear')?.addEventListener('click', () => {
  localStorage.removeItem(RECENT);
  showRecent();
});
showRecent();

// upload sends file with XMLHttpRequest, whose upload events give the
// bytes sent, and follows the server's side of it on an event stream keyed
// by a random key the request names (X-Upload-Progress): the bytes it
// received, then each phase of the conversion, then the end.
async function upload(file, maps = []) {
  say(`Uploading ${file.name} (${size(file.size)})…`, 'busy');
  form.classList.add('busy');
  const bar = progressBar();
  const key = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
  const server = follow(key, file, bar);
  await server.opened;
  const body = new FormData();
  body.append('file', file, file.name);
  // JavaScript source maps, picked beside the profile or dropped with it,
  // go in the "sourcemap" field; the server maps the frames through them.
  for (const m of [...(mapsInput ? mapsInput.files : []), ...maps]) body.append('sourcemap', m, m.name);
  try {
    const { status, text } = await send(form.dataset.api, body, key, (sent, total) => {
      if (server.phase) return; // the server's phases take over
      bar.max = total;
      bar.value = sent;
      say(`Uploading ${file.name}: ${size(sent)} of ${size(total)} (${Math.floor((100 * sent) / total)}%)`, 'busy');
    });
    let json = null;
    try { json = JSON.parse(text); } catch { /* plain-text error */ }
    if (status !== 201 || !json || !json.url) {
      const msg = (json && (json.error || json.message)) || text.trim() || `HTTP ${status}`;
      throw new Error(`${file.name}: ${msg} (HTTP ${status})`);
    }
    // The server's last phases, shown before the page goes: they may
    // come a little after the answer, on the other connection.
    await Promise.race([server.ended, new Promise((r) => setTimeout(r, 2000))]);
    remember(file, json.url);
    say(`Uploaded; opening ${json.url}…`, 'ok');
    location.assign(json.url);
  } catch (err) {
    form.classList.remove('busy');
    bar.remove();
    say(err.message, 'error');
  } finally {
    server.close();
  }
}

// send POSTs body, telling onSent the bytes sent of the total as they go;
// it resolves with the answer's status and text.
function send(url, body, key, onSent) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', url);
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.setRequestHeader('X-Upload-Progress', key);
    xhr.upload.addEventListener('progress', (e) => { if (e.lengthComputable) onSent(e.loaded, e.total); });
    xhr.addEventListener('load', () => resolve({ status: xhr.status, text: xhr.responseText }));
    xhr.addEventListener('error', () => reject(new Error('the upload failed: the server could not be reached or closed the connection')));
    xhr.addEventListener('abort', () => reject(new Error('the upload was aborted')));
    xhr.send(body);
  });
}

// progressBar is a <progress> under the status line.
function progressBar() {
  let bar = /** @type {HTMLProgressElement} */ (document.getElementById('upload-progress'));
  if (!bar) {
    bar = document.createElement('progress');
    bar.id = 'upload-progress';
    bar.className = 'upload-progress';
    status.after(bar);
  }
  return bar;
}

// The server's phases (states.js), as the status line says them.
const PHASES = {
  [UploadPhase.Receiving]: 'The server is receiving it',
  [UploadPhase.Converting]: 'Converting',
  [UploadPhase.Inflating]: 'Decompressing',
  [UploadPhase.ReadingRecords]: 'Reading its records',
  [UploadPhase.AggregatingStacks]: 'Aggregating its stacks',
};
/** @type {Set<string>} */
const BYTE_PHASES = new Set([UploadPhase.Receiving, UploadPhase.Inflating, UploadPhase.ReadingRecords]);

// follow shows the server's side of the upload keyed key. opened resolves
// once the stream is open (or could not be), ended when the server says
// the upload ended (or the stream failed).
function follow(key, file, bar) {
  const state = { phase: '', close() { es.close(); } };
  let open, end;
  state.opened = new Promise((r) => { open = r; });
  state.ended = new Promise((r) => { end = r; });
  const es = new EventSource(`/api/uploads/${key}/progress`);
  es.addEventListener('open', open);
  es.addEventListener('error', () => { open(); if (es.readyState === EventSource.CLOSED) end(); });
  setTimeout(open, 2000);
  es.addEventListener('message', (e) => {
    let ev;
    try { ev = JSON.parse(e.data); } catch { return; }
    if (ev.finished) { es.close(); end(); return; }
    if (ev.phase === UploadPhase.Receiving && ev.done < ev.total) return; // the browser's own count is ahead
    state.phase = ev.phase;
    const what = PHASES[ev.phase] || ev.phase;
    if (ev.total > 0) {
      bar.max = ev.total;
      bar.value = ev.done;
      const n = BYTE_PHASES.has(ev.phase) ? `${size(ev.done)} of ${size(ev.total)}` : `${ev.done.toLocaleString()} of ${ev.total.toLocaleString()}`;
      say(`${file.name}: ${what}: ${n} (${Math.floor((100 * ev.done) / ev.total)}%)`, 'busy');
    } else {
      bar.removeAttribute('value'); // indeterminate
      say(`${file.name}: ${what}…`, 'busy');
    }
  });
  return state;
}

// Drag and drop anywhere on the page; the drop zone lights up.
let depth = 0;
const hasFiles = (e) => e.dataTransfer && Array.from(e.dataTransfer.types || []).includes('Files');
document.addEventListener('dragenter', (e) => {
  if (!hasFiles(e)) return;
  e.preventDefault();
  depth++;
  form.classList.add('dragging');
});
document.addEventListener('dragover', (e) => {
  if (!hasFiles(e)) return;
  e.preventDefault();
  e.dataTransfer.dropEffect = 'copy';
});
document.addEventListener('dragleave', () => {
  depth = Math.max(0, depth - 1);
  if (depth === 0) form.classList.remove('dragging');
});
document.addEventListener('drop', (e) => {
  if (!hasFiles(e)) return;
  e.preventDefault();
  depth = 0;
  form.classList.remove('dragging');
  // .map files dropped with a profile are its source maps.
  const all = [...e.dataTransfer.files];
  const maps = all.filter((f) => f.name.endsWith('.map'));
  const files = all.filter((f) => !f.name.endsWith('.map'));
  if (files.length > 1) say(`Dropped ${files.length} files; uploading the first.`, 'busy');
  if (files.length) upload(files[0], maps);
  else if (maps.length) say('Dropped only source maps (.map): drop the profile with them, or pick it.', 'error');
});
