// Threads in Node: GPT-2 small's prefill (the random F32 checkpoint of bench/gpt2.mjs) through the
// JS API with threads: 'auto' (the CommonJS threaded build on worker_threads), ours at 1 thread and
// at one per core, against onnxruntime-web 1.30's gpt2s-attn graph (every attention) at 1 thread
// and at as many threads. ORT reads its thread count once per process, so this runs itself twice,
// as bench/threads.mjs opens two pages: ours at both counts interleaved with ORT at 1 thread in the
// first process, and with ORT at N threads in the second (where ORT's threads also spin on the
// cores after each of its runs, so ours there is the conservative number). Relaxed SIMD (Node 20's
// flag), the build a browser with relaxed SIMD loads. Medians of interleaved calls.
// Usage: npm run bench:node-threads [-- --quick]   (writes bench/node-threads-results.json)
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { machine } from './machine.mjs';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const GPT2_DIR = 'build/gpt2-small-random';
const LENGTHS = quick ? [16, 32, 64] : [16, 32, 64, 256];
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

async function child(ortThreads) {
  const { loadMultihead, loadPretrained, runtimeInfo, setThreads } = await import('../bindings/multihead.mjs');
  const { gpt2PeerWeights } = await import('./weights.mjs');
  await loadMultihead({ threads: 'auto' });
  const info = await runtimeInfo();
  const model = await loadPretrained(GPT2_DIR);
  let session = null, ort = null;
  try {
    ort = await import('onnxruntime-web');
    ort.env.wasm.numThreads = ortThreads;
    ort.env.logLevel = 'error';
    const peerDir = new URL('./peers/gpt2-small/', import.meta.url);
    const external = JSON.parse(readFileSync(new URL('gpt2s-attn.external.json', peerDir), 'utf8'));
    session = await ort.InferenceSession.create(readFileSync(new URL('gpt2s-attn.onnx', peerDir)), {
      externalData: [{ path: external.data_file, data: gpt2PeerWeights(external) }],
    });
  } catch (error) {
    console.error(`onnxruntime-web did not load (npm --prefix bench ci): ${error.message}; no peer column`);
  }
  const rows = [];
  for (const n of LENGTHS) {
    const ids = Int32Array.from({ length: n }, (_, i) => (i * 7919 + 13) % 50257);
    const fns = {
      ours1: async () => { await setThreads(1); model.run(ids, { logits: [n - 1] }); },
      oursN: async () => { await setThreads(16); model.run(ids, { logits: [n - 1] }); },
    };
    if (session) {
      const input = new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, n]);
      fns.ort = () => session.run({ ids: input });
    }
    const times = Object.fromEntries(Object.keys(fns).map((k) => [k, []]));
    for (const fn of Object.values(fns)) await fn();  // warm-up
    const rounds = quick ? 5 : n >= 256 ? 5 : 9;
    for (let r = 0; r < rounds; r += 1) {
      for (const [name, fn] of Object.entries(fns)) {
        const t0 = performance.now();
        await fn();
        times[name].push(performance.now() - t0);
      }
    }
    rows.push({ n, ...Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)])) });
  }
  await setThreads(16);
  model.dispose();
  console.log(JSON.stringify({ threads: info.threads, gemmKernel: info.gemmKernel, ortThreads, rows }));
  process.exit(0);  // ORT's worker threads would keep the process alive
}

if (args.includes('--child')) {
  await child(Number(args[args.indexOf('--child') + 1]));
} else {
  if (!existsSync(`${GPT2_DIR}/model.safetensors`)) execFileSync(process.execPath, ['scripts/make-random-checkpoint.mjs', GPT2_DIR], { stdio: 'inherit' });
  const self = fileURLToPath(import.meta.url);
  const run = (ortThreads) => JSON.parse(execFileSync(process.execPath,
    ['--experimental-wasm-relaxed-simd', self, '--child', String(ortThreads), ...(quick ? ['--quick'] : [])],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').at(-1));
  const first = run(1);
  const second = run(first.threads);
  const results = { machine: machine(), gemmKernel: first.gemmKernel, threads: first.threads, withOrt1: first.rows, withOrtN: second.rows };
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
}
