// What named activations cost (docs/hooks.md): GPT-2 small's shape (random F32 weights), one
// thread, every head's attention and the last row's logits, as the pages ask, with and without
// hooks, interleaved in one process (a call of each per round), medians and paired ratios.
// Usage: npm run bench:hooks [-- --rounds 15] [--tokens 256]
import { writeFileSync } from 'node:fs';
import { loadMultihead, loadPretrained } from '../bindings/multihead.mjs';
import { ensureCheckpoints, F32_DIR, gpt2Ids, timeRounds } from './gpt2-common.mjs';
import { machine } from './machine.mjs';
import { medians, pairedRatio } from './stats.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const rounds = arg('--rounds', 15);
const tokens = arg('--tokens', 256);

ensureCheckpoints();
await loadMultihead({ threads: 1 });
const model = await loadPretrained(F32_DIR);
const ids = gpt2Ids(tokens);
const base = { logits: [tokens - 1] };
const noop = () => {};
const cases = {
  'no hooks': () => model.run(ids, base),
  'capture every hook_z': () => model.run(ids, { ...base, capture: ['blocks.*.attn.hook_z'] }),
  'capture every hook_resid_post': () => model.run(ids, { ...base, capture: ['blocks.*.hook_resid_post'] }),
  'intervene on every hook_z (no change)': () => model.run(ids, { ...base, intervene: { 'blocks.*.attn.hook_z': noop } }),
  'capture every hook_pattern': () => model.run(ids, { ...base, capture: ['blocks.*.attn.hook_pattern'] }),
};
const times = await timeRounds(cases, rounds);
const ms = medians(times);
const result = { machine: machine(), tokens, rounds, ms, vsNoHooks: {} };
console.log(`GPT-2 small shape, ${tokens} tokens, one thread, every attention, the last row's logits; medians of ${rounds} interleaved rounds`);
for (const name of Object.keys(cases)) {
  const ratio = name === 'no hooks' ? 1 : 1 / pairedRatio(times, name, 'no hooks');
  result.vsNoHooks[name] = ratio;
  console.log(`${name.padEnd(40)} ${ms[name].toFixed(1).padStart(8)} ms   ${ratio.toFixed(3)}× the time of no hooks`);
}
writeFileSync('bench/hooks-results.json', `${JSON.stringify(result, null, 2)}\n`);
model.dispose();
