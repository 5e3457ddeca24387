// The real-model benchmark: GPT-2 small (random weights in the hub's layout, F32 and a BF16 copy)
// through multihead's JS API in Node, against onnxruntime-web 1.30 (wasm, SIMD, 1 thread) running
// the graphs torch exports for GPT-2 small (bench/peers/gpt2-small: gpt2s.onnx without attentions,
// gpt2s-attn.onnx with them). Single thread, in one process, interleaved (one call of each per
// round), medians; each ratio is the median over rounds of the ratio within a round. Also: decoding
// with the key/value cache against the bandwidth bound, and the kernel table (bench/kernels.cpp:
// one core's peak, GEMM as a fraction of it, read bandwidth), run in this same invocation.
// bench/run.sh runs this twice: plain SIMD (node --no-experimental-wasm-relaxed-simd), and relaxed
// SIMD (--experimental-wasm-relaxed-simd), which is the build Node and a browser with relaxed SIMD load.
// Usage: node --[no-]experimental-wasm-relaxed-simd bench/gpt2.mjs [--quick] [--relaxed]
//   (writes bench/gpt2-results[-relaxed].json)
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { loadMultihead, loadPretrained, runtimeInfo } from '../bindings/multihead.mjs';
import { BF16_DIR, ensureCheckpoints, F32_DIR, gpt2Ids, msPerToken, peerSession, timeRounds } from './gpt2-common.mjs';
import { median, medians, pairedRatio } from './stats.mjs';
import { machine } from './machine.mjs';

// One thread (the peer's setting too): threads are bench:threads' and bench:node-threads' to measure.
await loadMultihead({ threads: 1 });

const quick = process.argv.includes('--quick');
const relaxed = process.argv.includes('--relaxed');
const BUILD_HELP = 'run node --no-experimental-wasm-relaxed-simd bench/gpt2.mjs, or node --experimental-wasm-relaxed-simd bench/gpt2.mjs --relaxed (bench/run.sh does both)';
// The issue's bars are at 16, 64 and 256 tokens; 8 is a short sentence as typed on the page,
// where each weight is used by too few rows for the lookahead touches (src/core/gemm.cpp).
const LENGTHS = [8, 16, 64, 256];
// Node's flags for the wasm scripts of bench/ this build runs (kernels, tile loop): Emscripten's
// fetch() fails on file: URLs, and the relaxed build needs relaxed SIMD.
const WASM_SCRIPT_FLAGS = ['--no-experimental-fetch', ...(relaxed ? ['--experimental-wasm-relaxed-simd'] : [])];

ensureCheckpoints();

// The kernel table, from the wasm build of bench/kernels.cpp that matches this process's build.
const KERNELS_FILE = `build/bench/kernels_${relaxed ? 'relaxed' : 'simd'}.cjs`;
const runKernels = (flag) =>
  execFileSync(process.execPath, [...WASM_SCRIPT_FLAGS, KERNELS_FILE, ...(flag ? [flag] : [])], { encoding: 'utf8' })
    .trim().split('\n').map((l) => JSON.parse(l));
function kernels() {
  if (!existsSync(KERNELS_FILE)) return null;
  const lines = runKernels(quick ? '--quick' : null);
  return { peak: lines.find((l) => l.peakGflops), gemm: lines.filter((l) => l.gemm), fromMemory: lines.filter((l) => l.fromMemory), touchTuning: lines.find((l) => l.touchTuning)?.touchTuning, readGBs: lines.find((l) => l.readGBs)?.readGBs };
}
// Read bandwidth now (the kernel table's bandwidth line alone), in GB/s; null without the build.
const readBandwidthNow = () => (existsSync(KERNELS_FILE) ? runKernels('--bandwidth-only').find((l) => l.readGBs)?.readGBs ?? null : null);

// The kernel's inner loop alone on L1 data (bench/tile-loop.cpp, this build's "as shipped" row) and
// the same loop written by hand in x86 assembly (bench/tile-loop-x86.cpp, native), each as a
// fraction of its own peak loop, run alternately 3 times: the ceiling the GEMM rows are under in
// this run, and how much of the gap to the peak is the CPU's rather than V8's.
function tileLoops() {
  const wasmFile = `build/bench/tile-loop_${relaxed ? 'relaxed' : 'simd'}.cjs`, handFile = 'build/bench/bench_tile_loop_x86';
  if (!existsSync(wasmFile)) return null;
  const runJson = (cmd, args) => execFileSync(cmd, args, { encoding: 'utf8' }).trim().split('\n').map((l) => JSON.parse(l));
  const wasm = [], byHand = [];
  for (let run = 0; run < 3; run++) {
    wasm.push(runJson(process.execPath, [...WASM_SCRIPT_FLAGS, wasmFile]).find((l) => l.tileLoop?.startsWith('as shipped')).ofPeak);
    if (existsSync(handFile)) {
      const row = runJson(handFile, []).find((l) => l.tileLoopByHand?.startsWith(relaxed ? 'fused (' : 'plain ('));
      if (row) byHand.push(row.ofPeak);
    }
  }
  return { wasm: median(wasm), byHand: median(byHand), wasmRuns: wasm, byHandRuns: byHand };
}

async function ortSessions() {
  let ort;
  try {
    ort = await import('onnxruntime-web');
  } catch {
    console.warn('onnxruntime-web is not installed (npm --prefix bench ci): no peer columns');
    return null;
  }
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.simd = true;
  ort.env.logLevel = 'error';
  const sessions = {};
  for (const name of ['gpt2s', 'gpt2s-attn']) sessions[name] = await peerSession(ort, name);
  return { ort, sessions };
}

const kernelTable = kernels();
if (kernelTable) kernelTable.tileLoop = tileLoops();
const f32 = await loadPretrained(F32_DIR);
const bf16 = await loadPretrained(BF16_DIR);
const peer = await ortSessions();
const info = await runtimeInfo();
if (info.relaxedSimd !== relaxed) throw new Error(`the ${info.relaxedSimd ? 'relaxed' : 'plain'} SIMD build loaded: ${BUILD_HELP}`);

const prefill = [];
for (const n of LENGTHS) {
  const x = gpt2Ids(n);
  const fns = {
    'ours, all attentions, last row logits': () => f32.run(x, { logits: [n - 1] }),
    'ours, all attentions, all logits': () => f32.run(x, { logits: true }),
    'ours bf16, all attentions, last row logits': () => bf16.run(x, { logits: [n - 1] }),
  };
  if (peer) {
    const input = new peer.ort.Tensor('int64', BigInt64Array.from(x, BigInt), [1, n]);
    fns['ORT gpt2s (no attentions)'] = () => peer.sessions.gpt2s.run({ ids: input });
    fns['ORT gpt2s-attn (all attentions)'] = () => peer.sessions['gpt2s-attn'].run({ ids: input });
  }
  const rounds = n >= 256 ? (quick ? 3 : 5) : quick ? 5 : 9;
  const times = await timeRounds(fns, rounds);
  const ms = medians(times);
  const row = { n, ms };
  if (peer) {
    // Medians over rounds of the ratio within a round (pairedRatio).
    row.vsOrtAttn = pairedRatio(times, 'ours, all attentions, last row logits', 'ORT gpt2s-attn (all attentions)');
    row.vsOrtAttnAllLogits = pairedRatio(times, 'ours, all attentions, all logits', 'ORT gpt2s-attn (all attentions)');
    row.vsOrtPlainAllLogits = pairedRatio(times, 'ours, all attentions, all logits', 'ORT gpt2s (no attentions)');
  }
  prefill.push(row);
  console.log(JSON.stringify(row));
}

// Decoding: 32 greedy tokens after a 16-token prompt (msPerToken), with float32, bf16 and fp16
// weights. Every step reads every weight matrix once (the output head included), so bytes ÷
// bandwidth is the bound. The bandwidth is read right before and right after each row's timed
// tokens and the two averaged, as the kernel table pairs each GEMM call with the peak loop: the
// kernel table's own reading comes minutes earlier, and on these shared machines a slow minute for
// memory is slow for both (Zen 4: 33.4 ms a token in one run against 20.8–24.7 in the others, read
// against a bandwidth taken before it).
const decode = (model) => msPerToken(model, quick ? 12 : 32);
const c = f32.config;
const matrixElements = c.layers * (4 * c.dModel * c.dModel + 2 * c.dModel * 4 * c.dModel) + c.dModel * c.vocabSize;  // GPT-2: d_ff = 4·d
const decodeRows = [];
async function decodeRow(label, model, bytes) {
  await decode(model);
  const before = readBandwidthNow();
  const ms = await decode(model);
  const after = readBandwidthNow();
  const readGBs = before && after ? (before + after) / 2 : null;
  const weightBytes = matrixElements * bytes;
  const boundMs = readGBs ? weightBytes / (readGBs * 1e9) * 1e3 : null;
  const row = { weights: label, msPerToken: ms, weightMB: weightBytes / 1e6, readGBs, readGBsBeforeAfter: [before, after], boundMs, ofBound: boundMs ? ms / boundMs : null };
  decodeRows.push(row);
  console.log(JSON.stringify(row));
}
await decodeRow('f32', f32, 4);
await decodeRow('bf16', bf16, 2);
// fp16: the F32 checkpoint loaded at 2 bytes a weight, once the BF16 copy is freed (the three
// would not fit the heap together).
bf16.dispose();
const f16 = await loadPretrained(F32_DIR, { weightType: 'f16' });
await decodeRow('f16', f16, 2);
f16.dispose();

const results = { machine: machine(), build: { relaxedSimd: info.relaxedSimd, gemmKernel: info.gemmKernel, touchTuning: info.touchTuning }, kernels: kernelTable, prefill, decode: decodeRows };
writeFileSync(new URL(`./gpt2-results${relaxed ? '-relaxed' : ''}.json`, import.meta.url), JSON.stringify(results, null, 1));

const m = results.machine;
console.log(`\n## ${info.gemmKernel} — ${m.cpu} (family ${m.family}, model ${m.model}; ${m.simdFlags}), ${m.cores} cores, Node ${m.node}`);
if (kernelTable) {
  console.log(`\nOne core's peak in this build: ${kernelTable.peak.peakGflops.toFixed(1)} GFLOP/s; read bandwidth ${kernelTable.readGBs.toFixed(1)} GB/s\n`);
  // "of peak": median over calls of (this call's rate ÷ the peak loop's, run right after it);
  // "of the run's peak": median rate ÷ the peak measured once at the start (drifts with the machine).
  console.log("| GEMM (n × K · K × N) | weights | layout | ms | GFLOP/s | of peak (beside) | of the run's peak |\n|---|---|---|---|---|---|---|");
  const pct = (x) => `${(100 * x).toFixed(0)}%`;
  for (const g of kernelTable.gemm) console.log(`| ${g.gemm} (${g.n}×${g.K}·${g.K}×${g.N}) | ${g.weights} | ${g.layout} | ${g.ms.toFixed(3)} | ${g.gflops.toFixed(1)} | ${pct(g.ofPeak)} | ${pct(g.ofRunPeak)} |`);
  for (const g of kernelTable.fromMemory) console.log(`| ${g.fromMemory} | f32 | panels | ${g.ms.toFixed(1)} | ${g.gflops.toFixed(1)} | ${pct(g.ofPeak)} | ${pct(g.ofRunPeak)} |`);
  const k = kernelTable.touchTuning;
  if (k) console.log(`\nTouching ahead (core/gemm_tuning.h), timed before the rows from memory: 16 rows ${k.msWith.toFixed(1)} ms with, ${k.msWithout.toFixed(1)} ms without → ${k.fromRows ? `no touches below ${k.fromRows} rows` : 'touches kept'}.`);
  const t = kernelTable.tileLoop;
  if (t) {
    console.log(`\nThe tile loop alone on L1 data, of its peak (medians of 3 alternating runs): this build's ${pct(t.wasm)}` +
      (t.byHand == null ? '' : `, the same loop written by hand in x86 assembly (native) ${pct(t.byHand)}`) +
      ': the ceiling the GEMM rows above sit under in this run.');
  }
}
const tt = info.touchTuning;
console.log(tt.tuned ? `\nThe F32 checkpoint's load timed touching ahead: 16 rows ${tt.msWith.toFixed(1)} ms with, ${tt.msWithout.toFixed(1)} ms without → ${tt.fromRows ? `no touches below ${tt.fromRows} rows` : 'touches kept'}.` : '\nThe checkpoint\'s load did not tune touching ahead.');
console.log('\n| GPT-2 small prefill, 1 thread | ours (attentions, last-row logits) | ours (attentions, all logits) | ours bf16 | ORT gpt2s | ORT gpt2s-attn | ORT-attn ÷ ours | ORT-attn ÷ ours (all logits) |\n|---|---|---|---|---|---|---|---|');
for (const r of prefill) {
  const v = (k) => (r.ms[k] === undefined ? '–' : r.ms[k].toFixed(1));
  console.log(`| ${r.n} tokens | ${v('ours, all attentions, last row logits')} | ${v('ours, all attentions, all logits')} | ${v('ours bf16, all attentions, last row logits')} | ${v('ORT gpt2s (no attentions)')} | ${v('ORT gpt2s-attn (all attentions)')} | ${r.vsOrtAttn?.toFixed(2) ?? '–'}× | ${r.vsOrtAttnAllLogits?.toFixed(2) ?? '–'}× |`);
}
console.log('\n| decoding, 1 thread | ms / token | weights read | read bandwidth before / after (GB/s) | bound (bytes ÷ their mean) | ÷ bound |\n|---|---|---|---|---|---|');
for (const r of decodeRows) console.log(`| ${r.weights} | ${r.msPerToken.toFixed(1)} | ${r.weightMB.toFixed(0)} MB | ${r.readGBsBeforeAfter.map((g) => g?.toFixed(1) ?? '–').join(' / ')} | ${r.boundMs?.toFixed(1) ?? '–'} ms | ${r.ofBound?.toFixed(2) ?? '–'}× |`);
f32.dispose();
