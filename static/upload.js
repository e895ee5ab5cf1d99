// upload.js: the index page. Picking a file submits the form (a plain
// multipart POST to /upload that redirects to the profile); dropping a file
// anywhere on the page uploads it with fetch to the JSON API and then opens
// the returned link.

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
  say(`Uploading ${f.name} (${size(f.size)})…`, 'busy');
  form.classList.add('busy');
  form.requestSubmit();
});

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
