// upload.js: the index page. Picking a file, or dropping one anywhere on the
// page, uploads it with fetch to the JSON API and then opens the returned
// link (without scripts the form is a plain multipart POST to /upload). Each
// upload is remembered in this browser's localStorage only, and listed
// under "Recent uploads"; the server keeps no such list.

import { formatValue } from './flame.js';

const form = document.getElementById('upload-form');
const input = document.getElementById('file');
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

async function upload(file) {
  say(`Uploading ${file.name} (${size(file.size)})…`, 'busy');
  form.classList.add('busy');
  const body = new FormData();
  body.append('file', file, file.name);
  try {
    const resp = await fetch(form.dataset.api, { method: 'POST', body, headers: { Accept: 'application/json' } });
    const text = await resp.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* plain-text error */ }
    if (!resp.ok || !json || !json.url) {
      const msg = (json && (json.error || json.message)) || text.trim() || resp.statusText;
      throw new Error(`${file.name}: ${msg} (HTTP ${resp.status})`);
    }
    remember(file, json.url);
    say(`Uploaded; opening ${json.url}…`, 'ok');
    location.assign(json.url);
  } catch (err) {
    form.classList.remove('busy');
    say(err.message, 'error');
  }
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
  const files = e.dataTransfer.files;
  if (files.length > 1) say(`Dropped ${files.length} files; uploading the first.`, 'busy');
  if (files.length) upload(files[0]);
});
