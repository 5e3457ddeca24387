// Which checkpoints the "Your model" page loads in Chromium here (a measurement, not a test):
// Qwen2.5-0.5B's shape (BF16 as on the hub), and GPT-2 medium and large shapes as stored (F32) and
// at 2 bytes a weight (the page's "Weights in memory": fp16), all with random weights
// (scripts/make-random-checkpoint.mjs --size). For each: whether it
// loaded (every head's thumbnail drawn) or the page's message if not, the load time, the weights in
// memory, and one keystroke (a forward pass over one sentence, its tokens counted by the
// checkpoint's own tokenizer, on one thread, and its drawing).
// Writes bench/largest-checkpoint-results.json. Usage (npm run bench:largest builds first):
//   node bench/largest-checkpoint.mjs
import { chromium } from '@playwright/test';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadTokenizer } from '../bindings/tokenizers/tokenizer.mjs';
import { machine } from './machine.mjs';
import { keystroke } from './page-keystroke.mjs';

const only = process.argv[2];  // a part of a case's label: run just those, and write no results file
const cases = [
  ['Llama 3.2 1B shape, BF16 (1.24B parameters, 2.47 GB)', 'build/llama-3.2-1b-random', 'llama-3.2-1b', ''],
  ['Qwen2.5-0.5B shape, BF16 (494M parameters)', 'build/qwen2-0.5b-random', 'qwen2-0.5b', ''],
  ['GPT-2 medium shape, F32 (355M parameters)', 'build/gpt2-medium-random', 'medium', ''],
  ['GPT-2 large shape, F32 (774M parameters)', 'build/gpt2-large-random', 'large', ''],
  ['GPT-2 large shape, F32 loaded as fp16', 'build/gpt2-large-random', 'large', 'f16'],
].filter(([label]) => !only || label.includes(only));
for (const [, dir, size] of cases)
  if (!existsSync(join(dir, 'model.safetensors'))) execFileSync(process.execPath, ['scripts/make-random-checkpoint.mjs', dir, '--size', size], { stdio: 'inherit' });

// The resident memory of every Chromium process (the tab, its worker and the browser), in MB.
function chromiumMemoryMB() {
  const out = execFileSync('ps', ['-C', 'chromium', '-o', 'rss='], { encoding: 'utf8' });
  return Math.round(out.split('\n').filter(Boolean).reduce((sum, kb) => sum + Number(kb), 0) / 1024);
}

const port = 4191;
const server = spawn(process.execPath, ['scripts/serve.mjs', '--port', String(port), '--no-isolation'], { stdio: 'ignore' });
await new Promise((resolve) => setTimeout(resolve, 600));
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'] });
const TEXT = 'The animal did not cross the street because it was too tired, and the road was long and the night was cold';
const rows = [];
try {
  for (const [label, dir, , weightType] of cases) {
    // One thread: no isolation headers, and no service worker to add them.
    const page = await (await browser.newContext({ serviceWorkers: 'block' })).newPage();
    await page.goto(`http://127.0.0.1:${port}/web/your-model.html`);
    await page.waitForFunction(() => document.body.dataset.ready === 'true');
    await page.selectOption('#weightType', weightType);
    const started = Date.now();
    await page.setInputFiles('#files', ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'].map((f) => join(dir, f)));
    // Loaded: every head's thumbnail drawn; refused: the page's error state, with its message.
    const outcome = await (await page.waitForFunction(() => {
      const ready = document.body.dataset.ready;
      if (ready === 'error') return 'refused';
      return ready === 'true' && document.querySelector('.mv-thumb') ? 'loaded' : null;
    }, null, { timeout: 300000 })).jsonValue();
    const seconds = (Date.now() - started) / 1000;
    const row = { checkpoint: label, weightType: weightType || 'as stored', outcome, seconds };
    if (outcome === 'loaded') {
      row.info = (await page.locator('.mv-info').textContent())?.trim();
      row.heads = await page.locator('.mv-thumb').count();
      const { forwardMs, drawMs } = await keystroke(page, TEXT);
      const tokens = loadTokenizer({ tokenizerJson: readFileSync(join(dir, 'tokenizer.json'), 'utf8') }).encode(TEXT).ids.length;
      row.keystroke = { forwardMs, drawMs, tokens };
      row.chromiumMemoryMB = chromiumMemoryMB();
    } else {
      row.message = (await page.locator('#sourceMessage').textContent())?.trim();
    }
    console.log(JSON.stringify(row));
    rows.push(row);
    await page.close();
  }
} finally {
  await browser.close();
  server.kill();
}
if (!only) writeFileSync(new URL('./largest-checkpoint-results.json', import.meta.url), JSON.stringify({ machine: machine(), chromium: browser.version(), rows }, null, 1));
