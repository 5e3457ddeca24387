// Image models (ViT, DINOv2) against transformers 5.17's own numbers (tests/fixtures/hf/vit and
// dinov2, made by gen_encdec_vision.py): the preprocessing of image.png, and every attention,
// hidden state and the logits / last hidden state from transformers' pixel_values. The DINOv2
// fixture's config is for 48 px (6 × 6 positions) and its processor crops 32 px (4 × 4 patches),
// so its numbers go through the bicubic resampling of the position table.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPretrained } from '../../bindings/multihead.mjs';
import { FIXTURES, fixtureFiles, maxAbs, maxAbsDiff, readSafetensors, renameTensors } from './checkpoints.mjs';
import { variant } from './fixture-checks.mjs';
import { readPng } from './png.mjs';

const f32 = (t) => new Float32Array(t.bytes.buffer.slice(t.bytes.byteOffset, t.bytes.byteOffset + t.bytes.length));
function expected(model) {
  const t = readSafetensors(new Uint8Array(readFileSync(join(FIXTURES, model, 'expected.safetensors'))));
  return Object.fromEntries([...t].map(([name, x]) => [name, f32(x)]));
}
const image = (model) => readPng(new Uint8Array(readFileSync(join(FIXTURES, model, 'image.png'))));
const SIDE = 32;  // both fixtures' pixel_values are 3 × 32 × 32

// Keys' cubic kernel (a = −0.75) by distance, and torch's bicubic resampling of one axis by its
// definition (half-pixel centres, edges repeated), in float64: the reference for the positions.
function keys(x) {
  const a = -0.75, t = Math.abs(x);
  if (t <= 1) return (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1;
  return t < 2 ? a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a : 0;
}
function bicubicGrid(table, d, from, rows, cols) {  // table: (from² + 1) × d, row 0 the CLS token
  const out = new Float64Array((rows * cols + 1) * d);
  for (let i = 0; i < d; i += 1) out[i] = table[i];
  const clamp = (v) => Math.min(from - 1, Math.max(0, v));
  for (let y = 0; y < rows; y += 1) {
    for (let x = 0; x < cols; x += 1) {
      const sy = (y + 0.5) * from / rows - 0.5, sx = (x + 0.5) * from / cols - 0.5;
      for (let j = Math.floor(sy) - 1; j <= Math.floor(sy) + 2; j += 1) {
        for (let k = Math.floor(sx) - 1; k <= Math.floor(sx) + 2; k += 1) {
          const w = keys(sy - j) * keys(sx - k), src = 1 + clamp(j) * from + clamp(k);
          for (let i = 0; i < d; i += 1) out[(1 + y * cols + x) * d + i] += w * table[src * d + i];
        }
      }
    }
  }
  return out;
}

describe.each(['vit', 'dinov2'])('%s against transformers 5.17', (name) => {
  let model;
  const want = expected(name);
  beforeAll(async () => { model = await loadPretrained(fixtureFiles(name)); });
  afterAll(() => model?.dispose());

  it('preprocesses image.png as the image processor does: within 2 steps of 8 bits, nearly all equal', async () => {
    const { pixelValues, height, width } = await model.preprocess(image(name));
    expect([height, width]).toEqual([SIDE, SIDE]);
    const { std } = model.imageProcessor;
    const plane = SIDE * SIDE;
    let worst = 0, equal = 0;
    for (let i = 0; i < pixelValues.length; i += 1) {
      const steps = Math.abs(pixelValues[i] - want.pixel_values[i]) * std[Math.floor(i / plane)] * 255;
      worst = Math.max(worst, steps);
      if (steps < 1e-3) equal += 1;
    }
    // transformers 5 resizes with torchvision's uint8 kernel, which rounds a few pixels otherwise
    // than PIL (whose arithmetic ours follows): 1 step on 7 of 3072 (vit), 2 of 3072 (dinov2).
    expect(worst).toBeLessThan(2.001);
    expect(equal / pixelValues.length).toBeGreaterThan(0.99);
  });

  it('every attention, hidden state and output from transformers\' pixel_values', () => {
    const out = model.run(want.pixel_values, { height: SIDE, width: SIDE, hiddenStates: true, lastHiddenState: true });
    const T = 1 + (SIDE / 8) ** 2;
    expect(out.attentionShape).toEqual([2, 4, T, T]);
    expect(out.patchGrid).toEqual({ rows: 4, cols: 4 });
    // Reached: attentions within 8.4e-7, the rest within 6.1e-7 of the largest value.
    expect(maxAbsDiff(out.attentions, want.attentions)).toBeLessThan(1e-5);
    expect(maxAbsDiff(out.hiddenStates, want.hidden_states)).toBeLessThan(1e-5 * maxAbs(want.hidden_states));
    if (name === 'vit') {
      expect(out.logits.length).toBe(10);
      expect(maxAbsDiff(out.logits, want.logits)).toBeLessThan(1e-5 * maxAbs(want.logits));
    } else {
      expect(out.logits).toBe(null);
      expect(maxAbsDiff(out.lastHiddenState, want.last_hidden_state)).toBeLessThan(1e-5 * maxAbs(want.last_hidden_state));
    }
    // The default run: attentions, and a classifier's logits or else the last hidden state.
    const plain = model.run(want.pixel_values, { height: SIDE, width: SIDE });
    expect(plain.hiddenStates).toBeUndefined();
    expect(plain.attentions).toEqual(out.attentions);
    if (name === 'dinov2') expect(plain.lastHiddenState).toEqual(out.lastHiddenState);
  });

  it('hooks: TransformerLens names, the pattern equal to the attentions, a changed hook_z changes the outputs', () => {
    const names = model.hookNames();
    for (const hook of ['embed.hook_embed', 'embed.hook_pos_embed', 'blocks.0.attn.hook_pattern', 'blocks.1.hook_resid_post', 'ln_final.hook_normalized']) {
      expect(names).toContain(hook);
    }
    const out = model.run(want.pixel_values, { height: SIDE, width: SIDE, capture: ['blocks.*.attn.hook_pattern'] });
    const pattern = out.activations['blocks.1.attn.hook_pattern'];
    expect(pattern.shape).toEqual([4, 17, 17]);
    expect(pattern.data).toEqual(out.attentions.subarray(4 * 17 * 17));
    const off = model.run(want.pixel_values, { height: SIDE, width: SIDE, lastHiddenState: true,
      intervene: { 'blocks.0.attn.hook_z': ({ data }) => data.fill(0) } });
    expect(maxAbsDiff(off.attentions.subarray(0, 4 * 17 * 17), out.attentions.subarray(0, 4 * 17 * 17))).toBe(0);
    expect(maxAbsDiff(off.attentions.subarray(4 * 17 * 17), out.attentions.subarray(4 * 17 * 17))).toBeGreaterThan(1e-3);
  });

  it('rollout, value norms and switched-off heads as for text: T × T, layers × heads × T, only later rows move', () => {
    const pv = want.pixel_values;
    const out = model.run(pv, { height: SIDE, width: SIDE, rollout: true, valueNorms: true });
    expect(out.rollout.length).toBe(17 * 17);
    for (let i = 0; i < 17; i += 1) expect(out.rollout.subarray(i * 17, (i + 1) * 17).reduce((a, b) => a + b)).toBeCloseTo(1, 5);
    expect(out.valueNorms.length).toBe(2 * 4 * 17);
    const off = model.run(pv, { height: SIDE, width: SIDE, disabledHeads: [[0, 2]] });
    const layer = 4 * 17 * 17;
    expect(maxAbsDiff(off.attentions.subarray(0, layer), out.attentions.subarray(0, layer))).toBe(0);
    expect(maxAbsDiff(off.attentions.subarray(layer), out.attentions.subarray(layer))).toBeGreaterThan(1e-4);
  });

  it('refuses bad input with a clear Error, and works after', async () => {
    const run = (pixels, options) => () => model.run(pixels, options);
    const pv = want.pixel_values;
    expect(run(pv, { height: 1, width: 1 })).toThrow(/height.*patch size 8/);
    expect(run(new Float32Array(3), { height: 1, width: 1 })).toThrow(/height/);
    expect(run(pv.subarray(1), { height: SIDE, width: SIDE })).toThrow(/3071 values, but 3 × 32 × 32 = 3072/);
    expect(run(pv, { height: SIDE })).toThrow(/width/);
    expect(run(Array.from(pv), { height: SIDE, width: SIDE })).toThrow(/Float32Array/);
    expect(run([1, 2, 3])).toThrow(/Float32Array/);
    const nan = pv.slice();
    nan[100] = NaN;
    expect(run(nan, { height: SIDE, width: SIDE })).toThrow(/pixel value 100 is NaN/);
    expect(run(pv, { height: SIDE, width: SIDE, tokenTypeIds: [0] })).toThrow(/does not take tokenTypeIds/);
    await expect(model.preprocess({ data: new Uint8ClampedArray(3), width: 1, height: 1 })).rejects.toThrow(/RGBA bytes/);
    await expect(model.preprocess({ data: new Uint8ClampedArray(0), width: 0, height: 0 })).rejects.toThrow(/width and height ≥ 1/);
    await expect(model.preprocess(new Blob([new Uint8Array(8)]))).rejects.toThrow(/cannot decode a Blob or File/);
    await expect(model.preprocess('image.png')).rejects.toThrow(/cannot decode/);
    await expect(model.preprocess({ data: new Uint8ClampedArray(4), width: 1.5, height: 1 })).rejects.toThrow(/whole width/);
    if (name === 'dinov2') {  // the shortest edge 36: a 1 × 2^20 image would become 36 × 37.7 million
      await expect(model.preprocess({ data: new Uint8ClampedArray(4 * 2 ** 20), width: 2 ** 20, height: 1 })).rejects.toThrow(/more than 2\^26: crop it first/);
    }
    // The text methods say why they do not apply.
    expect(() => model.tokenize('a cat')).toThrow(/tokenize\(\) is for text models/);
    expect(() => model.decode([1])).toThrow(/no vocabulary/);
    expect(() => model.logitLens([0])).toThrow(/logitLens\(\) is for text models/);
    expect(() => model.attribute([0])).toThrow(/attribute\(\) is for text models/);
    expect(() => model.contributions([0])).toThrow(/contributions\(\) is for text models/);
    await expect(model.patch([0], [1], { target: 0 })).rejects.toThrow(/patch\(\) is for text models/);
    await expect(model.generate([0]).next()).rejects.toThrow(/generate\(\) is for text models/);
    const again = model.run(pv, { height: SIDE, width: SIDE });
    expect(maxAbsDiff(again.attentions, want.attentions)).toBeLessThan(1e-4);
  });

  it('a one-colour 1 × 1 image resizes to one colour: (v / 255 − mean) / std everywhere', async () => {
    const { pixelValues, height, width } = await model.preprocess({ data: new Uint8ClampedArray([200, 10, 77, 255]), width: 1, height: 1 });
    const { mean, std } = model.imageProcessor;
    [200, 10, 77].forEach((v, c) => {
      const plane = pixelValues.subarray(c * height * width, (c + 1) * height * width);
      for (const x of plane) expect(x).toBeCloseTo((v / 255 - mean[c]) / std[c], 5);
    });
  });
});

describe('vit', () => {
  it('config: labels from id2label, the patch grid, the sizes', async () => {
    const model = await loadPretrained(fixtureFiles('vit'));
    try {
      expect(model.config.labels).toEqual(Array.from({ length: 10 }, (_, i) => `class ${i}`));
      expect(model.patchGrid).toEqual({ rows: 4, cols: 4 });
      expect([model.config.imageSize, model.config.patchSize, model.config.channels]).toEqual([32, 8, 3]);
      expect(model.tokenizer).toBe(null);
      expect(Object.isFrozen(model.imageProcessor) && Object.isFrozen(model.imageProcessor.mean)).toBe(true);
    } finally {
      model.dispose();
    }
  });

  it('older and other processor files: ViTFeatureExtractor with "size": 32 makes the same pixels; bad ones are refused by name', async () => {
    const processor = { feature_extractor_type: 'ViTFeatureExtractor', do_normalize: true, do_resize: true,
      image_mean: [0.5, 0.5, 0.5], image_std: [0.5, 0.5, 0.5], resample: 2, size: 32 };
    const load = (json) => {
      const files = fixtureFiles('vit');
      if (json === null) files.delete('preprocessor_config.json');
      else files.set('preprocessor_config.json', new TextEncoder().encode(JSON.stringify(json)));
      return loadPretrained(files);
    };
    const model = await load(processor);
    const reference = await loadPretrained(fixtureFiles('vit'));
    try {
      expect((await model.preprocess(image('vit'))).pixelValues).toEqual((await reference.preprocess(image('vit'))).pixelValues);
    } finally {
      model.dispose();
      reference.dispose();
    }
    await expect(load({ ...processor, resample: 0 })).rejects.toThrow(/resample 0 is not supported/);
    await expect(load({ image_processor_type: 'CLIPImageProcessor' })).rejects.toThrow(/"CLIPImageProcessor" is not supported/);
    await expect(load({ ...processor, size: { longest_edge: 32 } })).rejects.toThrow(/size \{"longest_edge":32\} is not supported/);
    await expect(load({ ...processor, image_std: [0.5, 0, 0.5] })).rejects.toThrow(/image_std must be three numbers \(none 0\)/);
    const bare = await load(null);
    try {
      expect(bare.patchGrid).toEqual({ rows: 4, cols: 4 });  // the config's image_size
      await expect(bare.preprocess(image('vit'))).rejects.toThrow(/without preprocessor_config.json/);
    } finally {
      bare.dispose();
    }
  });

  it('configs it cannot run are refused by name', async () => {
    const load = (edit) => loadPretrained(variant('vit', { tensors: (t) => t, config: edit }));
    await expect(load((c) => ({ ...c, num_channels: 1 }))).rejects.toThrow(/1 channels are not supported \(only RGB: 3\)/);
    await expect(load((c) => ({ ...c, patch_size: 64 }))).rejects.toThrow(/patch_size is larger than its image_size/);
    await expect(load((c) => ({ ...c, image_size: 40 }))).rejects.toThrow(/position_embeddings" has shape \[1, 17, 64\] but config.json implies \[1, 26, 64\]/);
    await expect(load(({ patch_size: _, ...c }) => c)).rejects.toThrow(/no "patch_size"/);
    await expect(loadPretrained(variant('dinov2', { tensors: (t) => t, config: (c) => ({ ...c, hidden_act: 'silu' }) })))
      .rejects.toThrow(/silu and no SwiGLU/);
  });

  it('ViTModel: no "vit." prefix and no classifier → logits null, the same attentions; other sizes resample the positions', async () => {
    const files = variant('vit', { tensors: (t) => renameTensors(t, (n) => (n.startsWith('classifier.') ? null : n.replace(/^vit\./, ''))) });
    const model = await loadPretrained(files);
    try {
      const want = expected('vit');
      expect(model.config.hasLmHead).toBe(false);
      expect(model.config.labels).toBe(null);
      const out = model.run(want.pixel_values, { height: SIDE, width: SIDE, hiddenStates: true });
      expect(out.logits).toBe(null);
      expect(maxAbsDiff(out.attentions, want.attentions)).toBeLessThan(1e-4);
      expect(out.lastHiddenState.length).toBe(17 * 64);
      // A 40 × 24 image: 5 × 3 patches, the 4 × 4 table resampled to them (hook_pos_embed).
      const wide = new Float32Array(3 * 40 * 24).map((_, i) => Math.sin(i));
      const got = model.run(wide, { height: 40, width: 24, capture: ['embed.hook_pos_embed'] });
      expect(got.attentionShape).toEqual([2, 4, 16, 16]);
      const table = f32(readSafetensors(files.get('model.safetensors')).get('embeddings.position_embeddings'));
      const positions = got.activations['embed.hook_pos_embed'];
      expect(positions.shape).toEqual([16, 64]);
      expect(maxAbsDiff(positions.data, bicubicGrid(table, 64, 4, 5, 3))).toBeLessThan(1e-5);
    } finally {
      model.dispose();
    }
  });
});

describe('dinov2', () => {
  it('positions: the 6 × 6 table resampled to the 4 × 4 grid as torch does; the table itself at 48 px', async () => {
    const model = await loadPretrained(fixtureFiles('dinov2'));
    try {
      const want = expected('dinov2');
      const table = f32(readSafetensors(fixtureFiles('dinov2').get('model.safetensors')).get('embeddings.position_embeddings'));
      const out = model.run(want.pixel_values, { height: SIDE, width: SIDE, capture: ['embed.hook_pos_embed', 'embed.hook_embed'] });
      const positions = out.activations['embed.hook_pos_embed'].data;
      const reference = bicubicGrid(table, 64, 6, 4, 4);
      expect(maxAbsDiff(positions, reference)).toBeLessThan(1e-5);
      // Embeddings + positions = transformers' hidden_states[0].
      const sum = out.activations['embed.hook_embed'].data.map((v, i) => v + positions[i]);
      expect(maxAbsDiff(sum, want.hidden_states.subarray(0, 17 * 64))).toBeLessThan(1e-4 * maxAbs(want.hidden_states));
      // Without resampling the grid differs (a layout or scale mistake would hide in an equal grid).
      expect(maxAbsDiff(positions, table.subarray(0, 17 * 64))).toBeGreaterThan(1e-2);
      const big = model.run(new Float32Array(3 * 48 * 48), { height: 48, width: 48, capture: ['embed.hook_pos_embed'] });
      expect(big.activations['embed.hook_pos_embed'].data).toEqual(table);
      expect(model.patchGrid).toEqual({ rows: 4, cols: 4 });
      expect(model.config.labels).toBe(null);
    } finally {
      model.dispose();
    }
  });

  it('use_swiglu_ffn: the fused weights_in split into gate and up, silu(gate) ⊙ up, layer scale (a float64 reference through the hooks)', async () => {
    // The fixture's MLPs replaced by SwiGLU ones of seeded weights: mlp_ratio 2 → 128 → 88 (⅔, up to 8s).
    let seed = 1;
    const random = () => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed / 2 ** 31 - 0.5; };
    const tensor = (shape) => {
      const data = new Float32Array(shape.reduce((a, b) => a * b)).map(() => random() * 0.5);
      return { dtype: 'F32', shape, bytes: new Uint8Array(data.buffer) };
    };
    const ff = 88, d = 64;
    const files = variant('dinov2', {
      config: (c) => ({ ...c, use_swiglu_ffn: true }),
      tensors: (t) => {
        const out = renameTensors(t, (n) => (/\.mlp\.fc[12]\./.test(n) ? null : n));
        for (const l of [0, 1]) {
          const h = `encoder.layer.${l}.mlp.`;
          out.set(`${h}weights_in.weight`, tensor([2 * ff, d]));
          out.set(`${h}weights_in.bias`, tensor([2 * ff]));
          out.set(`${h}weights_out.weight`, tensor([d, ff]));
          out.set(`${h}weights_out.bias`, tensor([d]));
        }
        return out;
      },
    });
    const weights = readSafetensors(files.get('model.safetensors'));
    const w = (name) => f32(weights.get(name));
    const model = await loadPretrained(files);
    try {
      expect(model.config.dFf).toBe(ff);
      const want = expected('dinov2');
      const out = model.run(want.pixel_values, { height: SIDE, width: SIDE, capture: ['blocks.*.ln2.hook_normalized', 'blocks.*.hook_mlp_out'] });
      for (const l of [0, 1]) {
        const x = out.activations[`blocks.${l}.ln2.hook_normalized`].data, got = out.activations[`blocks.${l}.hook_mlp_out`].data;
        const h = `encoder.layer.${l}.`;
        const win = w(`${h}mlp.weights_in.weight`), bin = w(`${h}mlp.weights_in.bias`);
        const wout = w(`${h}mlp.weights_out.weight`), bout = w(`${h}mlp.weights_out.bias`), scale = w(`${h}layer_scale2.lambda1`);
        const reference = new Float64Array(17 * d);
        for (let t = 0; t < 17; t += 1) {
          const hidden = new Float64Array(ff);
          for (let j = 0; j < ff; j += 1) {
            let gate = bin[j], up = bin[ff + j];  // weights_in's rows: the gate's, then the up projection's
            for (let i = 0; i < d; i += 1) { gate += win[j * d + i] * x[t * d + i]; up += win[(ff + j) * d + i] * x[t * d + i]; }
            hidden[j] = (gate / (1 + Math.exp(-gate))) * up;
          }
          for (let o = 0; o < d; o += 1) {
            let sum = bout[o];
            for (let j = 0; j < ff; j += 1) sum += wout[o * ff + j] * hidden[j];
            reference[t * d + o] = sum * scale[o];
          }
        }
        expect(maxAbsDiff(got, reference)).toBeLessThan(1e-5 * maxAbs(reference));
      }
    } finally {
      model.dispose();
    }
  });

  it('without a center crop the grid follows the image: 36 × 47 → 4 × 5 patches, positions resampled to them', async () => {
    const files = fixtureFiles('dinov2');
    const processor = JSON.parse(new TextDecoder().decode(files.get('preprocessor_config.json')));
    files.set('preprocessor_config.json', new TextEncoder().encode(JSON.stringify({ ...processor, do_center_crop: false })));
    const model = await loadPretrained(files);
    try {
      expect(model.patchGrid).toBe(null);
      const { pixelValues, height, width } = await model.preprocess(image('dinov2'));
      expect([height, width]).toEqual([36, 47]);  // the short side 36, the long 36 · 50 / 38 = 47.4, truncated
      const out = model.run(pixelValues, { height, width, capture: ['embed.hook_pos_embed'] });
      expect(out.patchGrid).toEqual({ rows: 4, cols: 5 });
      expect(out.attentionShape).toEqual([2, 4, 21, 21]);
      const table = f32(readSafetensors(files.get('model.safetensors')).get('embeddings.position_embeddings'));
      expect(maxAbsDiff(out.activations['embed.hook_pos_embed'].data, bicubicGrid(table, 64, 6, 4, 5))).toBeLessThan(1e-5);
    } finally {
      model.dispose();
    }
  });

  it('a text model has no preprocess()', async () => {
    const model = await loadPretrained(fixtureFiles('gpt2'));
    try {
      await expect(model.preprocess({ data: new Uint8ClampedArray(4), width: 1, height: 1 })).rejects.toThrow(/preprocess\(\) is for image models/);
    } finally {
      model.dispose();
    }
  });
});
