// The threads benchmark: multihead's threaded build against its single-thread self and against
// onnxruntime-web at 1 and at 2 threads, all inside Debian's Chromium on a cross-origin isolated
// page (the only place the threaded build runs). Prints a table, writes bench/threads-results.json.
// Then GPT-2 small's prefill (the random F32 checkpoint of bench/gpt2.mjs) the same way: ours
// with every head's attention at 1 and 2+ threads, ORT's gpt2s-attn graph at 1 and at 2 threads.
// Then decoding: generate() against the same greedy loop by hand through run(…, { reusePrefix }).
// Usage: npm run bench:threads   [-- --seconds 1 --quick --gpt2-only]
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { chromium } from '@playwright/test';

const args = process.argv.slice(2);
const seconds = Number(args[args.indexOf('--seconds') + 1]) || 1;
const quick = args.includes('--quick');
const gpt2Only = args.includes('--gpt2-only');
const whyOnly = args.includes('--why-only');  // just the "Why this prediction" timings
const GPT2_DIR = 'build/gpt2-small-random', GPT2_LENGTHS = quick ? [16, 64, 256] : [16, 32, 64, 256];
if (!existsSync(`${GPT2_DIR}/model.safetensors`)) execFileSync(process.execPath, ['scripts/make-random-checkpoint.mjs', GPT2_DIR], { stdio: 'inherit' });
const SHAPES = [[6, 64, 4], [16, 256, 8], [64, 512, 8], [128, 768, 12], [512, 512, 8], [1024, 512, 8], [2048, 256, 8], [4096, 256, 8]]
  .filter(([n]) => !quick || n <= 512);
const flops = (n, d) => 8 * n * d * d + 4 * n * n * d;
const port = 4190;

const server = spawn(process.execPath, ['scripts/serve.mjs', '--port', String(port), '--isolated'], { stdio: 'ignore' });
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--no-first-run', '--disable-sync', '--disable-dev-shm-usage'],
});
async function openPage(ortThreads) {
  const page = await browser.newPage();
  page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
  for (let attempt = 0; ; attempt++) {  // the server may still be starting
    try {
      await page.goto(`http://127.0.0.1:${port}/bench/browser/threads.html?ort=${ortThreads}`);
      break;
    } catch (e) {
      if (attempt > 20) throw e;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  await page.waitForFunction(() => window.ready === true, null, { timeout: 30000 });
  return page;
}

let results = [], gpt2 = [], info, decode = {}, why = {};
try {
  const pages = { 1: await openPage(1), 2: await openPage(2) };
  info = await pages[1].evaluate(() => window.info());
  if (!info.threadedBuild || info.threads < 2) throw new Error(`the page did not get the threaded build: ${JSON.stringify(info)}`);
  const threads = info.threads;
  for (const [n, d, h] of gpt2Only || whyOnly ? [] : SHAPES) {
    for (const withWeights of [false, true]) {
      if (withWeights && n >= 4096) continue;  // 8 × 4096² weights: over our budget, refused
      const row = { n, d, h, causal: false, weights: withWeights };
      // Page 1: ours at 1 and `threads` threads, ORT at 1 thread; page 2: ours again, ORT at 2.
      const a = await pages[1].evaluate((s) => window.measure(s), { n, d, h, causal: false, withWeights, ourThreads: [1, threads], seconds });
      const b = await pages[2].evaluate((s) => window.measure(s), { n, d, h, causal: false, withWeights, ourThreads: [threads], seconds });
      Object.assign(row, {
        ours1: a.ours1, oursN: a[`ours${threads}`], ortOps1: a.ortOps, ortFused1: a.ortFused ?? null,
        oursN_b: b[`ours${threads}`], ortOps2: b.ortOps, ortFused2: b.ortFused ?? null,
      });
      results.push(row);
      const f = (ms) => (ms == null ? '—' : `${ms.toFixed(3)} ms`);
      console.log(`n=${n} d=${d} h=${h} ${withWeights ? '+weights' : '        '} ours 1 thread ${f(row.ours1)} | ours ${threads} ${f(row.oursN)} ` +
        `(×${(row.ours1 / row.oursN).toFixed(2)}) | ORT 1 thread ops ${f(row.ortOps1)} fused ${f(row.ortFused1)} | ` +
        `ORT 2 threads ops ${f(row.ortOps2)} fused ${f(row.ortFused2)} (ours ${f(row.oursN_b)})`);
    }
  }
  for (const n of whyOnly ? [] : GPT2_LENGTHS) {
    const a = await pages[1].evaluate((s) => window.measureGpt2(s), { n, ourThreads: [1, threads], seconds });
    const b = await pages[2].evaluate((s) => window.measureGpt2(s), { n, ourThreads: [threads], seconds });
    const row = { n, ours1: a.ours1, oursN: a[`ours${threads}`], ortAttn1: a.ortAttn, oursN_b: b[`ours${threads}`], ortAttn2: b.ortAttn };
    gpt2.push(row);
    console.log(`GPT-2 small, ${n} tokens: ours 1 thread ${row.ours1.toFixed(1)} ms | ours ${threads} ${row.oursN.toFixed(1)} ms | ` +
      `ORT gpt2s-attn 1 thread ${row.ortAttn1.toFixed(1)} ms | ORT 2 threads ${row.ortAttn2.toFixed(1)} ms (ours ${row.oursN_b.toFixed(1)} ms)`);
  }
  why = await pages[1].evaluate((s) => window.measureWhy(s), { ourThreads: [1, threads] });
  for (const [t, r] of Object.entries(why))
    console.log(`GPT-2 small, ${t} thread(s): one run with every attention (32 tokens) ${r.run.toFixed(0)} ms, lens at every position ${r.lens.toFixed(0)} ms, at the last ${r.lensLast.toFixed(0)} ms, attribution ${r.attribution.toFixed(0)} ms, both in one pass ${r.lensAndAttribution.toFixed(0)} ms; patching 144 heads (16 tokens) ${r.patch.toFixed(0)} ms, first result at ${r.firstResult.toFixed(0)} ms`);
  if (!whyOnly) decode = await pages[1].evaluate((s) => window.measureDecode(s), { ourThreads: [1, threads] });
  for (const [t, r] of Object.entries(decode))
    console.log(`GPT-2 small decoding, ${t} thread(s): generate() ${r.generate.toFixed(2)} ms a token, the bare run loop ${r.bare.toFixed(2)} ms`);
} finally {
  await browser.close();
  server.kill();
}

const machine = { cpu: os.cpus()[0]?.model, cores: os.cpus().length, browser: info?.userAgent, browserCores: info?.cores,
  threads: info?.threads, date: new Date().toISOString(), secondsPerCase: seconds };
const resultsFile = `threads-results${whyOnly ? '-why' : gpt2Only ? '-gpt2' : ''}.json`;
writeFileSync(new URL(`./${resultsFile}`, import.meta.url), JSON.stringify({ machine, results, gpt2, decode, why }, null, 1));

const x = (a, b) => (a && b ? `${(b / a).toFixed(2)}×` : '—');
const T = info.threads;
if (results.length) console.log(`\n| n | d | h | weights | ours 1 thread ms | ours ${T} threads ms | speed-up | GFLOP/s at ${T} | ORT ops 1 thr ÷ ours ${T} | ORT fused 1 thr ÷ ours ${T} | ORT ops 2 thr ÷ ours ${T} | ORT fused 2 thr ÷ ours ${T} |`);
if (results.length) console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of results) {
  console.log(`| ${r.n} | ${r.d} | ${r.h} | ${r.weights ? 'yes' : 'no'} | ${r.ours1.toFixed(3)} | ${r.oursN.toFixed(3)} | ${x(r.oursN, r.ours1)} | ` +
    `${(flops(r.n, r.d) / (r.oursN * 1e6)).toFixed(1)} | ${x(r.oursN, r.ortOps1)} | ${r.weights ? '' : x(r.oursN, r.ortFused1)} | ` +
    `${x(r.oursN_b, r.ortOps2)} | ${r.weights ? '' : x(r.oursN_b, r.ortFused2)} |`);
}
console.log(`\n| GPT-2 small prefill, tokens | ours 1 thread ms | ours ${T} threads ms | ORT-attn 1 thread ms | ORT-attn 2 threads ms | ORT 1 thr ÷ ours 1 | ORT 2 thr ÷ ours ${T} |`);
console.log('|---|---|---|---|---|---|---|');
for (const r of gpt2) {
  console.log(`| ${r.n} | ${r.ours1.toFixed(1)} | ${r.oursN.toFixed(1)} (${r.oursN_b.toFixed(1)}) | ${r.ortAttn1.toFixed(1)} | ${r.ortAttn2.toFixed(1)} | ` +
    `${x(r.ours1, r.ortAttn1)} | ${x(r.oursN_b, r.ortAttn2)} |`);
}
console.log(`\n| GPT-2 small decoding (16-token prompt), threads | generate() ms a token | bare run(…, { reusePrefix }) loop ms a token | generate ÷ bare |`);
console.log('|---|---|---|---|');
for (const [t, r] of Object.entries(decode)) console.log(`| ${t} | ${r.generate.toFixed(2)} | ${r.bare.toFixed(2)} | ${(r.generate / r.bare).toFixed(3)} |`);
for (const r of gpt2) {
  // Speed-up at each length, and the share of one thread's time that did not split (Amdahl: 1 / s − … from the measured speed-up).
  const speedup = r.ours1 / r.oursN, serial = (T / speedup - 1) / (T - 1);
  console.log(`GPT-2 small prefill, ${r.n} tokens: ${speedup.toFixed(2)}× on ${T} threads; as Amdahl's law, a serial share of ${(100 * serial).toFixed(1)} %`);
}
console.log(`\nChromium on a cross-origin isolated page; medians of interleaved samples; "÷" = ORT time / ours (above 1: we are faster). ` +
  `Machine: ${machine.cpu}, ${machine.cores} cores. Raw numbers: bench/${resultsFile}`);
