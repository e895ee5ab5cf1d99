// toppage.js: the top page's search box and pages. The server renders every
// row it lists (up to ?n=); this shows PAGE of them at a time, the rows whose
// name matches the search (a case-insensitive regex, or the plain text when
// it is not one), and keeps the search in the URL (q=). It sets
// body[data-ready] once the table is ready to read.

const PAGE = 100;
const table = /** @type {HTMLTableElement} */ (document.getElementById('top'));
const tools = document.getElementById('top-tools');
const input = /** @type {HTMLInputElement} */ (document.getElementById('top-search'));
const count = document.getElementById('top-count');
const prev = /** @type {HTMLButtonElement} */ (document.getElementById('top-prev'));
const next = /** @type {HTMLButtonElement} */ (document.getElementById('top-next'));
let page = 0;

function matcher(q) {
  if (!q) return () => true;
  try {
    const re = new RegExp(q, 'i');
    return (s) => re.test(s);
  } catch {
    const l = q.toLowerCase();
    return (s) => s.toLowerCase().includes(l);
  }
}

function show() {
  const match = matcher(input.value);
  const rows = Array.from(table.tBodies[0].rows);
  const hits = rows.filter((r) => match(r.dataset.name || ''));
  const pages = Math.max(1, Math.ceil(hits.length / PAGE));
  page = Math.min(page, pages - 1);
  const from = page * PAGE;
  const shown = new Set(hits.slice(from, from + PAGE));
  for (const r of rows) r.hidden = !shown.has(r);
  const n = hits.length;
  const of = input.value ? ` matching, of ${rows.length}` : '';
  count.textContent = n === 0 ? `No function matches${of ? ` (${rows.length} listed)` : ''}` :
    `${from + 1}–${Math.min(n, from + PAGE)} of ${n}${of}`;
  prev.disabled = page === 0;
  next.disabled = page >= pages - 1;
  prev.hidden = next.hidden = pages < 2 && page === 0;
}

if (table && tools) {
  tools.hidden = false;
  const q = new URLSearchParams(location.search).get('q');
  if (q) input.value = q;
  input.addEventListener('input', () => {
    page = 0;
    show();
    const u = new URL(location.href);
    if (input.value) u.searchParams.set('q', input.value); else u.searchParams.delete('q');
    history.replaceState(history.state, '', u.pathname + u.search + u.hash);
  });
  prev.addEventListener('click', () => { page--; show(); });
  next.addEventListener('click', () => { page++; show(); });
  // After table.js re-sorts the rows: the first page of the new order.
  table.tHead.addEventListener('click', (e) => { if (/** @type {Element} */ (e.target).closest('[data-sort]')) { page = 0; show(); } });
  document.addEventListener('keydown', (e) => {
    if (e.key === '/' && document.activeElement !== input && !e.ctrlKey && !e.metaKey) {
      e.preventDefault();
      input.focus();
    }
  });
  show();
}
document.body.dataset.ready = '1';
