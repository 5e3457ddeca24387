// ViT-B/16's shape at 224 pixels (197 tokens: CLS + 14 × 14 patches; 12 layers × 12 heads, d 768,
// MLP 3072, 1000 labels), random F32 weights (scripts/make-random-checkpoint.mjs --size vit-base):
// one run from pixel values with every attention (what the page's image view asks for) and one
// without, on 1 and 2 threads, in Node with the relaxed build. The products' FLOPs (patch
// embedding, Q/K/V/O, the MLP, QKᵀ and AV, the classifier's row) ÷ the run's time, against one
// core's measured multiply-add peak (bench/kernels.cpp --peak-only) × the threads. The time is the
// whole run (norms, softmax, GELU and copying the attentions out included), so the fraction is the
// products' share of the peak the run as a whole reaches, not the GEMM kernel's alone.
// Usage: node --experimental-wasm-relaxed-simd bench/vit.mjs [--rounds 7] [--out FILE]
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { loadMultihead, loadPretrained, setThreads } from '../bindings/multihead.mjs';
import { timeInterleaved } from './gpt2-common.mjs';
import { machine } from './machine.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const rounds = Number(option('--rounds', 7));
const outFile = option('--out', 'bench/vit-results.json');
const DIR = 'build/vit-base-random', KERNELS = 'build/bench/kernels_relaxed.cjs';
const SHAPE = { d: 768, layers: 12, heads: 12, ff: 3072, side: 224, patch: 16, labels: 1000 };

if (!existsSync(`${DIR}/model.safetensors`)) {
  execFileSync(process.execPath, ['scripts/make-random-checkpoint.mjs', DIR, '--size', 'vit-base'], { stdio: 'inherit' });
}
// One core's peak in this build, measured before and after the runs (the machine is shared).
const peakNow = () => (existsSync(KERNELS)
  ? JSON.parse(execFileSync(process.execPath, ['--no-experimental-fetch', '--experimental-wasm-relaxed-simd', KERNELS, '--peak-only'], { encoding: 'utf8' }).trim().split('\n')[0]).peakGflops
  : null);

const { d, layers, ff, side, patch, labels } = SHAPE;
const patches = (side / patch) ** 2, n = patches + 1;
const flops = 2 * patches * (3 * patch * patch) * d  // the patch embedding (a stride-16 convolution)
  + layers * (2 * n * d * (4 * d + 2 * ff) + 2 * 2 * n * n * d)  // Q, K, V, O and the MLP; QKᵀ and AV
  + 2 * d * labels;  // the classifier over the CLS row

const peakBefore = peakNow();
await loadMultihead({ threads: 'auto' });
const model = await loadPretrained(DIR);
// A picture's pixel values as the processor makes them (normalised to −1 … 1).
const pixelValues = Float32Array.from({ length: 3 * side * side }, (_, i) => Math.sin(i * 0.001) * 0.9);
const run = (attentions) => () => model.run(pixelValues, { height: side, width: side, attentions });
const rows = [];
for (const threads of [1, 2]) {
  await setThreads(threads);
  const ms = await timeInterleaved({ every: run(true), none: run(false) }, rounds);
  rows.push({ threads, msEveryAttention: ms.every, msNoAttention: ms.none });
}
const peakAfter = peakNow();
model.dispose();
const peak = peakBefore && peakAfter ? (peakBefore + peakAfter) / 2 : null;
for (const r of rows) {
  r.gflopsEveryAttention = flops / r.msEveryAttention / 1e6;
  r.gflopsNoAttention = flops / r.msNoAttention / 1e6;
  r.ofPeakEveryAttention = peak ? r.gflopsEveryAttention / (peak * r.threads) : null;
  r.ofPeakNoAttention = peak ? r.gflopsNoAttention / (peak * r.threads) : null;
}
const m = machine();
console.log(`ViT-B/16 at ${side} px (${n} tokens, ${layers} × ${SHAPE.heads} heads), ${(flops / 1e9).toFixed(2)} GFLOP of products a run; ${m.cpu}, ${m.cores} cores; ` +
  `one core's peak ${peak?.toFixed(1) ?? '?'} GFLOP/s (before ${peakBefore?.toFixed(1)}, after ${peakAfter?.toFixed(1)}); medians of ${rounds} rounds`);
console.log('| threads | every attention: ms | GFLOP/s | of peak × threads | no attentions: ms | GFLOP/s | of peak × threads |\n|---:|---:|---:|---:|---:|---:|---:|');
const pct = (x) => (x === null ? '—' : `${(100 * x).toFixed(0)} %`);
for (const r of rows) {
  console.log(`| ${r.threads} | ${r.msEveryAttention.toFixed(1)} | ${r.gflopsEveryAttention.toFixed(1)} | ${pct(r.ofPeakEveryAttention)} | ` +
    `${r.msNoAttention.toFixed(1)} | ${r.gflopsNoAttention.toFixed(1)} | ${pct(r.ofPeakNoAttention)} |`);
}
writeFileSync(outFile, `${JSON.stringify({ machine: m, shape: SHAPE, tokens: n, flops, rounds, peakGflops: { before: peakBefore, after: peakAfter }, rows }, null, 2)}\n`);
