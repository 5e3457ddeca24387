// The largest GGUF models the 4 GB heap holds: Qwen3-4B's shape (bench/gguf-common.mjs: `qwen3`, 36
// layers, d 2560, 32 / 8 heads × 128, FFN 9728, 151936 tokens, tied head, q/k norms; random weights)
// as a Q4_K_M file laid out as llama-quantize lays it out (token_embd and half the layers' attn_v /
// ffn_down in Q6_K, the rest Q4_K: 2.50 GB) and with every matrix in Q4_K (2.27 GB); Llama-3.2-3B's
// shape as Q4_K_M (2.0 GB).
// Each is loaded in Debian's Chromium by URL (byte ranges) on a cross-origin isolated page and run
// on 64 tokens with every head's attention and every row's logits: load time, run time, the wasm
// heap (runtimeInfo().heapBytes: the module's memory; allocatedBytes: what its allocator holds),
// or what failed. Usage: node bench/largest-gguf.mjs [--tokens 64] [--only TEXT] (the files whose
// name has TEXT). Needs ~7 GB of disk in build/. Writes bench/largest-gguf-results.json (or --out).
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { SHAPES, openBrowser, openPage, q4kmTypes, writeModelFile } from './gguf-common.mjs';
import { machine } from './machine.mjs';

const args = process.argv.slice(2);
const n = Number(args.includes('--tokens') ? args[args.indexOf('--tokens') + 1] : 64);
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : '';
const outFile = args.includes('--out') ? args[args.indexOf('--out') + 1] : 'bench/largest-gguf-results.json';
const FILES = [
  { name: 'Qwen3-4B shape, Q4_K_M layout', path: 'build/gguf-peer/qwen3-4b-q4_k_m.gguf', shape: SHAPES['qwen3-4b'], types: q4kmTypes(36) },
  { name: 'Qwen3-4B shape, every matrix Q4_K', path: 'build/gguf-peer/qwen3-4b-q4_k.gguf', shape: SHAPES['qwen3-4b'], types: () => 'q4_k' },
  { name: 'Llama-3.2-3B shape, Q4_K_M layout', path: 'build/gguf-peer/llama-3.2-3b-q4_k_m.gguf', shape: SHAPES['llama-3.2-3b'], types: q4kmTypes(28) },
].filter((f) => f.name.includes(only));
mkdirSync('build/gguf-peer', { recursive: true });
for (const f of FILES) {
  if (existsSync(f.path)) continue;
  console.log(`writing ${f.path}`);
  writeModelFile(f.path, f.shape, f.types);
}

const port = 4192;
const { browser, close } = await openBrowser(port);
const mb = (b) => `${(b / 1e6).toFixed(0)} MB`;
const results = [];
let info = null;
try {
  for (const f of FILES) {
    // A page per file, so that one's heap (wasm memory never shrinks) does not count against the next.
    const page = await browser.newPage();
    page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
    await openPage(page, `http://127.0.0.1:${port}/bench/browser/largest-gguf.html`);
    await page.waitForFunction(() => window.ready === true, null, { timeout: 60000 });
    info = await page.evaluate(() => window.info());
    const loadStart = os.loadavg()[0].toFixed(2);
    const r = await page.evaluate((o) => window.loadAndRun(o), { url: `/${f.path}`, n, vocab: f.shape.vocab });
    const row = { name: f.name, fileBytes: statSync(f.path).size, threads: info.threads, load: `${loadStart} → ${os.loadavg()[0].toFixed(2)}`, ...r };
    results.push(row);
    console.log(`${f.name} (${mb(row.fileBytes)}), ${info.threads} thread(s), load average ${row.load}:`);
    if (r.failed) console.log(`  FAILED at ${r.failed}: ${r.error}`);
    else {
      console.log(`  loaded in ${(r.loadMs / 1000).toFixed(1)} s, weights ${mb(r.weightBytes)} (${r.weightType}); heap ${mb(r.heapLoaded.heapBytes)}, allocated ${mb(r.heapLoaded.allocatedBytes)}`);
      console.log(`  ${n} tokens, every attention (${r.attentionValues} values) and logits (${r.logitValues}): ${(r.runMs / 1000).toFixed(2)} s, again ${(r.secondRunMs / 1000).toFixed(2)} s; ` +
        `rows sum to 1 within ${r.worstRowSumError.toExponential(1)}, logits finite: ${r.logitsFinite}`);
    }
    console.log(`  heap after: ${mb(r.heapAfter.heapBytes)}, allocated ${mb(r.heapAfter.allocatedBytes)}`);
    await page.close();
  }
} finally {
  await close();
}
writeFileSync(outFile, `${JSON.stringify({ machine: { ...machine(), browser: info?.userAgent,
  relaxedSimd: info?.relaxedSimd, threadedBuild: info?.threadedBuild }, tokens: n, results }, null, 2)}\n`);
