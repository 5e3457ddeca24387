// A/B of this checkout against another (a git worktree of an earlier commit, built with
// `npm run build:wasm` there) in one process: GPT-2 small's shape (random F32 weights), one thread,
// every head's attention and the last row's logits, a call of each per round, interleaved. Reports
// medians and the median over rounds of this ÷ the other in the same round.
// Usage: node --[no-]experimental-wasm-relaxed-simd bench/ab.mjs <other checkout> [--rounds 15]
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureCheckpoints, F32_DIR, gpt2Ids, timeRounds } from './gpt2-common.mjs';
import { machine } from './machine.mjs';
import { medians, pairedRatio, quantile } from './stats.mjs';

const other = process.argv[2];
if (!other) throw new Error('usage: node bench/ab.mjs <other checkout> [--rounds 15]');
const at = process.argv.indexOf('--rounds');
const rounds = at > 0 ? Number(process.argv[at + 1]) : 15;

ensureCheckpoints();
const load = async (root) => {
  const api = await import(pathToFileURL(resolve(root, 'bindings/multihead.mjs')).href);
  await api.loadMultihead({ threads: 1 });
  return api.loadPretrained(resolve(F32_DIR));
};
const [mine, theirs] = [await load('.'), await load(other)];
const { relaxedSimd } = await (await import('../bindings/multihead.mjs')).runtimeInfo();
console.log(`${machine().cpu} (family ${machine().family}, model ${machine().model}); ${relaxedSimd ? 'relaxed' : 'plain'} SIMD; this checkout against ${other}`);
console.log('| tokens | this (ms) | other (ms) | this ÷ other (median of rounds) | quartiles |');
console.log('|---|---|---|---|---|');
for (const n of [8, 16, 64, 256]) {
  const ids = gpt2Ids(n);
  const times = await timeRounds({
    this: () => mine.run(ids, { logits: [n - 1] }),
    other: () => theirs.run(ids, { logits: [n - 1] }),
  }, n >= 256 ? Math.max(5, Math.round(rounds / 2)) : rounds);
  const ms = medians(times);
  const ratios = times.this.map((t, i) => t / times.other[i]);
  console.log(`| ${n} | ${ms.this.toFixed(1)} | ${ms.other.toFixed(1)} | ${(1 / pairedRatio(times, 'this', 'other')).toFixed(3)} | ` +
    `${quantile(ratios, 0.25).toFixed(3)}–${quantile(ratios, 0.75).toFixed(3)} |`);
}
mine.dispose();
theirs.dispose();
