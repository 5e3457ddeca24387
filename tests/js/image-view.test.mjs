// The image view's computations (web/your-model/image-compute.mjs, run in the page's worker) on the
// ViT and DINOv2 fixtures: the pixels shown are the ones the model reads, the view's attentions
// are the run's, switched-off heads change the labels, and the lens on the CLS stream is the
// classifier over transformers' own hidden states, computed here from the checkpoint's weights.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPretrained } from '../../bindings/multihead.mjs';
import { FIXTURES, fixtureFiles, maxAbsDiff, readSafetensors } from './checkpoints.mjs';
import { readPng } from './png.mjs';
import { resizeRgb } from '../../bindings/image-processing.mjs';
import { clsLens, imageRun, pixelsOf, prepareImage, topLabels } from '../../web/your-model/image-compute.mjs';

const tensors = (model, file) => {
  const t = readSafetensors(new Uint8Array(readFileSync(join(FIXTURES, model, file))));
  return Object.fromEntries([...t].map(([name, x]) => [name, new Float32Array(x.bytes.buffer.slice(x.bytes.byteOffset, x.bytes.byteOffset + x.bytes.length))]));
};
const image = (model) => readPng(new Uint8Array(readFileSync(join(FIXTURES, model, 'image.png'))));

describe('the image view on the vit fixture (a classifier)', () => {
  let model;
  beforeAll(async () => { model = await loadPretrained(fixtureFiles('vit')); });
  afterAll(() => model?.dispose());

  it('shows the pixels the model reads: image.png (50 × 38) resized to 32 × 32, normalisation undone, byte for byte', async () => {
    const png = image('vit');
    expect([png.width, png.height]).toEqual([50, 38]);
    const input = await prepareImage(model, png);
    const pixels = pixelsOf(input.pixelValues, input.height, input.width, model.imageProcessor);
    const rgb = Uint8Array.from({ length: 50 * 38 * 3 }, (_, i) => png.data[Math.floor(i / 3) * 4 + (i % 3)]);
    const resized = resizeRgb(rgb, 50, 38, 32, 32, model.imageProcessor.resample);
    expect(Array.from(pixels)).toEqual(Array.from({ length: 32 * 32 * 4 }, (_, i) => (i % 4 === 3 ? 255 : resized[Math.floor(i / 4) * 3 + (i % 4)])));
  });

  it('a run: the API\'s attentions, top 5 by softmax, and switched-off heads move the labels', async () => {
    const input = await prepareImage(model, image('vit'));
    const direct = model.run(input.pixelValues, { height: 32, width: 32 });
    const view = imageRun(model, input);
    expect({ n: view.n, rows: view.rows, cols: view.cols, prefix: view.prefix }).toEqual({ n: 17, rows: 4, cols: 4, prefix: 1 });
    expect(view.attentions).toEqual(direct.attentions);
    const sum = Array.from(direct.logits).reduce((a, v) => a + Math.exp(v), 0);
    const order = Array.from(direct.logits.keys()).sort((a, b) => direct.logits[b] - direct.logits[a]);
    expect(view.top.map((t) => t.id)).toEqual(order.slice(0, 5));
    expect(view.top[0].label).toBe(`class ${order[0]}`);
    expect(view.top[0].probability).toBeCloseTo(Math.exp(direct.logits[order[0]]) / sum, 6);
    expect(view.after).toBe(null);
    const off = imageRun(model, input, { off: [[1, 0], [1, 1], [1, 2], [1, 3]], rollout: true });
    const ablated = model.run(input.pixelValues, { height: 32, width: 32, disabledHeads: [[1, 0], [1, 1], [1, 2], [1, 3]] });
    expect(off.attentions).toEqual(ablated.attentions);
    expect(off.after.map((t) => t.id)).toEqual(topLabels(ablated.logits, model.config.labels).map((t) => t.id));
    expect(off.logitChange).toBeCloseTo(ablated.logits[view.top[0].id] - direct.logits[view.top[0].id], 6);
    expect(Math.abs(off.logitChange)).toBeGreaterThan(1e-4);
    expect(off.rollout.length).toBe(17 * 17);
  });

  it('the lens on the CLS stream is the classifier over transformers\' hidden states (final norm, then the head)', async () => {
    const want = tensors('vit', 'expected.safetensors'), w = tensors('vit', 'model.safetensors');
    const d = 64, T = 17, { layers } = model.config;
    const pv = want.pixel_values;
    const lens = clsLens(model, { pixelValues: pv, height: 32, width: 32 });
    expect(lens.streams).toHaveLength(layers + 1);
    for (let l = 0; l <= layers; l += 1) {
      const x = want.hidden_states.subarray(l * T * d, l * T * d + d);  // the CLS token's stream
      const mean = x.reduce((a, v) => a + v, 0) / d, variance = x.reduce((a, v) => a + (v - mean) ** 2, 0) / d;
      const y = Array.from(x, (v, i) => ((v - mean) / Math.sqrt(variance + 1e-12)) * w['vit.layernorm.weight'][i] + w['vit.layernorm.bias'][i]);
      const logits = Array.from({ length: 10 }, (_, k) => w['classifier.bias'][k] + y.reduce((a, v, i) => a + v * w['classifier.weight'][k * d + i], 0));
      const theirs = topLabels(logits, model.config.labels);
      expect(lens.streams[l].top.map((t) => t.id)).toEqual(theirs.map((t) => t.id));
      expect(maxAbsDiff(lens.streams[l].top.map((t) => t.probability), theirs.map((t) => t.probability))).toBeLessThan(1e-5);
    }
    // The last stream is the model's answer, and `final` follows that label through the streams.
    expect(lens.best.id).toBe(lens.streams[layers].top[0].id);
    expect(lens.streams[layers].final).toBeCloseTo(lens.streams[layers].top[0].probability, 6);
  });

  it('refuses a picture too small, too large or not an image with a message, and the model still runs', async () => {
    await expect(prepareImage(model, { data: new Uint8ClampedArray(4), width: 1, height: 1 })).rejects.toThrow(/1 × 1 pixels: too small/);
    // Too large is refused by its size before any pixel is read (the data here is a stand-in).
    await expect(prepareImage(model, { data: new Uint8ClampedArray(4), width: 9000, height: 8000 })).rejects.toThrow(/9000 × 8000 pixels: more than 64 million/);
    const text = new Blob(['hello'], { type: 'text/plain' });
    await expect(prepareImage(model, Object.assign(text, { name: 'notes.txt' }))).rejects.toThrow(/“notes.txt” is not an image \(text\/plain\)/);
    expect(imageRun(model, await prepareImage(model, image('vit'))).top).toHaveLength(5);
  });
});

describe('the image view on the dinov2 fixture (no classifier)', () => {
  it('every head, no labels, and a crop\'s pixels', async () => {
    const model = await loadPretrained(fixtureFiles('dinov2'));
    try {
      const input = await prepareImage(model, image('dinov2'));
      const view = imageRun(model, input, { off: [[0, 1]] });
      expect([view.rows, view.cols, view.prefix]).toEqual([4, 4, 1]);
      expect(view.top).toBe(null);
      expect(view.after).toBe(null);
      const pixels = pixelsOf(input.pixelValues, input.height, input.width, model.imageProcessor);
      expect(pixels.length).toBe(32 * 32 * 4);
    } finally {
      model.dispose();
    }
  });
});
