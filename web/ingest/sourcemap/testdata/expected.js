// Writes expected.json: for every column of app.min.js, where
// @jridgewell/trace-mapping (terser's own source map reader) says it came
// from. Regenerate with:
//   npm install terser@5 && npx terser app.js --mangle toplevel --source-map "url='app.min.js.map'" -o app.min.js
//   npx terser app.js --mangle toplevel --source-map "url=inline" -o app.inline.min.js
//   node --cpu-prof --cpu-prof-name=app.min.cpuprofile app.min.js   (then its file:// URLs made file:///app/app.min.js)
//   NODE_PATH=node_modules node expected.js
const fs = require('fs');
const { TraceMap, originalPositionFor } = require('@jridgewell/trace-mapping');
const map = new TraceMap(fs.readFileSync(__dirname + '/app.min.js.map', 'utf8'));
const lines = fs.readFileSync(__dirname + '/app.min.js', 'utf8').split('\n');
const out = [];
lines.forEach((text, i) => {
  for (let c = 0; c <= text.length; c++) {
    const p = originalPositionFor(map, { line: i + 1, column: c });
    out.push([i + 1, c + 1, p.source, p.line, p.column === null ? null : p.column + 1, p.name]);
  }
});
fs.writeFileSync(__dirname + '/expected.json', JSON.stringify(out) + '\n');
