// What a host page downloads for the first <multihead-attention> widget, raw and gzipped; and what
// a cross-origin isolated host downloads instead of the single-thread module (the threaded build).
// Usage: node scripts/size.mjs   (after npm run build:wasm)
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const files = ['web/widget/widget.js', 'web/attention/session.mjs', 'web/attention/tokens.mjs', 'web/attention/archetypes.mjs', 'web/common/heatmap.mjs',
  'web/common/colormap.mjs', 'web/common/stats.mjs', 'web/attention/walkthrough.mjs', 'web/attention/state.mjs', 'bindings/multihead.mjs',
  'dist/multihead_core.mjs', 'dist/multihead_core.wasm'];
let raw = 0, gz = 0;
const rows = files.map((f) => {
  const bytes = readFileSync(f);
  const z = gzipSync(bytes, { level: 9 }).length;
  raw += bytes.length; gz += z;
  return `| ${f} | ${bytes.length} | ${z} |`;
});
console.log(['| file | bytes | gzipped |', '|---|---|---|', ...rows, `| **total** | **${raw}** | **${gz}** |`].join('\n'));

// On an isolated host: these three instead of dist/multihead_core.{mjs,wasm}. Each Web Worker of
// the pool imports the same .mjs (cached) and receives the compiled module, not the bytes.
const threaded = ['dist/multihead_core_mt.mjs', 'dist/multihead_core_mt.wasm', 'dist/multihead_core_mt.worker.js'];
const single = ['dist/multihead_core.mjs', 'dist/multihead_core.wasm'];
const sizes = (list) => list.reduce(([r, z], f) => {
  const bytes = readFileSync(f);
  return [r + bytes.length, z + gzipSync(bytes, { level: 9 }).length];
}, [0, 0]);
const [tr, tz] = sizes(threaded), [sr, sz] = sizes(single);
console.log(`\nCross-origin isolated host (threaded build): ${threaded.join(', ')} = ${tr} bytes, ${tz} gzipped, ` +
  `instead of ${sr} (${sz}): total ${raw - sr + tr} bytes, ${gz - sz + tz} gzipped.`);
