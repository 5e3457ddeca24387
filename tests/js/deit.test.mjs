// DeiT (model_type "deit") has no transformers fixture here: a tiny distilled DeiT is made from the
// ViT fixture's weights (renamed under "deit.", a random distillation token and position row, a
// random teacher head), and held to what can be computed by hand from its own tensors and hooks:
// the embeddings row by row (the patches' equal to ViT's), the first layer's attention from its
// input, the logits as the mean of the two heads on the CLS and distillation rows, the position
// table's first two rows kept when resampled, and the page's image view (and lens) over T = 2 + patches.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPretrained, supportedModelTypes } from '../../bindings/multihead.mjs';
import { fixtureFiles, maxAbs, maxAbsDiff, readSafetensors } from './checkpoints.mjs';
import { variant } from './fixture-checks.mjs';
import { randomNormal, seededRandom } from './reference.mjs';
import { clsLens, imageRun, topLabels } from '../../web/your-model/image-compute.mjs';

const D = 64, HEADS = 4, LABELS = 10, GRID = 4, T = 2 + GRID * GRID;
const f32 = (t) => new Float32Array(t.bytes.buffer.slice(t.bytes.byteOffset, t.bytes.byteOffset + t.bytes.length));
const tensor = (shape, data) => ({ dtype: 'F32', shape, bytes: new Uint8Array(data.buffer) });
const rng = seededRandom(7);
const DIST = randomNormal(D, rng, 0.5), DIST_POS = randomNormal(D, rng, 0.5);
const DIST_W = randomNormal(LABELS * D, rng, 0.1), DIST_B = randomNormal(LABELS, rng, 0.1);

// The ViT fixture as a DeiT: teacher: with the distillation head (WithTeacher), else classifier only.
function deitFiles(teacher) {
  return variant('vit', {
    config: (c) => ({ ...c, model_type: 'deit', architectures: [teacher ? 'DeiTForImageClassificationWithTeacher' : 'DeiTForImageClassification'] }),
    tensors: (vit) => {
      const out = new Map();
      for (const [name, t] of vit) {
        if (name === 'vit.embeddings.position_embeddings') {  // CLS row, the distillation row, then the grid's
          const table = f32(t), rows = new Float32Array((T) * D);
          rows.set(table.subarray(0, D));
          rows.set(DIST_POS, D);
          rows.set(table.subarray(D), 2 * D);
          out.set('deit.embeddings.position_embeddings', tensor([1, T, D], rows));
        } else if (name.startsWith('classifier.')) {
          out.set(teacher ? `cls_${name}` : name, t);
        } else {
          out.set(name.replace(/^vit\./, 'deit.'), t);
        }
      }
      out.set('deit.embeddings.distillation_token', tensor([1, 1, D], DIST));
      if (teacher) {
        out.set('distillation_classifier.weight', tensor([LABELS, D], DIST_W));
        out.set('distillation_classifier.bias', tensor([LABELS], DIST_B));
      }
      return out;
    },
  });
}
const weights = Object.fromEntries([...readSafetensors(fixtureFiles('vit').get('model.safetensors'))].map(([n, t]) => [n, f32(t)]));
const pixels = Float32Array.from({ length: 3 * 32 * 32 }, (_, i) => Math.sin(i * 0.37) * 0.8);

// y = x · Wᵀ + b for nn.Linear's [out][in] W, in float64.
const linear = (x, w, b, out) => Array.from({ length: out }, (_, o) => b[o] + x.reduce((a, v, i) => a + v * w[o * x.length + i], 0));

describe('deit: a distilled DeiT made from the ViT fixture', () => {
  let deit, vit;
  beforeAll(async () => { [deit, vit] = await Promise.all([loadPretrained(deitFiles(true)), loadPretrained(fixtureFiles('vit'))]); });
  afterAll(() => { deit?.dispose(); vit?.dispose(); });

  it('loads as deit with two rows before the patches and the teacher\'s head', async () => {
    expect(await supportedModelTypes()).toContain('deit');
    expect(deit.config).toMatchObject({ modelType: 'deit', prefixTokens: 2, distillationHead: true, layers: 2, heads: HEADS });
    expect(vit.config).toMatchObject({ prefixTokens: 1, distillationHead: false });
    expect(deit.patchGrid).toEqual({ rows: GRID, cols: GRID });
    const out = deit.run(pixels, { height: 32, width: 32 });
    expect(out.attentionShape).toEqual([2, HEADS, T, T]);
    expect(out.patchGrid).toEqual({ rows: GRID, cols: GRID });
    expect(out.logits).toHaveLength(LABELS);
  });

  it('embeddings: [CLS + position 0; distillation token + position 1; ViT\'s patch rows]', () => {
    const ours = deit.run(pixels, { height: 32, width: 32, attentions: false, hiddenStates: true }).hiddenStates.subarray(0, T * D);
    const theirs = vit.run(pixels, { height: 32, width: 32, attentions: false, hiddenStates: true }).hiddenStates.subarray(0, (T - 1) * D);
    expect(maxAbsDiff(ours.subarray(0, D), theirs.subarray(0, D))).toBeLessThan(1e-6);  // CLS: the same token and position row
    expect(maxAbsDiff(ours.subarray(D, 2 * D), DIST.map((v, i) => v + DIST_POS[i]))).toBeLessThan(1e-6);
    expect(maxAbsDiff(ours.subarray(2 * D), theirs.subarray(D))).toBeLessThan(1e-5);  // the same patches and their positions
  });

  it('the first layer\'s attention over T = 18 rows is softmax(q kᵀ / √d_head) of its normalised input', () => {
    const out = deit.run(pixels, { height: 32, width: 32, capture: ['blocks.0.ln1.hook_normalized'] });
    const x = out.activations['blocks.0.ln1.hook_normalized'].data, dh = D / HEADS;
    const rows = (i) => Array.from(x.subarray(i * D, (i + 1) * D));
    const p = 'vit.encoder.layer.0.attention.attention.';
    const q = Array.from({ length: T }, (_, i) => linear(rows(i), weights[`${p}query.weight`], weights[`${p}query.bias`], D));
    const k = Array.from({ length: T }, (_, i) => linear(rows(i), weights[`${p}key.weight`], weights[`${p}key.bias`], D));
    let worst = 0;
    for (let h = 0; h < HEADS; h += 1) {
      for (let i = 0; i < T; i += 1) {
        const s = k.map((kj) => kj.slice(h * dh, (h + 1) * dh).reduce((a, v, c) => a + v * q[i][h * dh + c], 0) / Math.sqrt(dh));
        const m = Math.max(...s), e = s.map((v) => Math.exp(v - m)), sum = e.reduce((a, v) => a + v, 0);
        for (let j = 0; j < T; j += 1) worst = Math.max(worst, Math.abs(e[j] / sum - out.attentions[(h * T + i) * T + j]));
      }
    }
    expect(worst).toBeLessThan(1e-5);
  });

  it('the logits are the mean of cls_classifier on the CLS row and distillation_classifier on the distillation row', () => {
    const out = deit.run(pixels, { height: 32, width: 32, capture: ['ln_final.hook_normalized'] });
    const h = out.activations['ln_final.hook_normalized'].data;
    const cls = linear(Array.from(h.subarray(0, D)), weights['classifier.weight'], weights['classifier.bias'], LABELS);
    const dist = linear(Array.from(h.subarray(D, 2 * D)), DIST_W, DIST_B, LABELS);
    const want = cls.map((v, i) => (v + dist[i]) / 2);
    expect(maxAbsDiff(out.logits, want)).toBeLessThan(1e-5 * maxAbs(want));
    expect(maxAbsDiff(out.logits, cls)).toBeGreaterThan(1e-3);  // the teacher's head is really in it
  });

  it('another image size: the CLS and distillation position rows kept, the grid resampled', () => {
    const big = Float32Array.from({ length: 3 * 40 * 48 }, (_, i) => Math.cos(i * 0.11) * 0.5);
    const out = deit.run(big, { height: 40, width: 48, capture: ['embed.hook_pos_embed'] });
    expect(out.attentionShape).toEqual([2, HEADS, 2 + 5 * 6, 2 + 5 * 6]);
    const pos = out.activations['embed.hook_pos_embed'].data, table = weights['vit.embeddings.position_embeddings'];
    expect(maxAbsDiff(pos.subarray(0, D), table.subarray(0, D))).toBe(0);
    expect(maxAbsDiff(pos.subarray(D, 2 * D), DIST_POS)).toBe(0);
    expect(pos.length).toBe((2 + 30) * D);
  });

  it('the image view reads two rows before the patches', () => {
    const view = imageRun(deit, { pixelValues: pixels, height: 32, width: 32 });
    expect({ n: view.n, prefix: view.prefix, rows: view.rows }).toEqual({ n: T, prefix: 2, rows: GRID });
    expect(view.top).toHaveLength(5);
  });

  it('the lens on the CLS stream puts the CLS and distillation rows of each stream through both heads', () => {
    const { hiddenStates } = deit.run(pixels, { height: 32, width: 32, attentions: false, hiddenStates: true });
    const norm = (x) => {
      const mean = x.reduce((a, v) => a + v, 0) / D, variance = x.reduce((a, v) => a + (v - mean) ** 2, 0) / D;
      return x.map((v, i) => ((v - mean) / Math.sqrt(variance + 1e-12)) * weights['vit.layernorm.weight'][i] + weights['vit.layernorm.bias'][i]);
    };
    const lens = clsLens(deit, { pixelValues: pixels, height: 32, width: 32 });
    expect(lens.streams).toHaveLength(3);
    lens.streams.forEach(({ top }, l) => {
      const row = (i) => norm(Array.from(hiddenStates.subarray((l * T + i) * D, (l * T + i + 1) * D)));
      const cls = linear(row(0), weights['classifier.weight'], weights['classifier.bias'], LABELS), dist = linear(row(1), DIST_W, DIST_B, LABELS);
      const want = topLabels(cls.map((v, i) => (v + dist[i]) / 2), deit.config.labels);
      expect(top.map((t) => t.id)).toEqual(want.map((t) => t.id));
      expect(maxAbsDiff(top.map((t) => t.probability), want.map((t) => t.probability))).toBeLessThan(1e-5);
    });
  });

  it('bad input is refused, and the model keeps working', () => {
    expect(() => deit.run(pixels.subarray(1), { height: 32, width: 32 })).toThrow(/3071 values/);
    expect(deit.run(pixels, { height: 32, width: 32 }).logits).toHaveLength(LABELS);
  });
});

describe('deit without the teacher (DeiTForImageClassification) and as DeiTModel', () => {
  it('the classifier reads the CLS row alone; DeiTModel has no logits', async () => {
    const model = await loadPretrained(deitFiles(false));
    try {
      expect(model.config.distillationHead).toBe(false);
      const out = model.run(pixels, { height: 32, width: 32, capture: ['ln_final.hook_normalized'] });
      const want = linear(Array.from(out.activations['ln_final.hook_normalized'].data.subarray(0, D)), weights['classifier.weight'], weights['classifier.bias'], LABELS);
      expect(maxAbsDiff(out.logits, want)).toBeLessThan(1e-5 * maxAbs(want));
    } finally {
      model.dispose();
    }
    const bare = await loadPretrained(variant('vit', {
      config: (c) => ({ ...c, model_type: 'deit', architectures: ['DeiTModel'] }),
      tensors: (vit) => {
        const out = new Map();
        for (const [name, t] of vit) if (!name.startsWith('classifier.')) out.set(name.replace(/^vit\./, 'deit.'), t);
        const table = f32(vit.get('vit.embeddings.position_embeddings')), rows = new Float32Array(T * D);
        rows.set(table.subarray(0, D)); rows.set(DIST_POS, D); rows.set(table.subarray(D), 2 * D);
        out.set('deit.embeddings.position_embeddings', tensor([1, T, D], rows));
        out.set('deit.embeddings.distillation_token', tensor([1, 1, D], DIST));
        return out;
      },
    }));
    try {
      const out = bare.run(pixels, { height: 32, width: 32 });
      expect(out.logits).toBe(null);
      expect(out.lastHiddenState).toHaveLength(T * D);
    } finally {
      bare.dispose();
    }
  });
});
