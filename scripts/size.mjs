// What a host page downloads for the first <multihead-attention> widget, raw and gzipped.
// Usage: node scripts/size.mjs   (after npm run build:wasm)
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const files = ['web/widget.js', 'web/session.mjs', 'web/tokens.mjs', 'web/archetypes.mjs', 'web/heatmap.mjs',
  'web/colormap.mjs', 'web/stats.mjs', 'web/walkthrough.mjs', 'web/state.mjs', 'bindings/multihead.mjs',
  'dist/multihead_core.mjs', 'dist/multihead_core.wasm'];
let raw = 0, gz = 0;
const rows = files.map((f) => {
  const bytes = readFileSync(f);
  const z = gzipSync(bytes, { level: 9 }).length;
  raw += bytes.length; gz += z;
  return `| ${f} | ${bytes.length} | ${z} |`;
});
console.log(['| file | bytes | gzipped |', '|---|---|---|', ...rows, `| **total** | **${raw}** | **${gz}** |`].join('\n'));
