// Q5_K kept in 5-bit blocks against what it was before (widened to float32) and at 2 bytes: a
// Q5_K_M file of GPT-2 small's shape as a `llama` GGUF (random weights; token_embd, the tied head,
// and a third of the layers' attn_v / ffn_down in Q6_K, as llama-quantize lays it out), and its
// Q4_K_M twin. In Node, the relaxed build, one thread: bytes in memory, prefill of 64 and 256
// tokens (the last row's logits), decoding's ms a token against the bound the read bandwidth
// measured right after it sets. The files are written once to build/gguf-bench/.
// Usage: node --experimental-wasm-relaxed-simd bench/gguf-q5.mjs [--rounds 3]
// Writes bench/gguf-q5-results.json (or --out FILE).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadPretrained, loadMultihead, setThreads } from '../bindings/multihead.mjs';
import { SHAPES, q5kmTypes, q4kmTypes, writeModelFile } from './gguf-common.mjs';
import { msPerToken, timeInterleaved } from './gpt2-common.mjs';
import { machine } from './machine.mjs';
import { median } from './stats.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const rounds = Number(option('--rounds', 3));
const outFile = option('--out', 'bench/gguf-q5-results.json');
const core = await loadMultihead({ threads: 'auto' });
await setThreads(1);
const shape = SHAPES['gpt2-small'];
const dir = 'build/gguf-bench';
mkdirSync(dir, { recursive: true });
const files = { q5_k_m: [`${dir}/gpt-2-small-q5_k_m.gguf`, q5kmTypes(shape.layers)], q4_k_m: [`${dir}/gpt-2-small-q4_k_m.gguf`, q4kmTypes(shape.layers)] };
for (const [p, t] of Object.values(files)) if (!existsSync(p)) writeModelFile(p, shape, t);
const models = {
  'q5_k_m blocks': await loadPretrained(files.q5_k_m[0]),
  'q5_k_m as f32 (before)': await loadPretrained(files.q5_k_m[0], { weightType: 'f32' }),
  'q5_k_m as bf16': await loadPretrained(files.q5_k_m[0], { weightType: 'bf16' }),
  'q4_k_m blocks': await loadPretrained(files.q4_k_m[0]),
};
const results = { machine: machine(), shape: 'gpt2-small', rounds, weights: {}, prefillMs: {}, decode: {} };
console.log(`GPT-2 small's shape, 1 thread, ${results.machine.cpu ?? ''}`);
for (const [k, m] of Object.entries(models)) {
  results.weights[k] = { type: m.config.weightType, MB: m.config.weightBytes / 1e6 };
  console.log(`${k}: ${m.config.weightType}, ${(m.config.weightBytes / 1e6).toFixed(1)} MB`);
}
const ids = (n) => Int32Array.from({ length: n }, (_, i) => (i * 7919 + 13) % shape.vocab);
for (const n of [64, 256]) {
  const fns = Object.fromEntries(Object.entries(models).map(([k, m]) => [k, () => m.run(ids(n), { attentions: false, logits: [n - 1] })]));
  const ms = await timeInterleaved(fns, rounds);
  results.prefillMs[n] = ms;
  console.log(`prefill ${n}:`, Object.entries(ms).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', '));
}
// Decoding, rounds interleaved: each model's ms a token (median gap of 16 greedy tokens) and its
// ratio to the bound, the weights' bytes at the read bandwidth measured right after it.
const steps = Object.fromEntries(Object.keys(models).map((k) => [k, { ms: [], ofBound: [] }]));
for (let r = 0; r < rounds; r += 1) {
  for (const [k, m] of Object.entries(models)) {
    const t = await msPerToken(m, 16), gbps = core.readBandwidth(256, 3);
    steps[k].ms.push(t);
    steps[k].ofBound.push(t / (m.config.weightBytes / gbps / 1e6));
  }
}
for (const [k, s] of Object.entries(steps)) {
  results.decode[k] = { ms: median(s.ms), ofBound: median(s.ofBound), rounds: s };
  console.log(`decoding ${k}: ${median(s.ms).toFixed(1)} ms a token, ${median(s.ofBound).toFixed(2)}× its bound (rounds ${s.ofBound.map((x) => x.toFixed(2)).join(', ')})`);
}
for (const m of Object.values(models)) m.dispose();
writeFileSync(outFile, `${JSON.stringify(results, null, 2)}\n`);
