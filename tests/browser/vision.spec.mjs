// Image models in Chromium: preprocess() decodes what a page has (a Blob, a File from the file
// input, an ImageBitmap, an <img>) with createImageBitmap and an OffscreenCanvas, and gives the
// pixel values transformers 5.17 made of image.png (within 2 steps of 8 bits); the run from them
// gives transformers' attentions and logits.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test, expect } from './guard.mjs';
import { FIXTURES, maxAbs, maxAbsDiff, readSafetensors } from '../js/checkpoints.mjs';

const f32 = (t) => Array.from(new Float32Array(t.bytes.buffer.slice(t.bytes.byteOffset, t.bytes.byteOffset + t.bytes.length)));
const want = Object.fromEntries([...readSafetensors(new Uint8Array(readFileSync(join(FIXTURES, 'vit', 'expected.safetensors'))))]
  .map(([name, t]) => [name, f32(t)]));

test.beforeEach(async ({ page }) => {
  await page.goto('/tests/browser/fixtures/pretrained.html');
  await page.waitForFunction(() => window.ready === true);
});

test('vit from a URL: a Blob, a File, an ImageBitmap and an <img> preprocess as transformers does', async ({ page }) => {
  await page.setInputFiles('#files', [join(FIXTURES, 'vit', 'image.png')]);
  const got = await page.evaluate(async (theirs) => {
    const { loadPretrained } = await import('/bindings/multihead.mjs');
    const model = await loadPretrained('/tests/fixtures/hf/vit/');
    const blob = await (await fetch('/tests/fixtures/hf/vit/image.png')).blob();
    const img = new Image();
    img.src = '/tests/fixtures/hf/vit/image.png';
    await img.decode();
    const sources = { blob, file: document.getElementById('files').files[0], bitmap: await createImageBitmap(blob), img };
    const out = {};
    for (const [name, source] of Object.entries(sources)) {
      const { pixelValues, height, width } = await model.preprocess(source);
      out[name] = { pixelValues: Array.from(pixelValues), height, width };
    }
    const { pixelValues, height, width } = await model.preprocess(blob);
    const decoded = model.run(pixelValues, { height, width });
    const run = model.run(new Float32Array(theirs), { height, width });
    let error = null;
    try { await model.preprocess(new Blob([new Uint8Array(10)], { type: 'image/png' })); } catch (e) { error = e.message; }
    model.dispose();
    return { out, attentions: Array.from(run.attentions), logits: Array.from(run.logits), decoded: Array.from(decoded.attentions), error };
  }, want.pixel_values);
  for (const [name, { pixelValues, height, width }] of Object.entries(got.out)) {
    expect([name, height, width]).toEqual([name, 32, 32]);
    // 0.5 / 0.5 normalisation: one step of 8 bits is 2 / 255.
    expect(maxAbsDiff(pixelValues, want.pixel_values) * 255 / 2).toBeLessThan(2.001);
  }
  // From transformers' pixel values, its numbers; from the decoded image's (7 values a step off), nearly.
  expect(maxAbsDiff(got.attentions, want.attentions)).toBeLessThan(1e-5);
  expect(maxAbsDiff(got.logits, want.logits)).toBeLessThan(1e-5 * maxAbs(want.logits));
  expect(maxAbsDiff(got.decoded, want.attentions)).toBeLessThan(1e-2);
  expect(got.error).toMatch(/could not decode the image/);
});
