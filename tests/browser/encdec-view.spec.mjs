// The encoder-decoder view of "Your model" and the widget's view="model" with an encoder-decoder,
// in Chromium, with the T5, BART and Marian fixtures (2 + 2 layers × 4 heads). What the page draws
// is checked against the library's own numbers for the same texts, computed here through the
// public API in Node (loadPretrained, tokenize, tokenizeTarget, run, generate), not by the page's code:
// each cell's colour is viridis at its weight, as common/heatmap.mjs colours weights from 0 to 1.
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { test, expect } from './guard.mjs';
import { FIXTURES } from '../js/checkpoints.mjs';
import { VIRIDIS } from '../../web/common/colormap.mjs';

const PAGE = '/web/your-model.html';
const files = (family) => readdirSync(join(FIXTURES, family)).filter((f) => !f.startsWith('expected')).map((f) => join(FIXTURES, family, f));
const ready = (page) => page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 30000 });
const SOURCE = 'The cat sat on the mat.';
const TARGET = 'Die Katze saß auf der Matte.';

// The library in Node, on the same fixture files the page is handed (one model a family).
const models = new Map();
const modelOf = async (family) => {
  if (!models.has(family)) models.set(family, (await import('../../bindings/multihead.mjs')).loadPretrained(join(FIXTURES, family, '/')));
  return models.get(family);
};

// The three kinds of attention for a source and a target, through the API.
async function apiRun(family, source, target) {
  const model = await modelOf(family);
  const s = model.tokenize(source), t = model.tokenizeTarget(target);
  const out = model.run(s.ids, { decoderInputIds: [model.config.decoderStartTokenId, ...Array.from(t.ids).slice(0, -1)] });
  return { sourceIds: Array.from(s.ids), targetIds: Array.from(t.ids), n: s.ids.length, m: t.ids.length,
    encoder: Array.from(out.encoderAttentions), decoder: Array.from(out.decoderAttentions), cross: Array.from(out.crossAttentions) };
}

// Greedy generation through the API: each token's id and cross-attention row, and the text.
async function apiGenerate(family, source, options) {
  const model = await modelOf(family);
  const steps = [];
  for await (const step of model.generate(model.tokenize(source).ids, options)) steps.push({ id: step.id, cross: Array.from(step.crossAttention) });
  return { steps, text: model.decode(steps.map((s) => s.id)) };
}

// Head (l, h) of layers × 4 heads × rows × cols; h = 4: layer l's mean; l = -1: the mean over all.
function matrix(attentions, layers, rows, cols, l, h) {
  const size = rows * cols, at = (L, H) => attentions.slice((L * 4 + H) * size, (L * 4 + H + 1) * size);
  if (h < 4) return at(l, h);
  const picked = [];
  for (let L = l < 0 ? 0 : l; L < (l < 0 ? layers : l + 1); L += 1) for (let H = 0; H < 4; H += 1) picked.push(at(L, H));
  return Array.from({ length: size }, (_, i) => picked.reduce((sum, m) => sum + m[i], 0) / picked.length);
}
const colour = (w) => { const level = Math.max(0, Math.min(255, Math.round(w * 255))); return [VIRIDIS[3 * level], VIRIDIS[3 * level + 1], VIRIDIS[3 * level + 2]]; };
const same = (got, want, tolerance = 0) => got.every((p, i) => p.every((v, k) => Math.abs(v - want[i][k]) <= tolerance));

// The colour at the centre of each cell of the enlarged matrix (its geometry: common/heatmap.mjs).
const largeColours = (page) => page.locator('#edLarge').evaluate((c) => {
  const g = c._geom, { nQ, nK } = c._model, scale = c.width / c.clientWidth;
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, out = [];
  for (let i = 0; i < nQ; i += 1) for (let j = 0; j < nK; j += 1) {
    const at = 4 * (Math.floor((g.top + (i + 0.5) * g.cell) * scale) * c.width + Math.floor((g.left + (j + 0.5) * g.cell) * scale));
    out.push([d[at], d[at + 1], d[at + 2]]);
  }
  return out;
});
// …and of each cell of grid tile (l, h) (its layout: the canvas's data-layout).
const tileColours = (page, l, h, rows, cols) => page.locator('#edGrid').evaluate((c, { l, h, rows, cols }) => {
  const layout = JSON.parse(c.dataset.layout), scale = c.width / layout.width;
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, out = [];
  const x0 = layout.left + h * (layout.tileW + 3), y0 = layout.top + l * (layout.tileH + 3);
  for (let i = 0; i < rows; i += 1) for (let j = 0; j < cols; j += 1) {
    const at = 4 * (Math.floor((y0 + (i + 0.5) * layout.tileH / rows) * scale) * c.width + Math.floor((x0 + (j + 0.5) * layout.tileW / cols) * scale));
    out.push([d[at], d[at + 1], d[at + 2]]);
  }
  return out;
}, { l, h, rows, cols });

async function grab(page, kind) {
  const [download] = await Promise.all([page.waitForEvent('download'), page.locator(`[data-export="encdec-${kind}"]`).click()]);
  const chunks = [];
  for await (const chunk of await download.createReadStream()) chunks.push(chunk);
  return { name: download.suggestedFilename(), bytes: Buffer.concat(chunks) };
}
const hashParam = (page, key) => new URLSearchParams(new URL(page.url()).hash.slice(1)).get(key);
const flat = (nested) => nested.flat(Infinity);
const within = (got, want, tolerance) => got.length === want.length && got.every((v, i) => Math.abs(v - want[i]) <= tolerance);

test('T5: cross-attention drawn as the API computes it, hover lights the source, means and alignment, kinds, keyboard, exports, URL', async ({ page }) => {
  await page.goto(`${PAGE}#text=${encodeURIComponent(SOURCE)}&output=${encodeURIComponent(TARGET)}&head=2.3`);
  await ready(page);
  await page.setInputFiles('#files', files('t5'));
  await expect(page.locator('.mv-info')).toContainText('t5 encoder-decoder, 2 encoder + 2 decoder layers × 4 heads');
  await ready(page);
  await expect(page.locator('#mvText')).toBeHidden();
  const api = await apiRun('t5', SOURCE, TARGET);
  const { n, m } = api;
  await expect(page.locator('#edCols button')).toHaveCount(n);
  await expect(page.locator('#edRows button')).toHaveCount(m);
  await expect(page.locator('.ed-figure figcaption')).toHaveText('Cross-attention: target → source, layer 2, head 3');
  expect(same(await largeColours(page), matrix(api.cross, 2, m, n, 1, 2).map(colour))).toBe(true);
  // Every tile of the grid: the 8 heads, each layer's mean and the mean over all.
  for (let l = 0; l < 2; l += 1) for (let h = 0; h <= 4; h += 1) {
    expect(same(await tileColours(page, l, h, m, n), matrix(api.cross, 2, m, n, l, h).map(colour)), `tile L${l + 1} ${h === 4 ? 'mean' : `H${h + 1}`}`).toBe(true);
  }
  expect(same(await tileColours(page, 2, 4, m, n), matrix(api.cross, 2, m, n, -1, 4).map(colour)), 'the mean over all').toBe(true);

  // Hovering target token 3 lights the source tokens by its row's weights; the largest is marked.
  const row = matrix(api.cross, 2, m, n, 1, 2).slice(3 * n, 4 * n);
  await page.locator('#edRows button').nth(3).hover();
  await expect(page.locator('#edRows button').nth(3)).toHaveClass(/lit/);
  const lit = await page.locator('#edCols button').evaluateAll((bs) => bs.map((b) => Number(b.dataset.weight)));
  expect(within(lit, row, 1e-6)).toBe(true);
  const best = row.indexOf(Math.max(...row));
  await expect(page.locator('#edCols button.best')).toHaveCount(1);
  expect(await page.locator('#edCols button.best').getAttribute('data-index')).toBe(String(best));
  // The alignment: each target token's most-attended source token, as the API's weights say.
  const colTexts = await page.locator('#edCols button').allTextContents();
  const aligned = await page.locator('#edAlign tr').evaluateAll((rows) => rows.map((r) => r.cells[2].textContent));
  const head = matrix(api.cross, 2, m, n, 1, 2);
  expect(aligned).toEqual(Array.from({ length: m }, (_, i) => { const r = head.slice(i * n, (i + 1) * n); return colTexts[r.indexOf(Math.max(...r))]; }));

  // The mean over all, chosen on the grid: enlarged, in the URL, and its alignment.
  await page.locator('#edGrid').scrollIntoViewIfNeeded();
  const layout = JSON.parse(await page.locator('#edGrid').getAttribute('data-layout'));
  const box = await page.locator('#edGrid').boundingBox();
  await page.mouse.click(box.x + layout.left + 4 * (layout.tileW + 3) + layout.tileW / 2, box.y + layout.top + 2 * (layout.tileH + 3) + layout.tileH / 2);
  await expect(page.locator('.ed-figure figcaption')).toContainText('the mean over every layer and head');
  await expect(page).toHaveURL(/avg=all/);
  expect(same(await largeColours(page), matrix(api.cross, 2, m, n, -1, 4).map(colour))).toBe(true);
  // Keyboard on the grid: up to layer 2's mean, left to its head 4.
  await page.locator('#edGrid').focus();
  await page.keyboard.press('ArrowUp');
  await expect(page.locator('.ed-figure figcaption')).toContainText("layer 2's mean over its 4 heads");
  await expect(page).toHaveURL(/avg=layer/);
  expect(same(await largeColours(page), matrix(api.cross, 2, m, n, 1, 4).map(colour))).toBe(true);
  await page.keyboard.press('ArrowLeft');
  await expect(page.locator('.ed-figure figcaption')).toContainText('layer 2, head 4');
  await expect(page).toHaveURL(/head=2\.4/);
  await expect(page).not.toHaveURL(/avg=/);
  // Keyboard on the enlarged matrix: the arrows read the weights.
  await page.locator('#edLarge').focus();
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowRight');
  const w = matrix(api.cross, 2, m, n, 1, 3)[1 * n + 1];
  await expect(page.locator('.ed-figure .readout')).toContainText(`(1) → `);
  await expect(page.locator('.ed-figure .readout')).toContainText(w.toFixed(4));

  // The exports: every cross-attention head as CSV, everything as JSON, the figure as PNG and SVG.
  const csv = (await grab(page, 'csv')).bytes.toString('utf8').trim().split('\n');
  expect(csv[0]).toBe('kind,layer,head,row_index,row_token,col_index,col_token,weight');
  expect(csv).toHaveLength(1 + 2 * 4 * m * n);
  expect(within(csv.slice(1).map((line) => Number(line.split(',').at(-1))), api.cross, 1e-6)).toBe(true);
  const json = JSON.parse((await grab(page, 'json')).bytes.toString('utf8'));
  expect(json.sourceIds).toEqual(api.sourceIds);
  expect(json.targetIds).toEqual(api.targetIds);
  expect(within(flat(json.crossAttentions), api.cross, 1e-6)).toBe(true);
  expect(within(flat(json.encoderAttentions), api.encoder, 1e-6)).toBe(true);
  expect(within(flat(json.decoderAttentions), api.decoder, 1e-6)).toBe(true);
  const svg = await grab(page, 'svg');
  expect(svg.name).toMatch(/\.svg$/);
  expect(svg.bytes.toString('utf8').match(/<rect /g)).toHaveLength(m * n);
  expect([...(await grab(page, 'png')).bytes.subarray(1, 4)].map((c) => String.fromCharCode(c)).join('')).toBe('PNG');
  expect([...(await grab(page, 'grid')).bytes.subarray(1, 4)].map((c) => String.fromCharCode(c)).join('')).toBe('PNG');

  // The encoder's and the decoder's self-attention: the other two views, in the URL.
  await page.locator('#edKind').selectOption('encoder');
  await expect(page).toHaveURL(/view=encoder/);
  await expect(page.locator('#edRows button')).toHaveCount(n);
  expect(same(await largeColours(page), matrix(api.encoder, 2, n, n, 1, 3).map(colour))).toBe(true);
  await page.locator('#edKind').selectOption('decoder');
  await expect(page.locator('#edCols button')).toHaveCount(m);
  expect(same(await largeColours(page), matrix(api.decoder, 2, m, m, 1, 3).map(colour))).toBe(true);

  // A link's state is followed: another source and target, cross-attention of layer 1, head 2.
  const other = await apiRun('t5', 'A dog runs.', 'Ein Hund läuft.');
  await page.evaluate(() => { location.hash = `#text=${encodeURIComponent('A dog runs.')}&output=${encodeURIComponent('Ein Hund läuft.')}&view=cross&head=1.2`; });
  await ready(page);
  await expect(page.locator('#edSource')).toHaveValue('A dog runs.');
  await expect(page.locator('#edTarget')).toHaveValue('Ein Hund läuft.');
  await expect(page.locator('.ed-figure figcaption')).toHaveText('Cross-attention: target → source, layer 1, head 2');
  await expect(page.locator('#edCols button')).toHaveCount(other.n);
  expect(same(await largeColours(page), matrix(other.cross, 2, other.m, other.n, 0, 1).map(colour))).toBe(true);
  // Typing a target is computed and written to the link.
  await page.locator('#edTarget').fill(TARGET);
  await ready(page);
  await expect.poll(() => hashParam(page, 'output')).toBe(TARGET);
});

test('T5: generation draws each token\'s cross-attention row as it comes, equal to generate()\'s; Stop aborts', async ({ page }) => {
  await page.goto(`${PAGE}#text=${encodeURIComponent(SOURCE)}`);
  await ready(page);
  await page.setInputFiles('#files', files('t5'));
  await ready(page);
  // The rows drawn, as they come: the enlarged matrix's data-rows at every change.
  await page.evaluate(() => {
    window.rowsSeen = [];
    new MutationObserver(() => window.rowsSeen.push(Number(document.querySelector('#edLarge').dataset.rows)))
      .observe(document.querySelector('#edLarge'), { attributes: true, attributeFilter: ['data-rows'] });
  });
  await page.locator('#edMax').fill('10');
  await page.locator('#edMin').fill('10');
  await page.locator('#edGenerate').click();
  await expect(page.locator('#edGenStatus')).toHaveText('Generated 10 tokens.');
  await ready(page);
  // Every count from 1 to 10 was drawn, in order (the same count again: a redraw of the same rows).
  const seen = await page.evaluate(() => window.rowsSeen);
  expect(seen.filter((v, i) => i === 0 || v !== seen[i - 1])).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  const api = await apiGenerate('t5', SOURCE, { maxNewTokens: 10, minNewTokens: 10 });
  await expect(page.locator('#edTarget')).toHaveValue(api.text);
  await expect.poll(() => hashParam(page, 'output')).toBe(api.text);
  const json = JSON.parse((await grab(page, 'json')).bytes.toString('utf8'));
  expect(json.generation.map((g) => g.id)).toEqual(api.steps.map((s) => s.id));
  json.generation.forEach((g, i) => expect(within(flat(g.crossAttention), api.steps[i].cross, 1e-7), `token ${i + 1}`).toBe(true));
  // Then the generated ids, teacher-forced: the same rows, and the three kinds of attention.
  expect(json.targetIds).toEqual(api.steps.map((s) => s.id));
  const n = json.sourceIds.length;
  for (let i = 0; i < 10; i += 1) {
    const forced = json.crossAttentions.flatMap((layer) => layer.map((head) => head[i])).flat();
    expect(within(forced, api.steps[i].cross, 1e-5), `row ${i + 1} teacher-forced`).toBe(true);
  }
  await expect(page.locator('#edRows button')).toHaveCount(10);
  await expect(page.locator('#edCols button')).toHaveCount(n);

  // Stop: a long generation (at least 500 tokens) stops between two tokens; the page works on.
  await page.locator('#edMax').fill('500');
  await page.locator('#edMin').fill('500');
  await page.locator('#edGenerate').click();
  await expect(page.locator('#edGenerate')).toBeDisabled();
  // (the generation's own count: the rows shown before it, 10, stay until its first token is drawn)
  const generated = async () => Number((/^(\d+) new tokens? so far/.exec(await page.locator('.ed-timing').textContent()) ?? [0, 0])[1]);
  await expect.poll(generated).toBeGreaterThanOrEqual(3);
  await page.locator('#edStop').click();
  await expect(page.locator('#edGenStatus')).toHaveText(/^Stopped after \d+ tokens?\.$/);
  const stoppedAt = Number((await page.locator('#edGenStatus').textContent()).match(/\d+/)[0]);
  expect(stoppedAt).toBeGreaterThanOrEqual(3);
  expect(stoppedAt).toBeLessThan(500);
  await ready(page);
  await expect(page.locator('#edGenerate')).toBeEnabled();
  await expect(page.locator('#edRows button')).toHaveCount(stoppedAt);
});

test('BART and Marian load and draw; a source too long is said in words and the last view stays; 375 px', async ({ page }) => {
  await page.setViewportSize({ width: 375, height: 800 });
  await page.goto(`${PAGE}#text=${encodeURIComponent(SOURCE)}&output=${encodeURIComponent(TARGET)}&head=1.4`);
  await ready(page);
  await page.setInputFiles('#files', files('bart'));
  await expect(page.locator('.mv-info')).toContainText('bart encoder-decoder');
  await ready(page);
  const bart = await apiRun('bart', SOURCE, TARGET);
  await expect(page.locator('#edCols button')).toHaveCount(bart.n);
  expect(same(await largeColours(page), matrix(bart.cross, 2, bart.m, bart.n, 0, 3).map(colour))).toBe(true);
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);

  // BART reads at most 128 positions: a longer source is refused in words, the last view kept.
  await page.locator('#edSource').fill('the cat '.repeat(100));
  await expect(page.locator('.ed .messages')).toContainText('This input was not shown: the source has');
  await expect(page.locator('.ed .messages')).toContainText('at most 128');
  await ready(page);
  await expect(page.locator('#edCols button')).toHaveCount(bart.n);
  expect(same(await largeColours(page), matrix(bart.cross, 2, bart.m, bart.n, 0, 3).map(colour))).toBe(true);
  await page.locator('#edSource').fill(SOURCE);
  await ready(page);
  await expect(page.locator('.ed .messages')).toHaveText('');
  // An empty target: the tokens the target tokenizer makes of nothing (BART: <s> </s>), drawn.
  const empty = await apiRun('bart', SOURCE, '');
  await page.locator('#edTarget').fill('');
  await ready(page);
  await expect(page.locator('#edRows button')).toHaveCount(empty.m);
  expect(same(await largeColours(page), matrix(empty.cross, 2, empty.m, empty.n, 0, 3).map(colour))).toBe(true);

  // Marian (source.spm / target.spm + vocab.json, no tokenizer.json).
  await page.locator('#edTarget').fill(TARGET);
  await ready(page);
  await page.setInputFiles('#files', files('marian'));
  await expect(page.locator('.mv-info')).toContainText('marian encoder-decoder');
  await ready(page);
  const marian = await apiRun('marian', SOURCE, TARGET);
  await expect(page.locator('#edRows button')).toHaveCount(marian.m);
  expect(same(await largeColours(page), matrix(marian.cross, 2, marian.m, marian.n, 0, 3).map(colour))).toBe(true);
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);

  // A checkpoint with a feature not implemented: refused in words.
  const config = JSON.parse(readFileSync(join(FIXTURES, 't5', 'config.json'), 'utf8'));
  await page.setInputFiles('#files', files('t5').map((f) => ({ name: basename(f), mimeType: 'application/octet-stream',
    buffer: basename(f) === 'config.json' ? Buffer.from(JSON.stringify({ ...config, feed_forward_proj: 'gated-wobble' })) : readFileSync(f) })));
  await expect(page.locator('#sourceMessage')).toContainText('could not be opened');
  await expect(page.locator('#sourceMessage')).toContainText('wobble');
});

test('the widget: view="model" with an encoder-decoder src, sentence and target shows cross-attention', async ({ page }) => {
  await page.goto('/tests/browser/fixtures/widget-encdec.html');
  const widget = page.locator('#t5');
  await expect(widget).toHaveAttribute('data-ready', 'true', { timeout: 30000 });
  await expect(widget.locator('.ed-figure figcaption')).toHaveText('Cross-attention: target → source, layer 2, head 3');
  const api = await apiRun('t5', 'The cat sat on the mat.', 'Die Katze saß.');
  await expect(widget.locator('#edRows button')).toHaveCount(api.m);
  const colours = await widget.locator('#edLarge').evaluate((c) => {
    const g = c._geom, { nQ, nK } = c._model, scale = c.width / c.clientWidth;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, out = [];
    for (let i = 0; i < nQ; i += 1) for (let j = 0; j < nK; j += 1) {
      const at = 4 * (Math.floor((g.top + (i + 0.5) * g.cell) * scale) * c.width + Math.floor((g.left + (j + 0.5) * g.cell) * scale));
      out.push([d[at], d[at + 1], d[at + 2]]);
    }
    return out;
  });
  expect(same(colours, matrix(api.cross, 2, api.m, api.n, 1, 2).map(colour))).toBe(true);
  // The target attribute is reactive.
  const longer = await apiRun('t5', 'The cat sat on the mat.', 'Die Katze saß auf der Matte.');
  await page.evaluate(() => document.querySelector('#t5').setAttribute('target', 'Die Katze saß auf der Matte.'));
  await expect(widget.locator('#edRows button')).toHaveCount(longer.m);
  await expect(widget).toHaveAttribute('data-ready', 'true');
});
