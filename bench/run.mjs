// The benchmark: multihead (wasm SIMD, through its JS API, in Node) against the native build of the
// same core (ceiling), plain JavaScript (floor) and onnxruntime-web's WASM backend (peer), all
// single-threaded, in one run. Prints a table and writes bench/results.json.
// bench/run.sh runs it twice: the plain SIMD build (node --no-experimental-wasm-relaxed-simd: else
// the JS API turns Node 20's flag on itself), then with --relaxed under the flag, the fused
// multiply-add build that Chromium, Firefox and Node load: ours and ORT only (ORT has no relaxed
// build: its numbers do not change), written to bench/results-relaxed.json.
// Usage: npm run bench   [-- --seconds 1 --quick]
import { execFileSync } from 'node:child_process';
import { writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import { loadMultihead, createMultiHeadAttention, runtimeInfo } from '../bindings/multihead.mjs';
import { plainAttention } from './plain.mjs';
import { standardOpsModel, fusedModel } from './onnx.mjs';
import { randomWeights } from './weights.mjs';
import { medians, pairedRatio } from './stats.mjs';

// One thread (the peer's setting too): threads are bench:threads' and bench:node-threads' to measure.
await loadMultihead({ threads: 1 });

const args = process.argv.slice(2);
const seconds = Number(args[args.indexOf('--seconds') + 1]) || 1;
const quick = args.includes('--quick');
const relaxed = args.includes('--relaxed');
const build = await runtimeInfo();
if (build.relaxedSimd !== relaxed) {
  throw new Error(relaxed ? 'the plain build loaded: --relaxed needs an engine with relaxed SIMD, and no --no-experimental-wasm-relaxed-simd (bench/run.sh passes --experimental-wasm-relaxed-simd)' : 'the relaxed build loaded: run node --no-experimental-wasm-relaxed-simd bench/run.mjs, or pass --relaxed');
}
const SHAPES = [[6, 64, 4], [16, 256, 8], [64, 512, 8], [128, 768, 12], [512, 512, 8], [1024, 512, 8], [2048, 256, 8], [4096, 256, 8]]
  .filter(([n]) => !quick || n <= 512);
const PLAIN_MAX_N = 1024;  // the JS floor takes tens of seconds per call beyond this
const MIN_ROUNDS = 15;     // timeAll

const flops = (n, d) => 8 * n * d * d + 4 * n * n * d;
const gflops = (n, d, ms) => (ms ? flops(n, d) / (ms * 1e6) : null);

/**
 * Median ms of each function in `fns` ({ name: fn }), measured interleaved (one call of each per
 * round) so that the ratios between them are not skewed by the machine's load changing over time;
 * and in `perRound`, every round's times, for ratios taken within a round (pairedRatio). `cells`:
 * how many of the table's cells take turns in these rounds, each owed the time of one.
 */
async function timeAll(fns, cells = 1) {
  const names = Object.keys(fns);
  // Warm-up: long enough for V8 to tier small calls up to optimised code (with two calls only, the
  // first shape measured was the baseline compiler's: n = 6 read 47 µs instead of 11).
  for (const name of names) {
    const start = performance.now();
    for (let calls = 0; calls < 2000 && (calls < 20 || performance.now() - start < 200); calls++) await fns[name]();
  }
  const times = Object.fromEntries(names.map((n) => [n, []]));
  let total = 0, rounds = 0;
  // At least MIN_ROUNDS rounds, however long the calls (up to the cap of 6 s a cell below): on a shared
  // 2-core machine a burst of load slows one call of a round and not its neighbours, and the
  // median of the 7 paired ratios a 512-token cell used to get moved by up to a fifth between
  // runs (Zen 3, 2026-11).
  while ((total < cells * seconds * 1000 || rounds < MIN_ROUNDS) && rounds < 2000) {
    for (const name of names) {
      const t0 = performance.now();
      await fns[name]();
      const dt = performance.now() - t0;
      times[name].push(dt);
      total += dt;
    }
    rounds++;
    if (total > cells * seconds * 6000 && rounds >= 3) break;
  }
  return { ...medians(times), perRound: times };
}

const time = async (fn) => (await timeAll({ fn })).fn;

function native(variant) {
  if (relaxed) return null;  // the same binaries as the plain run's
  const bin = `build/bench/bench_native_${variant}`;
  if (!existsSync(bin)) return null;
  // Keep freed GEMM packing buffers in the heap instead of returning them to the OS on every call.
  const env = { ...process.env, GLIBC_TUNABLES: 'glibc.malloc.trim_threshold=33554432:glibc.malloc.mmap_threshold=33554432' };
  const out = execFileSync(bin, [String(seconds)], { env, encoding: 'utf8', maxBuffer: 1 << 20 });
  return out.trim().split('\n').map((line) => JSON.parse(line));
}

async function loadOrt() {
  try {
    const ort = await import('onnxruntime-web');
    ort.env.wasm.numThreads = 1;
    ort.env.wasm.simd = true;
    ort.env.logLevel = 'error';
    return ort;
  } catch {
    console.warn('onnxruntime-web is not installed (npm --prefix bench ci): the peer columns stay empty');
    return null;
  }
}

// One core's 128-bit SIMD multiply-add peak (bench/peak.h), in this wasm build (bench/kernels.cpp,
// fused in the relaxed one) and natively: the ceiling for any kernel here, GEMM included.
function peak(command, args) {
  try {
    return JSON.parse(execFileSync(command, args, { encoding: 'utf8' })).peakGflops;
  } catch {
    return null;
  }
}
const peakGflops = {
  wasm: peak('node', ['--no-experimental-fetch', ...(relaxed ? ['--experimental-wasm-relaxed-simd'] : []),
    `build/bench/kernels_${relaxed ? 'relaxed' : 'simd'}.cjs`, '--peak-only']),
  nativeSse2: relaxed ? null : peak('build/bench/bench_peak_sse2', []),
};

const results = [];
const ort = await loadOrt();
const nativeRows = { sse2: native('sse2'), march: native('march') };
const findNative = (variant, n, d, h, causal, weights) =>
  nativeRows[variant]?.find((r) => r.n === n && r.d === d && r.h === h && r.causal === causal && r.weights === weights)?.ms ?? null;

// The four cells of a shape (mask × attention weights) take turns within each round, one call of
// each function of each cell per round, instead of one cell after another: on these shared
// machines a slow stretch lasts seconds (ours and ORT's calls both 1.3–1.6× slower), long enough
// to cover most of one cell's rounds, and whichever cell it fell on then read low (Zen 3,
// 2026-11: a different cell under 1.5× from run to run, in the plain build). Taking turns spreads
// such a stretch over the four. A shape whose attention output (h·n² floats) is over this size
// (n ≥ 2048 here) still times its cells one at a time: together, its two cells with weights would
// hold that output twice in ORT's sessions and twice in ours, beside ORT's intermediates.
const TOGETHER_MAX_OUTPUT_BYTES = 64 * 2 ** 20;

for (const [n, d, h] of SHAPES) {
  const weights = randomWeights(d, n + d);
  const x = Float32Array.from({ length: n * d }, (_, i) => Math.sin(i * 0.37));
  const mha = await createMultiHeadAttention({ dModel: d, heads: h });
  mha.setWeights(weights);
  const feeds = ort ? { x: new ort.Tensor('float32', x, [n, d]) } : null;
  const cells = [];
  for (const withWeights of [false, true])
    for (const causal of [false, true]) cells.push({ causal, withWeights, row: { n, d, h, causal, weights: withWeights } });
  const groups = 4 * h * n * n <= TOGETHER_MAX_OUTPUT_BYTES ? [cells] : cells.map((cell) => [cell]);
  for (const group of groups) {
    const fns = {}, sessions = [];
    for (const [index, { causal, withWeights, row }] of group.entries()) {
      // multihead (wasm): results copied into reused buffers, as a live page would.
      const into = { output: new Float32Array(n * d), attentions: withWeights ? new Float32Array(h * n * n) : undefined };
      try {
        mha.forward(x, { causal, returnAttention: withWeights, into });
        fns[`${index}:wasm`] = () => mha.forward(x, { causal, returnAttention: withWeights, into });
      } catch (e) {
        row.wasm = null;
        row.note = e.message.replace(/^multihead: /, '');
      }
      if (!ort) continue;
      try {
        const standard = await ort.InferenceSession.create(standardOpsModel({ n, d, h, weights, causal, withWeights }), { graphOptimizationLevel: 'all' });
        sessions.push(standard);
        fns[`${index}:ortStandard`] = () => standard.run(feeds);
      } catch (e) { row.ortStandardError = String(e.message ?? e).slice(0, 120); }
      if (!withWeights) {
        try {
          const fused = await ort.InferenceSession.create(fusedModel({ n, d, h, weights, causal }), { graphOptimizationLevel: 'all' });
          sessions.push(fused);
          fns[`${index}:ortFused`] = () => fused.run(feeds);
        } catch (e) { row.ortFusedError = String(e.message ?? e).slice(0, 120); }
      }
    }
    const { perRound, ...ms } = await timeAll(fns, group.length);
    for (const s of sessions) await s.release();
    for (const [index, { row }] of group.entries()) {
      const mine = (name) => `${index}:${name}`;
      for (const name of ['wasm', 'ortStandard', 'ortFused']) if (mine(name) in ms) row[name] = ms[mine(name)];
      row.vsOrtStandard = pairedRatio(perRound, mine('wasm'), mine('ortStandard'));
      row.vsOrtFused = pairedRatio(perRound, mine('wasm'), mine('ortFused'));
      // How low the ratio goes in the slow stretches: its lower quartile over rounds.
      row.vsOrtStandardLow = pairedRatio(perRound, mine('wasm'), mine('ortStandard'), 0.25);
    }
  }
  for (const { causal, withWeights, row } of cells) {
    row.nativeSse2 = findNative('sse2', n, d, h, +causal, +withWeights);
    row.nativeMarch = findNative('march', n, d, h, +causal, +withWeights);
    if (n <= PLAIN_MAX_N && !relaxed) {
      const attention = withWeights ? new Float32Array(h * n * n) : null;
      row.plainJs = await time(() => plainAttention(x, n, d, h, weights, { causal, attention }));
    }
    results.push(row);
    const f = (ms) => (ms == null ? '—' : `${ms.toFixed(3)} ms (${gflops(n, d, ms).toFixed(1)})`);
    console.log(`n=${n} d=${d} h=${h} ${causal ? 'causal' : 'full  '} ${withWeights ? '+weights' : '        '} ` +
      `wasm ${f(row.wasm)} | native sse2 ${f(row.nativeSse2)} | native march ${f(row.nativeMarch)} | plain JS ${f(row.plainJs)} | ` +
      `ORT ops ${f(row.ortStandard)}${withWeights ? '' : ` | ORT fused ${f(row.ortFused)}`}${row.note ? ` | ${row.note}` : ''}`);
  }
  mha.dispose();
}

// How time grows with n (d 256, 8 heads, no weights): the model is a·n·d² + b·n²·d.
const scaling = [];
if (!quick && !relaxed) {
  const d = 256, h = 8;
  const mha = await createMultiHeadAttention({ dModel: d, heads: h });
  for (const n of [64, 128, 256, 512, 1024, 2048, 4096]) {
    const x = Float32Array.from({ length: n * d }, (_, i) => Math.cos(i * 0.11));
    const into = { output: new Float32Array(n * d) };
    const ms = await time(() => mha.forward(x, { into }));
    scaling.push({ n, ms, gflops: gflops(n, d, ms), nsPerModelFlop: (ms * 1e6) / flops(n, d) });
  }
  mha.dispose();
}

// Memory: a 16384-token forward pass in a fresh process, so the heap holds only that call.
const memory = quick || relaxed ? null : JSON.parse(execFileSync('node', [new URL('./memory.mjs', import.meta.url).pathname], { encoding: 'utf8' }));

const machine = {
  cpu: os.cpus()[0]?.model, cores: os.cpus().length, memoryGiB: Math.round(os.totalmem() / 2 ** 30),
  node: process.version, v8: process.versions.v8, platform: `${os.platform()} ${os.release()}`,
  onnxruntimeWeb: ort ? (await import('onnxruntime-web/package.json', { with: { type: 'json' } }).catch(() => ({ default: {} }))).default.version ?? 'installed' : null,
  date: new Date().toISOString(), secondsPerCase: seconds, peakGflops,
};
const buildInfo = { relaxedSimd: build.relaxedSimd, gemmKernel: build.gemmKernel };
writeFileSync(new URL(`./results${relaxed ? '-relaxed' : ''}.json`, import.meta.url), JSON.stringify({ machine, build: buildInfo, results, scaling, memory }, null, 1));

// The summary table: GFLOP/s and the ratios the bar is stated in.
const ratio = (x) => (x ? x.toFixed(2) : '—');
console.log(`\nOurs: the ${build.relaxedSimd ? 'relaxed SIMD (fused multiply-add)' : 'plain SIMD'} build.`);
console.log('\n| n | d | h | mask | weights | ours ms | GFLOP/s | of peak | vs ORT ops | vs ORT ops, lower quartile | vs ORT fused | % of native SSE2 | native -march ms | plain JS ms |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of results) {
  console.log(`| ${r.n} | ${r.d} | ${r.h} | ${r.causal ? 'causal' : 'none'} | ${r.weights ? 'yes' : 'no'} | ${r.wasm?.toFixed(3) ?? r.note ?? '—'} | ` +
    `${r.wasm ? gflops(r.n, r.d, r.wasm).toFixed(1) : '—'} | ${r.wasm && peakGflops.wasm ? `${Math.round((100 * gflops(r.n, r.d, r.wasm)) / peakGflops.wasm)}%` : '—'} | ${ratio(r.vsOrtStandard)}× | ${ratio(r.vsOrtStandardLow)}× | ${r.weights ? '' : `${ratio(r.vsOrtFused)}×`} | ` +
    `${r.wasm && r.nativeSse2 ? `${Math.round((100 * r.nativeSse2) / r.wasm)}%` : '—'} | ${r.nativeMarch?.toFixed(3) ?? '—'} | ${r.plainJs?.toFixed(2) ?? '—'} |`);
}
if (scaling.length) {
  console.log('\n| n (d 256, 8 heads) | ms | GFLOP/s | ns per model flop |');
  console.log('|---|---|---|---|');
  for (const s of scaling) console.log(`| ${s.n} | ${s.ms.toFixed(3)} | ${s.gflops.toFixed(1)} | ${s.nsPerModelFlop.toFixed(4)} |`);
}
if (memory) console.log(`\nn = ${memory.n}, d_model ${memory.d}, causal, no weights: ${memory.ms.toFixed(0)} ms, wasm heap ${memory.heapMiB.toFixed(0)} MiB after the call (${memory.heapMiBBefore.toFixed(0)} MiB before).`);
if (peakGflops.wasm) {
  console.log(`\nOne core's 128-bit SIMD multiply-add peak: ${peakGflops.wasm} GFLOP/s in this wasm build (${build.gemmKernel}), ${peakGflops.nativeSse2 ?? '—'} native SSE2 ` +
    '(bench/peak.h). "GFLOP/s" above over this peak is how close a shape gets to the machine.');
}
console.log(`\n"vs ORT" = ORT time / our time (above 1: we are faster), the median over rounds of the two calls of a round (lower quartile: a quarter of the rounds read less). The four cells of a shape take turns in each round. Machine: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}. Raw numbers: bench/results.json`);
