// table.js: server-rendered tables (the top page). Header buttons sort the
// rows by their data- attributes; selects marked data-autosubmit submit
// their form on change.

for (const table of /** @type {NodeListOf<HTMLTableElement>} */ (document.querySelectorAll('table.sortable'))) {
  const body = table.tBodies[0];
  let current = { key: 'flat', desc: true };
  table.tHead.addEventListener('click', (e) => {
    const b = /** @type {HTMLElement} */ (/** @type {Element} */ (e.target).closest('[data-sort]'));
    if (!b) return;
    const key = b.dataset.sort;
    const text = b.dataset.type === 'text';
    current = current.key === key ? { key, desc: !current.desc } : { key, desc: !text };
    const rows = Array.from(body.rows);
    rows.sort((x, y) => {
      const a = x.dataset[key] || '';
      const c = text ? a.localeCompare(y.dataset[key] || '') : parseFloat(a) - parseFloat(y.dataset[key]);
      return current.desc ? -c : c;
    });
    body.append(...rows);
    for (const th of table.tHead.querySelectorAll('th')) th.removeAttribute('aria-sort');
    b.closest('th').setAttribute('aria-sort', current.desc ? 'descending' : 'ascending');
  });
}

for (const sel of /** @type {NodeListOf<HTMLSelectElement>} */ (document.querySelectorAll('select[data-autosubmit]'))) {
  if (sel.form) sel.addEventListener('change', () => sel.form.requestSubmit());
}
