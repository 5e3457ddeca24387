// GGUF weights kept in blocks against the same model's float32 weights: GPT-2 small's shape as a
// `llama` GGUF (d 768, 12 layers × 12 heads, FFN 3072, 50257 tokens, tied head; `--llama-1b`:
// Llama-3.2-1B's, d 2048, 16 layers, 32 / 8 heads × 64, FFN 8192, 128256 tokens, tied, against its
// F32 file loaded as bf16, which is what a 1B model's float weights take in this heap), random weights written
// as F32, and quantized to Q8_0 and Q4_0 as ggml's reference quantizers do; both shapes also as a
// Q4_K_M file of random blocks (llama-quantize's mix: the tied head and a third of the layers'
// attn_v / ffn_down Q6_K, the rest Q4_K; bench/gguf-common.mjs), GPT-2's also as Q4_K throughout. In
// Node, the relaxed build, one thread (--threads N for more): load time and bytes in memory; prefill
// of 64 and 256 tokens with the last row's logits (what llama.cpp computes) and with every attention;
// decoding's ms a token against the bound the measured read bandwidth sets on its bytes in memory,
// and on the file's (blocks kept here can take more bytes than the format packs). Prefill over blocks
// runs integer tiles (the rows quantized to 8 bits, as decoding's); "q8_0 widened" / "q4_0 widened"
// time the same runs with the blocks widened into float32 panels instead. Llama-3.2-1B's bf16 (2.5 GB)
// and Q8_0 (1.4 GB) copies do not fit one 4 GB heap together, so its models are timed in groups,
// bf16, Q8_0 and Q4_K_M each with Q4_0, each group's rounds interleaved; Q8_0 and Q4_K_M against bf16
// go through Q4_0, timed in each (and only the last row's logits: a bf16 prefill of 256 tokens takes ~15 s).
// Usage: node --experimental-wasm-relaxed-simd bench/gguf.mjs [--llama-1b] [--rounds 5] [--threads 1]
// The files are written once to build/gguf-bench/. Writes bench/gguf-results.json (or --out FILE).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadPretrained, loadMultihead, setThreads } from '../bindings/multihead.mjs';
import { T, quantizeQ4_0 as q4_0, quantizeQ8_0 as q8_0, writeGguf } from '../tests/js/gguf-writer.mjs';
import { msPerToken, timeInterleaved } from './gpt2-common.mjs';
import { SHAPES, fileTensorBytes, q4kmTypes, randomNormal as randomTensor, writeModelFile } from './gguf-common.mjs';
import { machine } from './machine.mjs';
import { median } from './stats.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const big = args.includes('--llama-1b');
const rounds = Number(option('--rounds', 5));
const threads = Number(option('--threads', 1));
const outFile = option('--out', `bench/gguf-results${big ? '-llama-1b' : ''}.json`);
const SHAPE = big
  ? { name: 'Llama-3.2-1B', d: 2048, layers: 16, heads: 32, kvHeads: 8, ff: 8192, vocab: 128256 }
  : { name: 'GPT-2 small', d: 768, layers: 12, heads: 12, kvHeads: 12, ff: 3072, vocab: 50257 };
// The float baseline first; its file is F32 for both (bf16: loaded with weightType 'bf16').
const TYPES = big ? ['bf16', 'q8_0', 'q4_0', 'q4_k_m'] : ['f32', 'q8_0', 'q4_0', 'q4_k', 'q4_k_m'];
const GROUPS = big ? [['bf16', 'q4_0'], ['q8_0', 'q4_0'], ['q4_k_m', 'q4_0']] : [TYPES];
const fileType = (type) => (type === 'bf16' ? 'f32' : type);
// Each matrix's type in a file: one type throughout, or a Q4_K_M file's mix (llama-quantize's: the
// tied head and a third of the layers' attn_v / ffn_down in Q6_K, the rest Q4_K).
const COMMON_SHAPE = SHAPES[big ? 'llama-3.2-1b' : 'gpt2-small'];
const typesOf = (type) => (type === 'q4_k_m' ? q4kmTypes(COMMON_SHAPE.layers) : () => fileType(type));

// ---- the model files ----

function writeModel(path, type) {
  const { d, layers, heads, kvHeads, ff, vocab } = SHAPE, hd = d / heads;
  const tensors = [];
  let seed = 1;
  const matrix = (name, rows, cols) => {
    const data = randomTensor(rows * cols, seed++, 0.02);
    if (type === 'f32') tensors.push({ name, shape: [rows, cols], data });
    else tensors.push({ name, shape: [rows, cols], type: type === 'q8_0' ? 8 : 2, bytes: (type === 'q8_0' ? q8_0 : q4_0)(data) });
  };
  const ones = (name, n) => tensors.push({ name, shape: [n], data: new Float32Array(n).fill(1) });
  matrix('token_embd.weight', vocab, d);
  for (let l = 0; l < layers; l += 1) {
    ones(`blk.${l}.attn_norm.weight`, d);
    matrix(`blk.${l}.attn_q.weight`, d, d);
    matrix(`blk.${l}.attn_k.weight`, kvHeads * hd, d);
    matrix(`blk.${l}.attn_v.weight`, kvHeads * hd, d);
    matrix(`blk.${l}.attn_output.weight`, d, d);
    ones(`blk.${l}.ffn_norm.weight`, d);
    matrix(`blk.${l}.ffn_gate.weight`, ff, d);
    matrix(`blk.${l}.ffn_up.weight`, ff, d);
    matrix(`blk.${l}.ffn_down.weight`, d, ff);
  }
  ones('output_norm.weight', d);
  const k = (key) => `llama.${key}`;
  writeFileSync(path, writeGguf([
    ['general.architecture', T.STRING, 'llama'], [k('block_count'), T.U32, layers], [k('context_length'), T.U32, 2048],
    [k('embedding_length'), T.U32, d], [k('feed_forward_length'), T.U32, ff], [k('attention.head_count'), T.U32, heads],
    [k('attention.head_count_kv'), T.U32, kvHeads], [k('attention.layer_norm_rms_epsilon'), T.F32, 1e-5],
    [k('rope.freq_base'), T.F32, 10000], [k('rope.dimension_count'), T.U32, hd],
  ], tensors));
}

const dir = 'build/gguf-bench';
mkdirSync(dir, { recursive: true });
const path = (type) => `${dir}/${SHAPE.name.replace(/\W+/g, '-').toLowerCase()}-${fileType(type)}.gguf`;
for (const type of TYPES) {
  if (existsSync(path(type))) continue;
  console.log(`writing ${path(type)}`);
  // Llama-3.2-1B's F32 file (4.9 GB) is written a tensor at a time.
  if (big || type.startsWith('q4_k')) writeModelFile(path(type), COMMON_SHAPE, typesOf(type));
  else writeModel(path(type), type);
}

// ---- timing ----
const core = await loadMultihead({ threads: 'auto' });
await setThreads(threads);
const ids = (n) => Int32Array.from({ length: n }, (_, i) => (i * 7919 + 13) % SHAPE.vocab);
const loads = {}, weightBytes = {}, fileBytes = {}, weightTypes = {}, decodeOfBound = {}, decodeOfFileBound = {};
const groups = [];
let gbps = 0;
for (const group of GROUPS) {
  const models = {};
  for (const type of group) {
    const t0 = performance.now();
    models[type] = await loadPretrained(path(type), type === 'bf16' ? { weightType: 'bf16' } : {});
    loads[type] ??= performance.now() - t0;
    weightBytes[type] = models[type].config.weightBytes;
    // The quantized bytes as the file holds them (float weights: as in memory).
    fileBytes[type] = type === 'f32' || type === 'bf16' ? weightBytes[type] : fileTensorBytes(COMMON_SHAPE, typesOf(type));
    weightTypes[type] = models[type].config.weightType;
  }
  const rows = [];
  for (const n of [64, 256]) {
    for (const attentions of big ? [false] : [false, true]) {
      const fns = {};
      for (const type of group) fns[type] = () => models[type].run(ids(n), { attentions, logits: [n - 1] });
      // Prefill over blocks the other way too, their blocks widened into float32 panels (core/gemm.h).
      if (!attentions && !big) {
        for (const type of group.filter((t) => t !== TYPES[0])) {
          fns[`${type} widened`] = () => {
            core.setIntegerBlockTiles(false);
            try { return models[type].run(ids(n), { attentions, logits: [n - 1] }); } finally { core.setIntegerBlockTiles(true); }
          };
        }
      }
      const ms = await timeInterleaved(fns, rounds);
      rows.push({ case: `prefill ${n}, ${attentions ? 'every attention' : 'last logits'}`, ms });
    }
  }
  // Decoding against its bound, the weights' bytes at the read bandwidth: the bandwidth measured
  // right after each step's timing (this machine's speed drifts by a third within minutes), the
  // ratio of each pair, the median of 3.
  const decode = {};
  for (const type of group) {
    const steps = [], ratios = [], fileRatios = [];
    for (let r = 0; r < 3; r += 1) {
      steps.push(await msPerToken(models[type], 24));
      const gbpsNow = core.readBandwidth(256, 3);
      gbps = Math.max(gbps, gbpsNow);
      ratios.push(steps.at(-1) / (weightBytes[type] / gbpsNow / 1e6));
      fileRatios.push(steps.at(-1) / (fileBytes[type] / gbpsNow / 1e6));
    }
    decode[type] = median(steps);
    // Q4_0, timed in every Llama-3.2-1B group, keeps its first group's ratios, as its ms (decodeMs below).
    decodeOfBound[type] ??= median(ratios);
    decodeOfFileBound[type] ??= median(fileRatios);
  }
  rows.push({ case: 'decoding, ms a token', ms: decode });
  for (const m of Object.values(models)) m.dispose();
  groups.push({ types: group, rows });
}
const rows = groups.length === 1 ? groups[0].rows : null;
// Each type's time against the float baseline's: in the same rounds, or (Llama-3.2-1B's Q8_0) through
// Q4_0, timed in both groups: (bf16 ÷ q4_0) · (q4_0 ÷ q8_0).
const base = TYPES[0];
const ratioOf = (caseName, type) => {
  const ms = (g, t) => groups[g].rows.find((r) => r.case === caseName).ms[t];
  const g = groups.findIndex((gr) => gr.types.includes(base) && gr.types.includes(type));
  if (g >= 0) return ms(g, base) / ms(g, type);
  const other = groups.findIndex((gr) => gr.types.includes(type));
  return (ms(0, base) / ms(0, 'q4_0')) * (ms(other, 'q4_0') / ms(other, type));
};
console.log(`${SHAPE.name}'s shape, ${threads} thread(s), ${machine().cpu ?? ''}`);
console.log(`weights in memory: ${TYPES.map((t) => `${t} ${(weightBytes[t] / 1e6).toFixed(0)} MB (${weightTypes[t]})`).join(', ')}`);
console.log(`load: ${TYPES.map((t) => `${t} ${loads[t].toFixed(0)} ms`).join(', ')}`);
const ratios = {};
for (const [g, group] of groups.entries()) {
  for (const r of group.rows) {
    const quantized = group.types.filter((t) => t !== base);
    for (const t of quantized) (ratios[r.case] ??= {})[t] = ratioOf(r.case, t);
    console.log(`${groups.length > 1 ? `group ${g + 1}: ` : ''}${r.case.padEnd(34)} ${Object.keys(r.ms).map((t) => `${t} ${r.ms[t].toFixed(1)}`).join('  ')}  (${base} ÷ ${quantized.map((t) => `${t} ${ratioOf(r.case, t).toFixed(2)}×`).join(', ')})`);
  }
}
// A decoding step reads every weight once: its bound is the weights' bytes at the read bandwidth.
const decodeMs = Object.fromEntries(TYPES.map((t) => [t, groups.find((g) => g.types.includes(t)).rows.at(-1).ms[t]]));
const boundMs = Object.fromEntries(TYPES.map((t) => [t, weightBytes[t] / gbps / 1e6]));
for (const t of TYPES) {
  console.log(`decoding ${t}: ${decodeMs[t].toFixed(1)} ms, ${decodeOfBound[t].toFixed(2)}× its bound (median of 3 pairs; ${boundMs[t].toFixed(1)} ms at the best read bandwidth, ${(weightBytes[t] / 1e6).toFixed(0)} MB at ${gbps.toFixed(1)} GB/s)` +
    (fileBytes[t] === weightBytes[t] ? '' : `; ${decodeOfFileBound[t].toFixed(2)}× the bound of the file's ${(fileBytes[t] / 1e6).toFixed(0)} MB`));
}
writeFileSync(outFile, `${JSON.stringify({ machine: machine(), shape: SHAPE, threads, rounds, weightBytes, weightTypes, loadMs: loads,
  fileBytes, readGBps: gbps, boundMs, decodeOfBound, decodeOfFileBound, ...(rows ? { rows } : { groups }), ratios }, null, 2)}\n`);
