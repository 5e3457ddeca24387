// multihead against llama.cpp in wasm (@wllama/wllama 3.8.1, llama.cpp b11364) on the same GGUF
// files, in Debian's Chromium on a cross-origin isolated page: GPT-2 small's shape as a `llama`
// model (bench/gguf-common.mjs: random weights, a byte-level BPE vocabulary llama.cpp accepts) in
// Q8_0, Q4_0 and Q4_K; prefill of 64 and 256 tokens and decoding, at 1 and 2 threads; token ids
// handed to both, so neither tokenizer is timed. A page per thread count (wllama fixes its threads
// when it loads), both engines loaded in it and timed in interleaved rounds; medians.
// Usage: npm run bench:gguf-peer [-- --rounds 5 --types q8_0,q4_0,q4_k --threads 1,2 --lengths 64,256
//        --shape gpt2-small|llama-3.2-1b --tokens 24]
// (Llama-3.2-1B's shape: `-- --shape llama-3.2-1b --types q8_0,q4_k --threads 1 --lengths 64 --rounds 3
// --tokens 8`; llama.cpp's prefill of 64 tokens takes it 20–60 s there.)
// The files are written once to build/gguf-peer/. Writes bench/gguf-peer-results.json (or --out;
// bench/gguf-peer-results-llama-1b.json for that shape).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { SHAPES, openBrowser, openPage, writeModelFile } from './gguf-common.mjs';
import { machine } from './machine.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const rounds = Number(option('--rounds', 5));
const types = option('--types', 'q8_0,q4_0,q4_k').split(',');
const threadCounts = option('--threads', '1,2').split(',').map(Number);
const shape = option('--shape', 'gpt2-small');
if (!SHAPES[shape]) throw new Error(`--shape: one of ${Object.keys(SHAPES).join(', ')}`);
const lengths = option('--lengths', '64,256').split(',').map(Number);
const decodeTokens = Number(option('--tokens', 24));
const outFile = option('--out', shape === 'gpt2-small' ? 'bench/gguf-peer-results.json' : `bench/gguf-peer-results-${shape.replace('-3.2', '')}.json`);
const port = 4191;

mkdirSync('build/gguf-peer', { recursive: true });
const file = (type) => `build/gguf-peer/${shape}-${type}.gguf`;
for (const type of types) {
  if (existsSync(file(type))) continue;
  console.log(`writing ${file(type)}`);
  writeModelFile(file(type), SHAPES[shape], () => type);
}

const { browser, close } = await openBrowser(port);
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');
const results = [];
let info = null;
try {
  for (const threads of threadCounts) {
    const page = await browser.newPage();
    page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') console.error(`page ${m.type()}: ${m.text()}`); });
    // Nothing may come from outside: wllama's wasm is served from bench/node_modules.
    page.on('request', (r) => { if (!r.url().startsWith(`http://127.0.0.1:${port}/`) && !/^(data|blob):/.test(r.url())) throw new Error(`fetched from outside: ${r.url()}`); });
    await openPage(page, `http://127.0.0.1:${port}/bench/browser/gguf-peer.html?threads=${threads}`);
    await page.waitForFunction(() => window.ready === true, null, { timeout: 60000 });
    info = await page.evaluate(() => window.info());
    if (threads > 1 && (!info.threadedBuild || info.threads < threads)) throw new Error(`the page did not get ${threads} threads: ${JSON.stringify(info)}`);
    for (const type of types) {
      const loaded = await page.evaluate((url) => window.load(url), `/${file(type)}`);
      if (threads > 1 && !loaded.peerMultithread) throw new Error(`wllama did not start its threads: ${JSON.stringify(loaded)}`);
      const row = { threads, type, loaded, load: {} };
      row.load.start = load();
      for (const n of lengths) row[`prefill${n}`] = await page.evaluate((o) => window.prefill(o), { n, rounds });
      row.decode = await page.evaluate((o) => window.decode(o), { tokens: decodeTokens, rounds });
      row.load.end = load();
      results.push(row);
      const p = (r) => `ours ${r.oursLast.toFixed(1)} (every attention ${r.oursAll.toFixed(1)}) | wllama ${r.peer.toFixed(1)} (llama.cpp's own ${r.peerPromptMs.toFixed(1)}) | ×${r.ratio.toFixed(2)}`;
      console.log(`${type}, ${threads} thread(s), load ${row.load.start} → ${row.load.end}`);
      console.log(`  load: ours ${loaded.oursMs.toFixed(0)} ms (${loaded.weightType}, ${(loaded.weightBytes / 1e6).toFixed(0)} MB), wllama ${loaded.peerMs.toFixed(0)} ms`);
      for (const n of lengths) console.log(`  prefill ${n}: ${p(row[`prefill${n}`])}`);
      const d = row.decode;
      console.log(`  decoding, ms a token: ours ${d.ours.toFixed(2)} | wllama ${d.peer.toFixed(2)} (llama.cpp's own ${d.peerOwn.toFixed(2)}) | ×${d.ratio.toFixed(2)}`);
    }
    await page.close();
  }
} finally {
  await close();
}

const wllamaVersion = JSON.parse(readFileSync('bench/node_modules/@wllama/wllama/package.json', 'utf8')).version;
const m = { ...machine(), browser: info?.userAgent, libllama: info?.libllama, wllama: wllamaVersion, relaxedSimd: info?.relaxedSimd };
writeFileSync(outFile, `${JSON.stringify({ machine: m, shape: { name: shape, ...SHAPES[shape] }, rounds, results }, null, 2)}\n`);

const cols = lengths.map((n) => `prefill ${n}: ours ms (every attention) | wllama ms | ÷`).join(' | ');
console.log(`\n| type | threads | ${cols} | decoding ms a token: ours | wllama | ÷ | load average |`);
console.log(`|---|---:|${lengths.map(() => '---:|---:|---:|').join('')}---:|---:|---:|---|`);
for (const r of results) {
  const d = r.decode;
  const cells = lengths.map((n) => { const a = r[`prefill${n}`]; return `${a.oursLast.toFixed(1)} (${a.oursAll.toFixed(1)}) | ${a.peer.toFixed(1)} | ${a.ratio.toFixed(2)}×`; });
  console.log(`| ${r.type} | ${r.threads} | ${cells.join(' | ')} | ${d.ours.toFixed(2)} | ${d.peer.toFixed(2)} | ${d.ratio.toFixed(2)}× | ${r.load.start} → ${r.load.end} |`);
}
console.log(`\n"÷": wllama's time over ours, median of the rounds' ratios (above 1: we are faster). ${m.cpu}, ${m.cores ?? os.cpus().length} cores; ` +
  `${m.browser}; wllama ${wllamaVersion} (llama.cpp ${m.libllama}). Raw numbers: ${outFile}`);
