// The annotate view: search the listing (Enter and Shift+Enter step through
// the matches), and jump to a branch target within the function with a
// highlight that shows where it landed. The hottest instruction is scrolled
// into view on load unless the URL names an instruction.

const table = document.getElementById("annotate");
const search = document.getElementById("annotate-search");
const counter = document.getElementById("annotate-matches");
const rows = table ? Array.from(table.querySelectorAll("tbody tr.insn")) : [];
let matches = [];
let current = -1;

// The row jumped to stays marked until the next jump.
function flash(row) {
  for (const r of table.querySelectorAll("tr.jumped")) r.classList.remove("jumped");
  row.classList.add("jumped");
}

function goto(row) {
  row.scrollIntoView({ block: "center" });
  flash(row);
}

function show(i) {
  if (current >= 0 && matches[current]) matches[current].classList.remove("current");
  current = i;
  if (matches[i]) {
    matches[i].classList.add("current");
    matches[i].scrollIntoView({ block: "center" });
  }
  counter.textContent = matches.length ? `${i + 1} of ${matches.length}` : (search.value ? "no match" : "");
}

function find() {
  const q = search.value.trim().toLowerCase();
  for (const r of matches) r.classList.remove("match", "current");
  matches = [];
  current = -1;
  if (q) {
    // A row matches on its own text or on the source line heading it.
    let src = "";
    for (const r of table.querySelectorAll("tbody tr")) {
      if (r.classList.contains("src")) {
        src = r.textContent.toLowerCase();
        continue;
      }
      if (r.textContent.toLowerCase().includes(q) || src.includes(q)) {
        r.classList.add("match");
        matches.push(r);
      }
    }
  }
  show(matches.length ? 0 : -1);
}

if (search) {
  search.addEventListener("input", find);
  search.addEventListener("keydown", (e) => {
    if (e.key !== "Enter" || !matches.length) return;
    e.preventDefault();
    const n = matches.length;
    show(((current + (e.shiftKey ? -1 : 1)) % n + n) % n);
  });
}

if (table) {
  table.addEventListener("click", (e) => {
    const a = e.target.closest("a.target, a.skid");
    if (!a) return;
    const row = document.getElementById(a.getAttribute("href").slice(1));
    if (!row) return;
    e.preventDefault();
    history.replaceState(null, "", "#" + row.id);
    goto(row);
  });
  const named = location.hash && document.getElementById(location.hash.slice(1));
  const hot = rows.find((r) => r.classList.contains("hot"));
  if (named) goto(named);
  else if (hot) hot.scrollIntoView({ block: "center" });
}
