// The image view of "Your model" and the widget's view="image" in Chromium, with the ViT fixture
// (2 layers × 4 heads, 32 px pictures in 4 × 4 patches, 10 labels). The colours drawn are checked
// against the library's own numbers for the same picture, computed here through the API (not by
// the page's drawing code): each patch's colour is viridis at its weight ÷ the row's largest.
import { join } from 'node:path';
import { test, expect } from './guard.mjs';
import { FIXTURES } from '../js/checkpoints.mjs';
import { VIRIDIS } from '../../web/common/colormap.mjs';

const PAGE = '/web/your-model.html';
const VIT = ['config.json', 'model.safetensors', 'preprocessor_config.json'].map((f) => join(FIXTURES, 'vit', f));
const ready = (page) => page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 30000 });
const ONE_PIXEL_PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
const GRID_ALPHA = 0.7;  // the grid's overlay opacity (image-draw.mjs)

// Every attention of the fixture ViT for a picture, through the API in the page.
async function apiAttentions(page, picture) {
  return page.evaluate(async (picture) => {
    const { loadPretrained } = await import('/bindings/multihead.mjs');
    const model = await loadPretrained('/tests/fixtures/hf/vit/');
    const blob = await (await fetch(picture)).blob();
    const { pixelValues, height, width } = await model.preprocess(blob);
    const out = model.run(pixelValues, { height, width });
    model.dispose();
    return { attentions: Array.from(out.attentions), logits: Array.from(out.logits) };
  }, picture);
}

// Row `query` of head (l, h) over the 16 patches, as the colours the overlay should have.
function expectedColours(attentions, l, h, query) {
  const n = 17, at = (l * 4 + h) * n * n + query * n;
  const row = attentions.slice(at + 1, at + n), max = Math.max(...row);
  return row.map((v) => { const level = Math.round((v / max) * 255); return [VIRIDIS[3 * level], VIRIDIS[3 * level + 1], VIRIDIS[3 * level + 2]]; });
}
const overlayColours = (page) => page.locator('.iv-overlay').evaluate((c) => {
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  return Array.from({ length: c.width * c.height }, (_, i) => [d[4 * i], d[4 * i + 1], d[4 * i + 2]]);
});
const close = (got, want, tolerance) => got.every((p, i) => p.every((v, k) => Math.abs(v - want[i][k]) <= tolerance));

test('a ViT over a demo picture: the overlay is the API\'s weights, hover shows a patch\'s row, labels, heads off, lens, URL', async ({ page }) => {
  await page.goto(`${PAGE}#image=ball&head=2.3`);
  await ready(page);
  await page.setInputFiles('#files', VIT);
  await expect(page.locator('.mv-info')).toContainText('vit image model, 2 layers × 4 heads');
  await expect(page.locator('.mv-info')).toContainText('4 × 4 of them');
  await ready(page);
  await expect(page.locator('#mvText')).toBeHidden();
  await expect(page.locator('.iv-figure figcaption')).toContainText('Layer 2, head 3: from the CLS token');
  const api = await apiAttentions(page, '/web/your-model/images/ball.png');
  expect(close(await overlayColours(page), expectedColours(api.attentions, 1, 2, 0), 0)).toBe(true);

  // Hovering patch (row 2, column 3) shows its row: token 1 + 1 · 4 + 2 = 7.
  await page.locator('.iv-stack').scrollIntoViewIfNeeded();
  const box = await page.locator('.iv-stack').boundingBox();
  await page.mouse.move(box.x + box.width * (2.5 / 4), box.y + box.height * (1.5 / 4));
  await expect(page.locator('.iv-stack')).toHaveAttribute('data-query', '7');
  await expect(page.locator('.iv-figure figcaption')).toContainText('from patch (row 2, column 3)');
  expect(close(await overlayColours(page), expectedColours(api.attentions, 1, 2, 7), 0)).toBe(true);
  await page.mouse.move(0, 0);
  await expect(page.locator('.iv-stack')).toHaveAttribute('data-query', '0');

  // The classifier's top 5 are the API's logits' order; switching the head off adds the "without" list.
  const order = api.logits.map((v, i) => [v, i]).sort((a, b) => b[0] - a[0]).map(([, i]) => `class ${i}`);
  await expect(page.locator('.iv-classes .prediction').first().locator('.word')).toHaveText(order.slice(0, 5));
  await page.locator('#ivToggle').click();
  await ready(page);
  await expect(page.locator('.iv-classes .prediction')).toHaveCount(2);
  await expect(page.locator('.iv-classes')).toContainText('without L2 H3');
  expect(page.url()).toContain('off=2.3');
  await page.locator('#ivLens').click();
  await expect(page.locator('.iv-lens tbody tr')).toHaveCount(3);
  await expect(page.locator('.iv-lens tbody tr').first()).toContainText('embeddings');

  // The exports: the JSON's CLS rows are the API's, the SVG one rectangle a patch, the PNG a PNG.
  const grab = async (kind) => {
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator(`[data-export="image-${kind}"]`).click()]);
    const chunks = [];
    for await (const chunk of await download.createReadStream()) chunks.push(chunk);
    return { name: download.suggestedFilename(), bytes: Buffer.concat(chunks) };
  };
  const json = JSON.parse((await grab('json')).bytes.toString('utf8'));
  expect(json.patchGrid).toEqual({ rows: 4, cols: 4 });
  expect(json.heads).toHaveLength(8);
  const at = (2 * 17 + 0) * 17;  // L1 H3, the CLS row (switched off: L2 H3 only, which L1 does not see)
  expect(json.heads[2].cls.map((v, i) => Math.abs(v - api.attentions[at + 1 + i])).every((e) => e < 1e-6)).toBe(true);
  expect(json.switchedOff).toEqual(['L2 H3']);
  const svg = await grab('svg');
  expect(svg.name).toMatch(/\.svg$/);
  expect(svg.bytes.toString('utf8').match(/<rect /g)).toHaveLength(16);
  expect([...(await grab('png')).bytes.subarray(1, 4)].map((c) => String.fromCharCode(c)).join('')).toBe('PNG');

  // Keyboard: the grid's arrows choose a head; the URL follows, and a new URL is followed.
  await page.locator('#ivGrid').focus();
  await page.keyboard.press('ArrowUp');
  await expect(page.locator('.iv-figure figcaption')).toContainText('Layer 1, head 3');
  expect(page.url()).toContain('head=1.3');
  await page.evaluate(() => { location.hash = '#image=boats&head=1.2&mode=rollout'; });
  await ready(page);
  await expect(page.locator('.iv-figure figcaption')).toContainText('Attention rollout');
  await page.locator('#ivMode').selectOption('attention');
  await ready(page);
  await expect(page.locator('.iv-figure figcaption')).toContainText('Layer 1, head 2');
  const boats = await apiAttentions(page, '/web/your-model/images/boats.png');
  expect(close(await overlayColours(page), expectedColours(boats.attentions, 0, 1, 0), 0)).toBe(true);
  expect(page.url()).toMatch(/image=boats.*head=1\.2|head=1\.2.*image=boats/);
});

test('a pasted picture, the grid\'s overlays, a non-image and a 1 × 1 picture refused in words, and a phone', async ({ page }) => {
  await page.setViewportSize({ width: 375, height: 800 });
  await page.goto(PAGE);
  await ready(page);
  await page.setInputFiles('#files', VIT);
  await ready(page);
  await expect(page).toHaveURL(/image=cat/);
  // A flat grey picture pasted: each grid tile is the overlay at 70 % over grey 128.
  await page.evaluate(async () => {
    const canvas = new OffscreenCanvas(64, 48);
    const ctx = canvas.getContext('2d');
    ctx.fillStyle = 'rgb(128, 128, 128)';
    ctx.fillRect(0, 0, 64, 48);
    const data = new DataTransfer();
    data.items.add(new File([await canvas.convertToBlob()], 'grey.png', { type: 'image/png' }));
    document.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true }));
  });
  await ready(page);
  await expect(page).not.toHaveURL(/image=/);
  const grey = await page.evaluate(async () => {
    const { loadPretrained } = await import('/bindings/multihead.mjs');
    const model = await loadPretrained('/tests/fixtures/hf/vit/');
    const canvas = new OffscreenCanvas(64, 48);
    const ctx = canvas.getContext('2d');
    ctx.fillStyle = 'rgb(128, 128, 128)';
    ctx.fillRect(0, 0, 64, 48);
    const { pixelValues, height, width } = await model.preprocess(await canvas.convertToBlob());
    const out = Array.from(model.run(pixelValues, { height, width }).attentions);
    model.dispose();
    return out;
  });
  const tiles = await page.locator('#ivGrid').evaluate((canvas) => {
    const layout = JSON.parse(canvas.dataset.layout), scale = canvas.width / layout.width;
    const d = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    const out = [];
    for (let l = 0; l < 2; l += 1) for (let h = 0; h < 4; h += 1) {
      const patches = [];
      for (let p = 0; p < 16; p += 1) {
        const x = Math.floor((layout.left + h * (layout.tileW + 3) + ((p % 4) + 0.5) * layout.tileW / 4) * scale);
        const y = Math.floor((layout.top + l * (layout.tileH + 3) + (Math.floor(p / 4) + 0.5) * layout.tileH / 4) * scale);
        const at = 4 * (y * canvas.width + x);
        patches.push([d[at], d[at + 1], d[at + 2]]);
      }
      out.push(patches);
    }
    return out;
  });
  for (let l = 0; l < 2; l += 1) for (let h = 0; h < 4; h += 1) {
    const want = expectedColours(grey, l, h, 0).map((c) => c.map((v) => GRID_ALPHA * v + (1 - GRID_ALPHA) * 128));
    expect(close(tiles[l * 4 + h], want, 3), `L${l + 1} H${h + 1}`).toBe(true);
  }
  // A picture dropped on the view is shown too.
  await page.locator('.iv').evaluate(async (zone) => {
    const data = new DataTransfer();
    data.items.add(new File([await (await fetch('/web/your-model/images/ball.png')).blob()], 'dropped.png', { type: 'image/png' }));
    zone.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
  });
  await expect(page.locator('.iv-current')).toContainText('Showing dropped.png');
  await ready(page);
  // A click on a tile chooses that head.
  await page.locator('#ivGrid').scrollIntoViewIfNeeded();
  const grid = await page.locator('#ivGrid').boundingBox();
  const layout = JSON.parse(await page.locator('#ivGrid').getAttribute('data-layout'));
  await page.mouse.click(grid.x + layout.left + 3 * (layout.tileW + 3) + 4, grid.y + layout.top + layout.tileH / 2);
  await expect(page.locator('.iv-figure figcaption')).toContainText('Layer 1, head 4');

  // Bad pictures: said on the page; the last good picture stays, and the page still works.
  await page.setInputFiles('#ivFile', { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('not a picture') });
  await expect(page.locator('.iv .messages')).toContainText('“notes.txt” is not an image');
  await ready(page);
  await page.setInputFiles('#ivFile', { name: 'dot.png', mimeType: 'image/png', buffer: ONE_PIXEL_PNG });
  await expect(page.locator('.iv .messages')).toContainText('1 × 1 pixels: too small');
  await ready(page);
  await page.setInputFiles('#ivFile', { name: 'broken.png', mimeType: 'image/png', buffer: Buffer.from('PNG? no') });
  await expect(page.locator('.iv .messages')).toContainText('could not be read as a picture');
  await ready(page);
  await page.locator('.iv-source button[data-demo="boats"]').click();
  await ready(page);
  await expect(page).toHaveURL(/image=boats/);
  await expect(page.locator('.iv .messages')).toHaveText('');
  // 375 px: nothing sticks out sideways.
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
});

test('the widget: view="image" with a demo picture by name and a picture by URL', async ({ page }) => {
  await page.goto('/tests/browser/fixtures/widget-image.html');
  const demo = page.locator('#demo'), url = page.locator('#url');
  await expect(demo).toHaveAttribute('data-ready', 'true', { timeout: 30000 });
  await expect(demo.locator('.iv-figure figcaption')).toContainText('Layer 2, head 1: from the CLS token');
  const api = await apiAttentions(page, '/web/your-model/images/boats.png');
  expect(close(await demo.locator('.iv-overlay').evaluate((c) => {
    const d = c.getContext('2d').getImageData(0, 0, 4, 4).data;
    return Array.from({ length: 16 }, (_, i) => [d[4 * i], d[4 * i + 1], d[4 * i + 2]]);
  }), expectedColours(api.attentions, 1, 0, 0), 0)).toBe(true);
  await expect(url).toHaveAttribute('data-ready', 'true', { timeout: 30000 });
  // The fixture's own image.png (50 × 38), shown as the model reads it (32 × 32).
  await expect(url.locator('.iv-current')).toHaveText('Showing image.png, as the model reads it (32 × 32 pixels).');
  await expect(url.locator('.iv-timing')).toContainText('4 × 4 patches');
  await page.evaluate(() => document.querySelector('#demo').setAttribute('image', 'cat'));
  await expect(demo.locator('.iv-source button[data-demo="cat"]')).toHaveAttribute('aria-pressed', 'true');
});
