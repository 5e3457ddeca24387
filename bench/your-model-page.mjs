// Measures the "Your model" page in Chromium (a measurement, not a test): time to load a checkpoint
// from the file input until its grid is drawn, and per keystroke the forward pass (in the worker)
// and the drawing, as medians of 15 edits that each set a new text (a whole forward pass) and of
// ~25 characters typed at the end (only the tokens after the unchanged start are computed); once
// on a plain host (one thread) and once on a cross-origin isolated one (the worker loads the
// threaded build: one thread per core). Usage
// (after npm run build:wasm):
//   node scripts/make-random-checkpoint.mjs && node bench/your-model-page.mjs [--isolated-only]
import { chromium } from '@playwright/test';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { loadTokenizer } from '../bindings/tokenizers/tokenizer.mjs';
import { join } from 'node:path';
import { keystroke } from './page-keystroke.mjs';

const hosts = [['one thread', 4189, ['--no-isolation']], ['cross-origin isolated (threads)', 4190, ['--isolated']]]
  .filter(([, , flags]) => flags[0] === '--isolated' || !process.argv.includes('--isolated-only'));
const servers = hosts.map(([, port, flags]) => spawn(process.execPath, ['scripts/serve.mjs', '--port', String(port), ...flags], { stdio: 'ignore' }));
await new Promise((resolve) => setTimeout(resolve, 600));
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'] });
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
const models = [['gpt2 fixture (2 × 4 heads)', 'tests/fixtures/hf/gpt2'], ['llama fixture (bf16, GQA)', 'tests/fixtures/hf/llama'],
  ['bert fixture', 'tests/fixtures/hf/bert'], ['GPT-2 small shape, random F32 (498 MB)', 'build/gpt2-small-random']];
const words = 'The animal did not cross the street because it was too tired and the road was long'.split(' ');
const TOKENS = 32;
// 15 different texts that the model's own tokenizer makes exactly TOKENS tokens of (a keystroke
// "at 32 tokens"; 32 words are ~50 GPT-2 tokens).
function texts(dir) {
  const tokenizer = loadTokenizer({ tokenizerJson: readFileSync(join(dir, 'tokenizer.json'), 'utf8') });
  const out = [];
  for (let start = 0; out.length < 15 && start < 200; start += 1) {
    let text = '';
    for (let k = 0; tokenizer.encode(text).ids.length < TOKENS; k += 1) text += (k ? ' ' : '') + words[(start + k) % words.length];
    if (tokenizer.encode(text).ids.length === TOKENS) out.push(text);
  }
  return out;
}
const results = [];
try {
  for (const [host, port] of hosts) for (const [label, dir] of models) {
    if (!existsSync(join(dir, 'model.safetensors'))) { console.log(`${label}: missing (run scripts/make-random-checkpoint.mjs)`); continue; }
    // No service worker: it would isolate the one-thread host's page too (web/common/service-worker.mjs).
    const page = await (await browser.newContext({ serviceWorkers: 'block' })).newPage();
    await page.goto(`http://127.0.0.1:${port}/web/your-model.html`);
    await page.waitForFunction(() => document.body.dataset.ready === 'true');
    const started = Date.now();
    await page.setInputFiles('#files', ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'].map((f) => join(dir, f)).filter(existsSync));
    page.on('pageerror', (e) => console.log('page error:', e.message));
    page.on('console', (m) => { if (m.type() === 'error') console.log('console:', m.text()); });
    try {
      await page.waitForFunction(() => document.body.dataset.ready === 'true' && document.querySelector('.mv-thumb'), null, { timeout: 120000 });
    } catch (error) {
      console.log(label, 'did not load:', await page.locator('#sourceMessage').textContent(), await page.locator('.mv-info').textContent());
      throw error;
    }
    const loadMs = Date.now() - started;
    // One edit (bench/page-keystroke.mjs): [forward, drawing, total, tokens reused].
    const edit = async (text) => {
      const t = await keystroke(page, text);
      return [t.forwardMs, t.drawMs, t.totalMs, t.reused];
    };
    // Two kinds of keystroke at TOKENS tokens: a new text each time (nothing shared with the last
    // one from the start: the whole forward pass), and typing at the end (one more character of
    // the last word: the tokens before it are reused, causal models).
    const timings = { replace: [], type: [] };
    const all = texts(dir);
    for (const text of all) timings.replace.push(await edit(text));
    await edit(all[0].slice(0, all[0].lastIndexOf(' ')));
    for (const char of all[0].slice(all[0].lastIndexOf(' ')) + ' and then it rested') timings.type.push(await edit((await page.locator('#mvText').inputValue()) + char));
    const stats = (rows) => ({ forwardMs: median(rows.map((t) => t[0])), drawMs: median(rows.map((t) => t[1])), keystrokeMs: median(rows.map((t) => t[2])), reusedTokens: median(rows.map((t) => t[3])) });
    const heads = await page.locator('.mv-thumb').count();
    const threads = await page.evaluate(async () => (await import('/bindings/multihead.mjs')).threadsAvailable() ? navigator.hardwareConcurrency : 1);
    const row = { host, threads, tokens: TOKENS, model: label, heads, loadMs, newText: stats(timings.replace), typingAtTheEnd: stats(timings.type) };
    console.log(JSON.stringify(row));
    results.push(row);
    await page.close();
  }
} finally {
  await browser.close();
  for (const server of servers) server.kill();
}
