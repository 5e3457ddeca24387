// A/B of this checkout against another (a git worktree of an earlier commit, built with
// `npm run build:wasm` there) in one process, over GGUF files of GPT-2 small's shape (random
// weights, written once to build/gguf-bench/): a Q4_K_M file (Q6_K head and a third of the layers'
// attn_v / ffn_down, as llama-quantize lays it out), its Q5_K_M twin, a Q6_K file, and Q4_0 / Q8_0
// ones. One thread.
// First whether both give the same bits (every attention and every row's logits of 40 tokens), then
// prefill of 64 and 256 tokens (the last row's logits) and a decoding step (the median gap of 16
// greedy tokens), rounds interleaved; each ratio is the median over rounds of other ÷ this.
// One thread, or --threads N (both checkouts' threaded builds, each with its own pool of workers).
// Usage: node --[no-]experimental-wasm-relaxed-simd bench/ab-gguf.mjs <other checkout> [--rounds 5]
//   [--types q4_k_m,q5_k_m,q6_k,q4_0,q8_0] [--threads 1]
import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SHAPES, q4kmTypes, q5kmTypes, writeModelFile } from './gguf-common.mjs';
import { msPerToken, timeRounds } from './gpt2-common.mjs';
import { machine } from './machine.mjs';
import { median, medians } from './stats.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const other = args[0];
if (!other || other.startsWith('--')) throw new Error('usage: node bench/ab-gguf.mjs <other checkout> [--rounds 5] [--types q4_k_m,q6_k]');
const rounds = Number(option('--rounds', 5));
const threads = Number(option('--threads', 1));
const shape = SHAPES['gpt2-small'];
const LAYOUTS = { q4_k_m: q4kmTypes(shape.layers), q5_k_m: q5kmTypes(shape.layers), q6_k: () => 'q6_k', q4_0: () => 'q4_0', q8_0: () => 'q8_0' };
const types = option('--types', 'q4_k_m,q6_k').split(',');
for (const t of types) if (!LAYOUTS[t]) throw new Error(`--types: ${t} is not one of ${Object.keys(LAYOUTS).join(', ')}`);
mkdirSync('build/gguf-bench', { recursive: true });
const fileOf = (t) => `build/gguf-bench/gpt-2-small-${t}.gguf`;
for (const t of types) if (!existsSync(fileOf(t))) writeModelFile(fileOf(t), shape, LAYOUTS[t]);

const load = async (root) => {
  const api = await import(pathToFileURL(resolve(root, 'bindings/multihead.mjs')).href);
  await api.loadMultihead({ threads: threads > 1 ? 'auto' : 1 });
  if (threads > 1 && (await api.setThreads(threads)) !== threads) throw new Error(`--threads ${threads}: this machine has fewer`);
  const models = {};
  for (const t of types) models[t] = await api.loadPretrained(resolve(fileOf(t)));
  return models;
};
const mine = await load('.'), theirs = await load(other);
console.log(`${machine().cpu} (family ${machine().family}, model ${machine().model}), ${threads} thread(s); this checkout against ${other}`);

const ids = (n) => Int32Array.from({ length: n }, (_, i) => (i * 7919 + 13) % shape.vocab);
const arrays = (o, out = []) => {
  for (const v of Object.values(o)) {
    if (ArrayBuffer.isView(v)) out.push(v);
    else if (v && typeof v === 'object') arrays(v, out);
  }
  return out;
};
const bytes = (x) => Buffer.from(x.buffer, x.byteOffset, x.byteLength);
for (const t of types) {
  const a = arrays(mine[t].run(ids(40), { attentions: true })), b = arrays(theirs[t].run(ids(40), { attentions: true }));
  const same = a.length === b.length && a.every((x, i) => bytes(x).equals(bytes(b[i])));
  console.log(`${t}: ${(mine[t].config.weightBytes / 1e6).toFixed(1)} MB here, ${(theirs[t].config.weightBytes / 1e6).toFixed(1)} MB there; ` +
    `every attention and logit the same bits: ${same}`);
}
const ratio = (times, t) => median(times[`${t} this`].map((x, i) => times[`${t} other`][i] / x));
for (const n of [64, 256]) {
  const fns = {};
  for (const t of types) {
    fns[`${t} this`] = () => mine[t].run(ids(n), { logits: [n - 1] });
    fns[`${t} other`] = () => theirs[t].run(ids(n), { logits: [n - 1] });
  }
  const times = await timeRounds(fns, rounds), ms = medians(times);
  console.log(`prefill ${n}: ` + types.map((t) => `${t} ${ms[`${t} this`].toFixed(1)} ms here, ${ms[`${t} other`].toFixed(1)} there (${ratio(times, t).toFixed(2)}×)`).join('; '));
}
const steps = {};
for (let r = 0; r < rounds; r += 1)
  for (const t of types) for (const [w, m] of [['this', mine], ['other', theirs]]) (steps[`${t} ${w}`] ??= []).push(await msPerToken(m[t], 16));
console.log('decoding, ms a token: ' + types.map((t) => `${t} ${median(steps[`${t} this`]).toFixed(2)} here, ${median(steps[`${t} other`]).toFixed(2)} there (${ratio(steps, t).toFixed(2)}×)`).join('; '));
for (const m of [...Object.values(mine), ...Object.values(theirs)]) m.dispose();
