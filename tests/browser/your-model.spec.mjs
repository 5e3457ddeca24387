// The "Your model" page in Chromium: checkpoints handed to the file input, from a local imitation of
// the hub (size first, progress, a failing and a truncated download), stored for offline use;
// the grid, the enlarged head, roles, ablation, generation, BERT pairs, URL state, keyboard, phone.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test, expect, isolatedByServiceWorker } from './guard.mjs';
import { FIXTURES, expectedOutputs, maxAbsDiff, readSafetensors } from '../js/checkpoints.mjs';
import { VIRIDIS } from '../../web/common/colormap.mjs';

const PAGE = '/web/your-model.html';
const HUB = 'http://127.0.0.1:4181';
const filesOf = (model) => ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']
  .map((name) => join(FIXTURES, model, name));
const ready = (page) => page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 30000 });

async function openFixture(page, model, hash = '') {
  await page.goto(`${PAGE}${hash}`);
  await ready(page);
  await page.setInputFiles('#files', filesOf(model));
  await expect(page.locator('.mv-info')).toContainText('Loaded in');
  await ready(page);
}

test('from the landing page to every head of a dropped-in checkpoint', async ({ page }) => {
  await page.goto('/');
  await page.getByRole('link', { name: 'Your model' }).click();
  await expect(page).toHaveURL(/your-model\.html/);
  await ready(page);
  await page.setInputFiles('#files', filesOf('llama'));
  await expect(page.locator('.mv-info')).toContainText('llama, 2 layers × 4 heads (2 key/value heads)');
  await ready(page);
  await expect(page.locator('.mv-thumb')).toHaveCount(8);
  await expect(page.getByRole('button', { name: /^Layer 2, head 3/ })).toBeVisible();
  // The heads shown are the model's: the enlarged head's weights are transformers' numbers.
  const c = expectedOutputs('llama')[1];
  await page.locator('#mvText').fill(c.text);
  await ready(page);
  await expect(page.locator('.mv-tokens button')).toHaveCount(c.ids.length);
  await page.getByRole('button', { name: /^Layer 2, head 3/ }).click();
  const shown = await page.evaluate(() => Array.from(document.querySelector('.mv-head canvas')._model.weights));
  const n = c.ids.length, offset = (1 * 4 + 2) * n * n;
  expect(maxAbsDiff(shown, c.attentions.subarray(offset, offset + n * n))).toBeLessThan(1e-4);
  await expect(page.locator('.mv-roles tbody tr')).toHaveCount(8);
  expect(page.url()).toContain('head=2.3');
});

test('each thumbnail in the grid is its head\'s attention, drawn under its button (one canvas for the grid)', async ({ page }) => {
  await openFixture(page, 'gpt2');
  const c = expectedOutputs('gpt2')[1];
  await page.locator('#mvText').fill(c.text);
  await ready(page);
  // Switch L2 H1 off: its thumbnail is then drawn faded.
  await page.getByRole('button', { name: /^Layer 2, head 1/ }).click();
  await page.locator('#mvToggle').click();
  await ready(page);
  const n = c.ids.length;
  // The colour at the centre of every cell of every head, read back from the grid's canvas.
  const cells = await page.evaluate((n) => {
    const grid = document.querySelector('#mvGrid'), canvas = grid.querySelector('canvas');
    const scale = canvas.width / grid.clientWidth, ctx = canvas.getContext('2d');
    const pixels = ctx.getImageData(0, 0, canvas.width, canvas.height);
    return [...grid.querySelectorAll('.mv-thumb')].map((b) => {
      const out = [];
      for (let i = 0; i < n; i += 1) {
        for (let j = 0; j < n; j += 1) {
          const x = Math.floor((b.offsetLeft + b.clientLeft + ((j + 0.5) * b.clientWidth) / n) * scale);
          const y = Math.floor((b.offsetTop + b.clientTop + ((i + 0.5) * b.clientHeight) / n) * scale);
          const p = 4 * (y * canvas.width + x);
          out.push(Array.from(pixels.data.subarray(p, p + 4)));
        }
      }
      return { layer: Number(b.dataset.layer), head: Number(b.dataset.head), off: b.classList.contains('off'), out };
    });
  }, n);
  expect(cells).toHaveLength(8);
  for (const { layer, head, off, out } of cells) {
    expect(off).toBe(layer === 1 && head === 0);
    if (off) {  // faded: 30% opaque
      for (const [, , , alpha] of out) expect(Math.abs(alpha - 0.3 * 255)).toBeLessThan(3);
      continue;
    }
    // transformers' weights through the page's colour map: the head's own, at its own place.
    const offset = (layer * 4 + head) * n * n;
    out.forEach(([r, g, b, alpha], k) => {
      const index = Math.round(c.attentions[offset + k] * 255) * 3;
      const want = [VIRIDIS[index], VIRIDIS[index + 1], VIRIDIS[index + 2]];
      expect(alpha).toBe(255);
      expect(Math.max(Math.abs(r - want[0]), Math.abs(g - want[1]), Math.abs(b - want[2]))).toBeLessThanOrEqual(4);
    });
  }
});

test.describe('past 64 tokens', () => {
  test.use({ deviceScaleFactor: 2 });  // at least one device pixel per thumbnail pixel, so each can be read back
  test('a thumbnail pixel is the largest weight of the block of cells it covers', async ({ page }) => {
    await openFixture(page, 'gpt2');
    const words = 'the cat sat on a mat and then it ran off to see the dog who was not there'.split(' ');
    await page.locator('#mvText').fill(Array.from({ length: 90 }, (_, i) => words[i % words.length]).join(' '));
    await ready(page);
    const { n, weights, thumb } = await page.evaluate(() => {
      const grid = document.querySelector('#mvGrid'), canvas = grid.querySelector('canvas');
      const scale = canvas.width / grid.clientWidth, ctx = canvas.getContext('2d');
      const pixels = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
      const { nQ, weights } = document.querySelector('.mv-head canvas')._model;  // the selected head: layer 1, head 1
      const b = grid.querySelector('.mv-thumb');
      const thumb = [];
      for (let y = 0; y < 64; y += 1) {
        for (let x = 0; x < 64; x += 1) {
          const px = Math.floor((b.offsetLeft + b.clientLeft + ((x + 0.5) * b.clientWidth) / 64) * scale);
          const py = Math.floor((b.offsetTop + b.clientTop + ((y + 0.5) * b.clientHeight) / 64) * scale);
          thumb.push(Array.from(pixels.subarray(4 * (py * canvas.width + px), 4 * (py * canvas.width + px) + 4)));
        }
      }
      return { n: nQ, weights: Array.from(weights), thumb };
    });
    expect(n).toBeGreaterThan(64);
    const block = n / 64;
    let worst = 0, opaque = true;
    thumb.forEach(([r, g, b, alpha], k) => {
      const y = Math.floor(k / 64), x = k % 64;
      let max = 0;
      for (let i = Math.floor(y * block); i < Math.ceil((y + 1) * block); i += 1) {
        for (let j = Math.floor(x * block); j < Math.ceil((x + 1) * block); j += 1) max = Math.max(max, weights[i * n + j]);
      }
      const index = Math.round(max * 255) * 3;
      opaque &&= alpha === 255;
      worst = Math.max(worst, Math.abs(r - VIRIDIS[index]), Math.abs(g - VIRIDIS[index + 1]), Math.abs(b - VIRIDIS[index + 2]));
    });
    expect(opaque).toBe(true);
    expect(worst).toBeLessThanOrEqual(4);
  });
});

test('typing at the end computes only the tokens after the unchanged start; every head is still transformers\' attention', async ({ page }) => {
  await openFixture(page, 'gpt2');
  const c = expectedOutputs('gpt2')[1], n = c.ids.length;
  await page.locator('#mvText').fill(c.text.slice(0, -1));
  await ready(page);
  await page.locator('#mvText').press('End');
  await page.keyboard.type(c.text.slice(-1));
  await ready(page);
  const reused = Number(await page.locator('.timing').last().getAttribute('data-reused'));
  expect(reused).toBeGreaterThan(0);
  expect(reused).toBeLessThan(n);
  await expect(page.locator('.timing').last()).toContainText(`the first ${reused} tokens unchanged`);
  for (let layer = 0; layer < 2; layer += 1) {
    for (let head = 0; head < 4; head += 1) {
      await page.getByRole('button', { name: new RegExp(`^Layer ${layer + 1}, head ${head + 1}\\b`) }).click();
      const shown = await page.evaluate(() => Array.from(document.querySelector('.mv-head canvas')._model.weights));
      const offset = (layer * 4 + head) * n * n;
      expect(maxAbsDiff(shown, c.attentions.subarray(offset, offset + n * n)), `layer ${layer} head ${head}`).toBeLessThan(1e-4);
    }
  }
});

test('weights in memory at 2 bytes: a float32 GPT-2 in half the memory, its heads close to transformers', async ({ page }) => {
  await page.goto(PAGE);
  await ready(page);
  await page.selectOption('#weightType', 'f16');
  expect(page.url()).toContain('weights=f16');  // the choice lives in the link with the rest of the view
  await page.setInputFiles('#files', filesOf('gpt2'));
  await expect(page.locator('.mv-info')).toContainText('0.4 MB in memory, f16 matrices');  // 0.8 MB as stored
  await ready(page);
  const c = expectedOutputs('gpt2')[1];
  await page.locator('#mvText').fill(c.text);
  await ready(page);
  await page.getByRole('button', { name: /^Layer 1, head 1/ }).click();
  const shown = await page.evaluate(() => Array.from(document.querySelector('.mv-head canvas')._model.weights));
  const n = c.ids.length;
  const diff = maxAbsDiff(shown, c.attentions.subarray(0, n * n));
  expect(diff).toBeGreaterThan(0);  // rounded weights: not float32's numbers,
  expect(diff).toBeLessThan(5e-3);  // but close (pretrained_test.cpp measures ≤ 2e-3)
});

test('the weights\' type comes back from a link; a wrong one is ignored', async ({ page }) => {
  await page.goto(`${PAGE}#weights=bf16`);
  await ready(page);
  await expect(page.locator('#weightType')).toHaveValue('bf16');
  await page.setInputFiles('#files', filesOf('gpt2'));
  await expect(page.locator('.mv-info')).toContainText('bf16 matrices');
  await page.goto('about:blank');
  await page.goto(`${PAGE}#weights=f8`);
  await ready(page);
  await expect(page.locator('#weightType')).toHaveValue('');
  await page.setInputFiles('#files', filesOf('gpt2'));
  await expect(page.locator('.mv-info')).toContainText('f32 matrices');
});

// Hands the page a folder that is not a model, then `fixture`'s checkpoint cut after `bytes` bytes:
// each gets its reason in words.
async function notAModelThenTruncated(page, info, fixture, bytes) {
  const { readFileSync, writeFileSync, mkdirSync } = await import('node:fs');
  await page.setInputFiles('#files', [join(FIXTURES, 'README.md'), join(FIXTURES, 'manifest.json')]);
  await expect(page.locator('#sourceMessage')).toContainText('no config.json');
  const dir = info.outputPath('cut');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), readFileSync(join(FIXTURES, fixture, 'config.json')));
  writeFileSync(join(dir, 'model.safetensors'), readFileSync(join(FIXTURES, fixture, 'model.safetensors')).subarray(0, bytes));
  await page.setInputFiles('#files', [join(dir, 'config.json'), join(dir, 'model.safetensors')]);
  await expect(page.locator('#sourceMessage')).toContainText('truncated');
}

test('a folder that is not a model and a truncated checkpoint get a reason in words', async ({ page }, info) => {
  await page.goto(PAGE);
  await ready(page);
  await notAModelThenTruncated(page, info, 'qwen2', 200000);
  await page.setInputFiles('#files', filesOf('qwen2'));
  await expect(page.locator('.mv-info')).toContainText('qwen2');
});

test('a model, then a folder that is not a model, a truncated checkpoint, and a model again: no stale result, no console error', async ({ page }, info) => {
  await openFixture(page, 'gpt2');
  // A long text keeps the worker busy, so the page replaces the model while a result for it is due.
  await page.locator('#mvText').fill('The cat sat on the mat. '.repeat(30));
  await notAModelThenTruncated(page, info, 'gpt2', 300000);
  await page.setInputFiles('#files', filesOf('llama'));
  await expect(page.locator('.mv-info')).toContainText('llama, 2 layers × 4 heads');
  await ready(page);
  // The last model works: its heads are transformers' numbers for a new text.
  const c = expectedOutputs('llama')[1];
  await page.locator('#mvText').fill(c.text);
  await ready(page);
  await expect(page.locator('.mv-tokens button')).toHaveCount(c.ids.length);
  await page.getByRole('button', { name: /^Layer 1, head 2/ }).click();
  const shown = await page.evaluate(() => Array.from(document.querySelector('.mv-head canvas')._model.weights));
  const n = c.ids.length, offset = (0 * 4 + 1) * n * n;
  expect(maxAbsDiff(shown, c.attentions.subarray(offset, offset + n * n))).toBeLessThan(1e-4);
});

test('ablation, value-weighted attention, rollout and predictions; the URL reproduces the view', async ({ page }) => {
  await openFixture(page, 'gpt2');
  await page.locator('#mvText').fill('The cat sat on the mat. The cat sat on the');
  await ready(page);
  await expect(page.locator('.prediction')).toHaveCount(1);
  await page.getByRole('button', { name: /^Layer 2, head 1/ }).click();
  await page.locator('#mvToggle').click();
  await ready(page);
  await expect(page.locator('.prediction')).toHaveCount(2);
  await expect(page.locator('.prediction .actual')).toContainText('changes by');
  await page.selectOption('#mvMode', 'value');
  await ready(page);
  const rowSums = await page.evaluate(() => {
    const m = document.querySelector('.mv-head canvas')._model;
    return Array.from({ length: m.nQ }, (_, i) => m.weights.subarray(i * m.nK, (i + 1) * m.nK).reduce((a, b) => a + b, 0));
  });
  for (const s of rowSums) expect(s).toBeCloseTo(1, 4);
  await page.selectOption('#mvMode', 'rollout');
  await ready(page);
  await expect(page.locator('.mv-head figcaption')).toContainText('rollout');
  const url = page.url();
  expect(url).toContain('off=2.1');
  expect(url).toContain('mode=rollout');
  // The same link in a new page asks for the files again (local files cannot live in a URL)…
  await page.goto(url.replace(/#/, '?again#'));
  await ready(page);
  await expect(page.locator('#sourceMessage')).toContainText('drop or pick the checkpoint again');
  // …and once they are given, shows the same view.
  await page.setInputFiles('#files', filesOf('gpt2'));
  await expect(page.locator('.mv-info')).toContainText('Loaded in');
  await ready(page);
  await expect(page.locator('#mvMode')).toHaveValue('rollout');
  await expect(page.locator('.mv-thumb.off')).toHaveCount(1);
});

test('typing writes the link once the text is still, and the link brings the text back', async ({ page }) => {
  await openFixture(page, 'gpt2');
  await page.locator('#mvText').fill('Once upon');
  await page.locator('#mvText').pressSequentially(' a time', { delay: 30 });
  await ready(page);
  // Written after a pause in the typing (not on every keystroke), with the rest of the view.
  await expect(page).toHaveURL(/text=Once\+upon\+a\+time(&|$)/);
  await page.getByRole('button', { name: /^Layer 2, head 4/ }).click();
  await expect(page).toHaveURL(/head=2\.4/);  // a click is written at once
  await page.goto(page.url().replace(/#/, '?again#'));
  await page.setInputFiles('#files', filesOf('gpt2'));
  await expect(page.locator('.mv-info')).toContainText('Loaded in');
  await ready(page);
  await expect(page.locator('#mvText')).toHaveValue('Once upon a time');
  await expect(page.getByRole('button', { name: /^Layer 2, head 4/ })).toHaveAttribute('aria-pressed', 'true');
});

test('generation streams each token with its attention row per head, and stops', async ({ page }) => {
  await openFixture(page, 'qwen2');
  await page.locator('#mvText').fill('The cat sat on the');
  await ready(page);
  await page.locator('#mvGenMax').fill('6');
  await page.locator('#mvGenerate').click();
  await expect(page.locator('#mvGenerated .new')).toHaveCount(6);
  await expect(page.locator('.mv-strips canvas')).toHaveCount(8);
  await expect(page.locator('#mvGenerate')).toBeEnabled();
  // Stop pressed in the same task as Generate: the worker, yielding a turn between tokens (no
  // timer), must still hear it while it generates, and end long before 200 tokens.
  await page.locator('#mvGenMax').fill('200');
  await page.evaluate(() => { document.querySelector('#mvGenerate').click(); document.querySelector('#mvStop').click(); });
  await expect(page.locator('#mvGenerated')).toContainText('[stopped]');
  expect(await page.locator('#mvGenerated .new').count()).toBeLessThan(200);
});

test('BERT: a sentence pair with its token types, predictions at [MASK]', async ({ page }) => {
  await openFixture(page, 'bert');
  await expect(page.locator('#mvPair')).toBeVisible();
  await page.locator('#mvText').fill('the cat sat on the [MASK].');
  await page.locator('#mvPair').fill('it was tired.');
  await ready(page);
  await expect(page.locator('.mv-tokens button.type1').first()).toBeVisible();
  await expect(page.locator('.mv-predict, section h3').filter({ hasText: 'fills in' })).toContainText('[MASK]');
  await expect(page.locator('#mvGenerate')).toBeHidden();
});

test('why this prediction: lens, attribution, patching, contributions, by keyboard too; the URL brings it back', async ({ page }) => {
  const text = 'When Mr. Darcy and Elizabeth went to the house, Darcy gave a letter to';
  await openFixture(page, 'gpt2', `#text=${encodeURIComponent(text)}`);
  // The lens: layers + 1 rows of cells, each a button with its top token; a click gives the top 5.
  await page.getByRole('button', { name: 'Logit lens' }).click();
  await ready(page);
  const cells = page.locator('#whyGrid button');
  await expect(cells.first()).toBeVisible();
  const n = Number(await page.locator('.mv-tokens button').count());
  expect(await cells.count()).toBe(3 * Math.min(n, 24));
  await cells.last().focus();
  await page.keyboard.press('Enter');
  await expect(page.locator('#whyDetail li')).toHaveCount(5);
  expect(page.url()).toContain('why=lens');
  // Edits faster than the worker answers: the grid ends on the last text.
  for (const extra of [' the', ' the letter', '']) await page.locator('#mvText').fill(text + extra);
  await ready(page);
  await expect(cells).toHaveCount(3 * Math.min(n, 24));
  await expect(page.locator('#whyGrid .why-head').nth(Math.min(n, 24) - 1)).toHaveText(' to');
  // Attribution: layers × (heads + MLP); the parts and the norm's bias sum to the logit.
  await page.getByRole('button', { name: 'Head attribution' }).click();
  await expect(page.locator('#whySummary')).toContainText('they sum to');
  await expect(cells).toHaveCount(2 * 5);
  const summary = await page.locator('#whySummary').textContent();
  const [logit, sum] = [/= (-?\d+\.\d+):/.exec(summary)[1], /they sum to (-?\d+\.\d+)/.exec(summary)[1]];
  expect(Number(sum)).toBeCloseTo(Number(logit), 2);
  await page.getByRole('button', { name: /^layer 2, head 3:/ }).click();  // opens that head's heatmap
  expect(page.url()).toContain('head=2.3');
  // Patching: the corrupted prompt is prefilled with the other name; progress, then a recovered map.
  await page.getByRole('button', { name: 'Patching' }).click();
  await expect(page.locator('#whyCorrupt')).toHaveValue(text.replace(/Darcy gave/, 'Elizabeth gave'));
  await page.locator('#whyRun').click();
  await expect(page.locator('#whySummary')).toContainText('Recovered share');
  await expect(cells).toHaveCount(2 * 4);
  await page.selectOption('#whyWhat', 'residual');
  await page.locator('#whyRun').click();
  await expect(page.locator('#whySummary')).toContainText('Recovered share');
  expect(await cells.count()).toBe(2 * n);
  // The same prompts: nothing to recover, said in words.
  await page.locator('#whyCorrupt').fill(text);
  await page.locator('#whyRun').click();
  await expect(page.locator('#whySummary')).toContainText('nothing to recover');
  // Contributions: a graph of the tokens across layers.
  await page.getByRole('button', { name: 'Contributions' }).click();
  await expect(page.locator('#whyGraph svg line').first()).toBeAttached();
  // The link brings the panel back.
  const url = page.url();
  expect(url).toContain('why=contributions');
  await page.goto('about:blank');
  await openFixture(page, 'gpt2', new URL(url).hash);
  await expect(page.locator('#why-contributions')).toHaveAttribute('aria-pressed', 'true');
  await expect(page.locator('#whyGraph svg')).toBeAttached();
});

test('the widget: view="lens" and view="attribution" open those panels for a checkpoint', async ({ page }) => {
  await page.goto('/tests/browser/fixtures/widget-why.html');
  for (const [id, panel] of [['lens', 'Logit lens'], ['attribution', 'Head attribution']]) {
    const widget = page.locator(`#${id}`);
    await expect(widget).toHaveAttribute('data-ready', 'true', { timeout: 30000 });
    await expect(widget.getByRole('button', { name: panel })).toHaveAttribute('aria-pressed', 'true');
    await expect(widget.locator('#whyGrid button').first()).toBeVisible();
  }
});

test('RoBERTa: predictions at <mask>, and the hint names its mask token', async ({ page }) => {
  await openFixture(page, 'roberta');
  await expect(page.locator('.mv-info')).toContainText('roberta, 2 layers × 4 heads');
  await page.locator('#mvText').fill('the cat sat on the mat.');
  await ready(page);
  await expect(page.locator('.mv-predict, section h3').filter({ hasText: 'fills in' })).toContainText('type <mask>');
  await page.locator('#mvText').fill('the cat sat on the<mask>.');
  await ready(page);
  await expect(page.locator('.mv-predict, section h3').filter({ hasText: 'fills in' })).toContainText('<mask>');
  await expect(page.locator('.mv-predict, section h3').filter({ hasText: 'fills in' })).not.toContainText('type <mask>');
  // The lens of an encoder reads the masked position through its MLM head, after each layer;
  // attribution and patching need a decoder.
  await page.getByRole('button', { name: 'Logit lens' }).click();
  await expect(page.locator('#whyGrid button')).toHaveCount(3);
  await expect(page.getByRole('button', { name: 'Head attribution' })).toBeDisabled();
  await expect(page.getByRole('button', { name: 'Patching' })).toBeDisabled();
});

test('Gemma 3: the page names its local layers, and their heads are banded as the reference\'s are', async ({ page }) => {
  await openFixture(page, 'gemma3');
  await expect(page.locator('.mv-info')).toContainText('Local layers (each token sees itself and the 7 before it): 1, 2; the others see the whole text.');
  const c = expectedOutputs('gemma3')[2], n = c.ids.length;
  expect(n).toBeGreaterThan(8);
  await page.locator('#mvText').fill(c.text);
  await ready(page);
  for (const [layer, local] of [[0, true], [2, false]]) {
    await page.getByRole('button', { name: new RegExp(`^Layer ${layer + 1}, head 2\\b`) }).click();
    const shown = await page.evaluate(() => Array.from(document.querySelector('.mv-head canvas')._model.weights));
    const offset = (layer * 4 + 1) * n * n;
    expect(maxAbsDiff(shown, c.attentions.subarray(offset, offset + n * n)), `layer ${layer}`).toBeLessThan(1e-4);
    let outside = 0;
    for (let i = 0; i < n; i += 1) for (let j = 0; j <= i - 8; j += 1) outside += shown[i * n + j];
    if (local) expect(outside).toBe(0);
    else expect(outside).toBeGreaterThan(0);
  }
});

test.describe('with the service worker', () => {
  test.use({ serviceWorkers: 'allow' });
  test('from the hub: the size first, then a download with progress, stored and opened offline', async ({ page, context }) => {
    await page.goto(PAGE);
    await isolatedByServiceWorker(page);
    await ready(page);
    await page.locator('#hubId').fill(`${HUB}/llama/resolve/main/`);
    await page.locator('#hubLoad').click();
    await expect(page.locator('#confirmText')).toContainText('MB');
    await expect(page.locator('#confirmText')).toContainText('model.safetensors');
    await page.locator('#download').click();
    await expect(page.locator('.mv-info')).toContainText('Loaded in');
    await ready(page);
    await expect(page.locator('#stored li')).toHaveCount(1);
    expect(page.url()).toContain('model=http');
    // Offline, the link opens the stored copy.
    await page.evaluate(async () => { await navigator.serviceWorker.ready; });
    const url = page.url();
    await context.setOffline(true);
    await page.goto(url);
    await expect(page.locator('.mv-info')).toContainText('Loaded in');
    await ready(page);
    await expect(page.locator('.mv-thumb')).toHaveCount(8);
    await context.setOffline(false);
    await page.getByRole('button', { name: /^Delete/ }).click();
    await expect(page.locator('#storedBox')).toBeHidden();
  });
});

test('a failing server and a download that breaks off are reported, and nothing half-stored is kept', async ({ page }) => {
  await page.goto(PAGE);
  await ready(page);
  // Chromium itself logs the dropped connection and the 500 (the page shows its own message).
  page.expectConsoleErrors(/ERR_CONTENT_LENGTH_MISMATCH|status of 500/);
  await page.locator('#hubId').fill(`${HUB}/truncated/resolve/main/`);
  await page.locator('#hubLoad').click();
  await page.locator('#download').click();
  await expect(page.locator('#sourceMessage')).toContainText(/broke off|truncated/);
  await expect(page.locator('#storedBox')).toBeHidden();
  await page.locator('#hubId').fill(`${HUB}/broken/resolve/main/`);
  await page.locator('#hubLoad').click();
  await expect(page.locator('#sourceMessage')).toContainText('HTTP 500');
});

test('keyboard only, and a phone-sized screen', async ({ page }) => {
  await page.setViewportSize({ width: 375, height: 800 });
  await openFixture(page, 'gpt2');
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
  await page.getByRole('button', { name: /^Layer 1, head 1/ }).focus();
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowDown');
  await expect(page.getByRole('button', { name: /^Layer 2, head 2/ })).toBeFocused();
  expect(page.url()).toContain('head=2.2');
  await page.locator('.mv-head canvas').focus();
  await page.keyboard.press('ArrowDown');
  await expect(page.locator('.mv-head + .readout, .readout').first()).toContainText('→');
  // The head-roles table fits the phone's width (it had run 16 px past its box, its last column cut).
  await expect(page.locator('.mv-roles tbody tr')).toHaveCount(8);
  const roles = await page.locator('.mv-roles').evaluate((t) => ({ table: t.scrollWidth, box: t.closest('.table-wrap').clientWidth }));
  expect(roles.table).toBeLessThanOrEqual(roles.box);
  await page.screenshot({ path: test.info().outputPath('phone.png'), fullPage: true });
});

test('the widget: <multihead-attention view="model" src="…"> from this site at once, from another on a click', async ({ page }) => {
  await page.goto('/tests/browser/fixtures/widget-model.html');
  const local = page.locator('#local');
  await expect(local).toHaveAttribute('data-ready', 'true', { timeout: 30000 });
  await expect(local.locator('.mv-thumb')).toHaveCount(8);
  await expect(local.getByRole('button', { name: /^Layer 2, head 3/ })).toHaveAttribute('aria-pressed', 'true');
  const { Tokenizer } = await import('../../bindings/tokenizers/tokenizer.mjs');
  const { readFileSync } = await import('node:fs');
  const tokenizer = new Tokenizer(JSON.parse(readFileSync(join(FIXTURES, 'llama', 'tokenizer.json'), 'utf8')));
  await expect(local.locator('.mv-tokens button')).toHaveCount(tokenizer.encode('The cat sat on the mat.').ids.length);
  const remote = page.locator('#remote');
  await expect(remote.locator('.mv-thumb')).toHaveCount(0);
  // Before the reader's click there is no model: no text box, legend or "Measuring each head's role".
  await expect(remote.getByRole('button', { name: /^Load .* from 127\.0\.0\.1:4181/ })).toBeVisible();
  await expect(remote.locator('#mvText')).toBeHidden();
  await expect(remote.locator('#mvMode')).toBeHidden();
  await expect(remote.getByText('Measuring each head')).toBeHidden();
  // The predictions' word, bar and percentage keep their columns on a phone.
  await page.setViewportSize({ width: 375, height: 800 });
  const gap = await local.locator('.prediction li').first().evaluate((li) => {
    const [word, , num] = li.children;
    return num.getBoundingClientRect().left - word.getBoundingClientRect().right;
  });
  expect(gap).toBeGreaterThan(4);
  await page.setViewportSize({ width: 1280, height: 800 });
  await remote.getByRole('button', { name: /^Load .* from 127\.0\.0\.1:4181/ }).click();
  await remote.getByRole('button', { name: /^Download .* MB/ }).click();
  await expect(remote).toHaveAttribute('data-ready', 'true', { timeout: 30000 });
  await expect(remote.locator('.mv-thumb')).toHaveCount(8);
  await page.evaluate(() => document.querySelector('#remote').setAttribute('sentence', 'A new sentence here'));
  await expect(remote.locator('.mv-tokens')).toContainText('new');
});

test('a GGUF file picked like a checkpoint: its tokenizer, every head, the reference\'s attention, its 4-bit blocks', async ({ page }) => {
  const dir = join(FIXTURES, '..', 'gguf', 'llama-q4_k_m');
  const reference = JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8')).cases[0];
  const expected = readSafetensors(new Uint8Array(readFileSync(join(dir, 'expected.safetensors'))));
  const attentions = expected.get('case0.attentions');
  const want = new Float32Array(attentions.bytes.buffer.slice(attentions.bytes.byteOffset, attentions.bytes.byteOffset + attentions.bytes.length));
  await page.goto(PAGE);
  await ready(page);
  await page.setInputFiles('#files', [join(dir, 'model.gguf')]);
  await expect(page.locator('.mv-info')).toContainText('llama, 4 layers × 4 heads (2 key/value heads)');
  await expect(page.locator('.mv-info')).toContainText('4-bit (GGUF blocks) matrices');
  await ready(page);
  await expect(page.locator('.mv-thumb')).toHaveCount(16);
  await page.locator('#mvText').fill(reference.text);
  await ready(page);
  // The file's own tokenizer: llama.cpp's pieces (BOS first).
  await expect(page.locator('.mv-tokens button')).toHaveCount(reference.ids.length);
  await page.getByRole('button', { name: /^Layer 4, head 2/ }).click();
  const shown = await page.evaluate(() => Array.from(document.querySelector('.mv-head canvas')._model.weights));
  const n = reference.ids.length, offset = (3 * 4 + 1) * n * n;
  // Its products over 4-bit blocks quantize the rows to 8 bits (Q4_K's once for 256 values), as
  // llama.cpp does: the attentions move by up to 1.1e-2 from the float64 reference (tests/js/gguf.test.mjs).
  expect(maxAbsDiff(shown, want.subarray(offset, offset + n * n))).toBeLessThan(2e-2);
});

test('an image model opens in the image view, and a text model after it gets the text view back', async ({ page }) => {
  await page.goto(PAGE);
  await ready(page);
  await page.setInputFiles('#files', ['config.json', 'model.safetensors', 'preprocessor_config.json'].map((name) => join(FIXTURES, 'vit', name)));
  await expect(page.locator('.mv-info')).toContainText('vit image model', { timeout: 30000 });
  await ready(page);
  await expect(page.locator('.iv-figure')).toBeVisible();
  await expect(page.locator('#mvText')).toBeHidden();
  await page.setInputFiles('#files', filesOf('llama'));
  await expect(page.locator('.mv-info')).toContainText('llama, 2 layers');
  await ready(page);
  await expect(page.locator('.iv-figure')).toBeHidden();
  await expect(page.locator('.mv-thumb')).toHaveCount(8);
  expect(page.url()).not.toContain('image=');
});
