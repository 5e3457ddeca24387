// ViT-B/16's shape at 224 pixels (197 tokens: CLS + 14 × 14 patches; 12 layers × 12 heads, d 768,
// MLP 3072, 1000 labels), random F32 weights (scripts/make-random-checkpoint.mjs --size vit-base):
// one run from pixel values with every attention (what the page's image view asks for) and one
// without, on 1 and 2 threads, in Node with the relaxed build. The products' FLOPs (patch
// embedding, Q/K/V/O, the MLP, QKᵀ and AV, the classifier's row) ÷ the run's time, against one
// core's multiply-add peak (bench/kernels.cpp --peak-only) read right beside each round × the threads. The time is the
// whole run (norms, softmax, GELU and copying the attentions out included), so the fraction is the
// products' share of the peak the run as a whole reaches, not the GEMM kernel's alone.
// Usage: node --experimental-wasm-relaxed-simd bench/vit.mjs [--rounds 7] [--out FILE]
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { loadMultihead, loadPretrained, setThreads } from '../bindings/multihead.mjs';
import { median } from './stats.mjs';
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
// One core's peak in this build (null without build/bench: npm run bench builds it).
const peakNow = () => (existsSync(KERNELS)
  ? JSON.parse(execFileSync(process.execPath, ['--no-experimental-fetch', '--experimental-wasm-relaxed-simd', KERNELS, '--peak-only'], { encoding: 'utf8' }).trim().split('\n')[0]).peakGflops
  : null);

const { d, layers, ff, side, patch, labels } = SHAPE;
const patches = (side / patch) ** 2, n = patches + 1;
const flops = 2 * patches * (3 * patch * patch) * d  // the patch embedding (a stride-16 convolution)
  + layers * (2 * n * d * (4 * d + 2 * ff) + 2 * 2 * n * n * d)  // Q, K, V, O and the MLP; QKᵀ and AV
  + 2 * d * labels;  // the classifier over the CLS row

await loadMultihead({ threads: 'auto' });
const model = await loadPretrained(DIR);
// A picture's pixel values as the processor makes them (normalised to −1 … 1).
const pixelValues = Float32Array.from({ length: 3 * side * side }, (_, i) => Math.sin(i * 0.001) * 0.9);
const CASES = [[1, true], [1, false], [2, true], [2, false]];  // [threads, every attention]
const timeOne = async ([threads, attentions]) => {
  await setThreads(threads);
  const t0 = performance.now();
  model.run(pixelValues, { height: side, width: side, attentions });
  return performance.now() - t0;
};
for (const c of CASES) for (let i = 0; i < 2; i += 1) await timeOne(c);  // warm-up
// Each round times every case once, then reads the peak loop right beside them: on a shared
// machine the neighbours' load changes from minute to minute, and a ratio to a peak read minutes
// apart says more about them than about the run.
const times = CASES.map(() => []), ratios = CASES.map(() => []), peaks = [];
for (let r = 0; r < rounds; r += 1) {
  const ms = [];
  for (const c of CASES) ms.push(await timeOne(c));
  const peak = peakNow();
  peaks.push(peak);
  CASES.forEach(([threads], i) => {
    times[i].push(ms[i]);
    if (peak) ratios[i].push(flops / ms[i] / 1e6 / (peak * threads));
  });
}
model.dispose();
const rows = CASES.map(([threads, attentions], i) => ({
  threads, attentions, ms: median(times[i]), gflops: flops / median(times[i]) / 1e6, ofPeakBeside: ratios[i].length ? median(ratios[i]) : null,
  ofPeakBesideRange: ratios[i].length ? [Math.min(...ratios[i]), Math.max(...ratios[i])] : null,
}));
const m = machine();
const pct = (x) => (x === null ? '—' : `${(100 * x).toFixed(0)} %`);
console.log(`ViT-B/16 at ${side} px (${n} tokens, ${layers} × ${SHAPE.heads} heads), ${(flops / 1e9).toFixed(2)} GFLOP of products a run; ${m.cpu}, ${m.cores} cores; ` +
  `one core's peak loop beside the runs: median ${peaks[0] ? median(peaks).toFixed(1) : '?'} GFLOP/s (${peaks[0] ? `${Math.min(...peaks).toFixed(1)}–${Math.max(...peaks).toFixed(1)}` : 'not built'}); medians of ${rounds} rounds`);
console.log('| threads | attentions | ms | GFLOP/s | of the peak beside × threads (range) |\n|---:|---|---:|---:|---|');
for (const r of rows) {
  console.log(`| ${r.threads} | ${r.attentions ? 'every one' : 'none'} | ${r.ms.toFixed(1)} | ${r.gflops.toFixed(1)} | ${pct(r.ofPeakBeside)}` +
    `${r.ofPeakBesideRange ? ` (${pct(r.ofPeakBesideRange[0])} – ${pct(r.ofPeakBesideRange[1])})` : ''} |`);
}
writeFileSync(outFile, `${JSON.stringify({ machine: m, shape: SHAPE, tokens: n, flops, rounds, peakGflops: peaks, rows }, null, 2)}\n`);
