// Threads in Node: GPT-2 small's prefill (the random F32 checkpoint of bench/gpt2.mjs) through the
// JS API with threads: 'auto' (the CommonJS threaded build on worker_threads), ours at 1 thread and
// at one per core, against onnxruntime-web 1.30's gpt2s-attn graph (every attention) at 1 thread
// and at as many threads. ORT reads its thread count once per process, so this runs itself twice,
// as bench/threads.mjs opens two pages: ours at both counts interleaved with ORT at 1 thread in the
// first process, and with ORT at N threads in the second (where ORT's threads also spin on the
// cores after each of its runs, so ours there is the conservative number). Relaxed SIMD, the build
// Node and a browser with relaxed SIMD load. Medians of interleaved calls. Also decoding
// (F32 and BF16 weights) at 1 and N threads.
// Usage: npm run bench:node-threads [-- --quick]   (writes bench/node-threads-results.json)
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { BF16_DIR, ensureCheckpoints, F32_DIR, gpt2Ids, msPerToken, peerSession, timeInterleaved } from './gpt2-common.mjs';
import { median } from './stats.mjs';
import { machine } from './machine.mjs';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const LENGTHS = quick ? [16, 32, 64] : [16, 32, 64, 256];

async function child(ortThreads) {
  const { loadMultihead, loadPretrained, runtimeInfo, setThreads } = await import('../bindings/multihead.mjs');
  await loadMultihead({ threads: 'auto' });
  const info = await runtimeInfo();
  const model = await loadPretrained(F32_DIR);
  let session = null, ort = null;
  try {
    ort = await import('onnxruntime-web');
    ort.env.wasm.numThreads = ortThreads;
    ort.env.logLevel = 'error';
    session = await peerSession(ort, 'gpt2s-attn');
  } catch (error) {
    console.error(`onnxruntime-web did not load (npm --prefix bench ci): ${error.message}; no peer column`);
  }
  const rows = [];
  for (const n of LENGTHS) {
    const ids = gpt2Ids(n);
    const fns = {
      ours1: async () => { await setThreads(1); model.run(ids, { logits: [n - 1] }); },
      oursN: async () => { await setThreads(16); model.run(ids, { logits: [n - 1] }); },
    };
    if (session) {
      const input = new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, n]);
      fns.ort = () => session.run({ ids: input });
    }
    rows.push({ n, ...await timeInterleaved(fns, quick ? 5 : n >= 256 ? 5 : 9) });
  }
  // Decoding (first process only): a 16-token prompt, then greedy tokens from the key/value cache;
  // ms per token is the median gap after the first, at 1 and N threads in alternation. A step
  // reads every weight once, and two cores read faster than one.
  const decode = [];
  if (ortThreads === 1) {
    const bf16 = await loadPretrained(BF16_DIR);
    for (const [weights, m] of [['f32', model], ['bf16', bf16]]) {
      const perToken = { ours1: [], oursN: [] };
      for (let r = 0; r < (quick ? 2 : 4); r += 1) {
        for (const [name, threads] of [['ours1', 1], ['oursN', 16]]) {
          await setThreads(threads);
          const ms = await msPerToken(m, quick ? 12 : 24);
          if (r > 0) perToken[name].push(ms);  // the first round warms up
        }
      }
      decode.push({ weights, ours1: median(perToken.ours1), oursN: median(perToken.oursN) });
    }
    bf16.dispose();
  }
  await setThreads(16);
  model.dispose();
  console.log(JSON.stringify({ threads: info.threads, gemmKernel: info.gemmKernel, ortThreads, rows, decode }));
  process.exit(0);  // ORT's worker threads would keep the process alive
}

if (args.includes('--child')) {
  await child(Number(args[args.indexOf('--child') + 1]));
} else {
  ensureCheckpoints();
  const self = fileURLToPath(import.meta.url);
  const run = (ortThreads) => JSON.parse(execFileSync(process.execPath,
    ['--experimental-wasm-relaxed-simd', self, '--child', String(ortThreads), ...(quick ? ['--quick'] : [])],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').at(-1));
  const first = run(1);
  const second = run(first.threads);
  const results = { machine: machine(), gemmKernel: first.gemmKernel, threads: first.threads, withOrt1: first.rows, withOrtN: second.rows, decode: first.decode };
  writeFileSync(new URL('./node-threads-results.json', import.meta.url), JSON.stringify(results, null, 1));
  const m = results.machine, N = first.threads;
  console.log(`\n## GPT-2 small prefill in Node, ${first.gemmKernel}: ${m.cpu} (family ${m.family}, model ${m.model}; ${m.simdFlags}), ${m.cores} cores, Node ${m.node}`);
  console.log(`\n| tokens | ours, 1 thread | ours, ${N} threads (2nd process) | speed-up | ORT-attn, 1 thread | ORT-attn, ${N} threads | ORT 1 ÷ ours 1 | ORT ${N} ÷ ours ${N} (2nd process) |\n|---|---|---|---|---|---|---|---|`);
  const f = (x) => (x === undefined ? '–' : x.toFixed(1));
  const ratio = (a, b) => (a === undefined ? '–' : `${(a / b).toFixed(2)}×`);
  for (const [i, a] of first.rows.entries()) {
    const b = second.rows[i];
    console.log(`| ${a.n} | ${f(a.ours1)} | ${f(a.oursN)} (${f(b.oursN)}) | ${(a.ours1 / a.oursN).toFixed(2)}× | ${f(a.ort)} | ${f(b.ort)} | ${ratio(a.ort, a.ours1)} | ${ratio(b.ort, b.oursN)} |`);
  }
  console.log(`\n| decoding, ms per token | ours, 1 thread | ours, ${N} threads | speed-up |\n|---|---|---|---|`);
  for (const d of first.decode) console.log(`| ${d.weights} | ${f(d.ours1)} | ${f(d.oursN)} | ${(d.ours1 / d.oursN).toFixed(2)}× |`);
}
