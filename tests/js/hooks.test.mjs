// Named activations (TransformerLens's names) and run contexts: captured activations against
// transformers' hidden states and attentions for every family, interventions against what they
// must equal (a zeroed hook_z is a switched-off head; a patched hook_z is model.patch's run), the
// list of names against what a run hands out, and contexts that never disturb each other.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { loadPretrained, supportedModelTypes } from '../../bindings/multihead.mjs';
import { readFileSync } from 'node:fs';
import { FIXTURES, expectedOutputs, fixtureConfig, maxAbs, maxAbsDiff, readSafetensors, toF32 } from './checkpoints.mjs';

const DECODERS = ['gpt2', 'llama', 'qwen2', 'gpt_neox', 'gpt_neo', 'qwen3', 'gemma3'];
const ENCODERS = ['bert', 'distilbert', 'roberta'];

async function withModel(fixture, check) {
  const model = await loadPretrained(join(FIXTURES, fixture));
  try { return await check(model); } finally { model.dispose(); }
}

// Layer l's slice of the fixture's hidden states ((layers + 1) × n × d).
const hiddenAt = (c, l) => {
  const [, n, d] = c.hiddenShape;
  return c.hidden.subarray(l * n * d, (l + 1) * n * d);
};
// Bit for bit (a fast check for large arrays: Vitest's toEqual walks them one element at a time).
const same = (got, want) => got.length === want.length && got.every((v, i) => Object.is(v, want[i]));
const closeTo = (got, want, what) => {
  expect(got.length, what).toBe(want.length);
  expect(maxAbsDiff(got, want), what).toBeLessThan(1e-3 * Math.max(1, maxAbs(want)));
};

describe('captured activations are transformers\' numbers', () => {
  it.each(DECODERS)('%s: hook_resid_pre = hidden_states[l], ln_final = the last, hook_pattern = attentions', async (fixture) => {
    await withModel(fixture, (model) => {
      const { layers } = model.config;
      for (const c of expectedOutputs(fixture)) {
        const out = model.run(c.ids, {
          capture: ['blocks.*.hook_resid_pre', 'blocks.*.hook_resid_post', 'blocks.*.attn.hook_pattern', 'ln_final.hook_normalized'],
        });
        const a = out.activations;
        const [, n, d] = c.hiddenShape;
        for (let l = 0; l < layers; l += 1) {
          expect(a[`blocks.${l}.hook_resid_pre`].shape).toEqual([n, d]);
          closeTo(a[`blocks.${l}.hook_resid_pre`].data, hiddenAt(c, l), `${fixture} ${c.key} resid_pre ${l}`);
          if (l > 0) expect(same(a[`blocks.${l - 1}.hook_resid_post`].data, a[`blocks.${l}.hook_resid_pre`].data)).toBe(true);
          const pattern = a[`blocks.${l}.attn.hook_pattern`];
          expect(pattern.shape).toEqual([model.config.heads, n, n]);
          const size = model.config.heads * n * n;
          expect(maxAbsDiff(pattern.data, c.attentions.subarray(l * size, (l + 1) * size))).toBeLessThan(1e-4);
          // The run's own attentions are the same numbers as the hook's (one kernel).
          expect(same(pattern.data, out.attentions.subarray(l * size, (l + 1) * size))).toBe(true);
        }
        closeTo(a['ln_final.hook_normalized'].data, hiddenAt(c, layers), `${fixture} ${c.key} ln_final`);
      }
    });
  });

  it.each(ENCODERS)('%s: embed.ln = hidden_states[0], hook_normalized_resid_post = hidden_states[l + 1]', async (fixture) => {
    await withModel(fixture, (model) => {
      const { layers } = model.config;
      for (const c of expectedOutputs(fixture)) {
        const out = model.run(c.ids, {
          tokenTypeIds: c.types, capture: ['embed.ln.hook_normalized', 'blocks.*.hook_normalized_resid_post', 'blocks.*.attn.hook_pattern'],
        });
        const a = out.activations;
        closeTo(a['embed.ln.hook_normalized'].data, hiddenAt(c, 0), `${fixture} embeddings`);
        const n = c.ids.length, size = model.config.heads * n * n;
        for (let l = 0; l < layers; l += 1) {
          closeTo(a[`blocks.${l}.hook_normalized_resid_post`].data, hiddenAt(c, l + 1), `${fixture} ${c.key} layer ${l}`);
          expect(maxAbsDiff(a[`blocks.${l}.attn.hook_pattern`].data, c.attentions.subarray(l * size, (l + 1) * size))).toBeLessThan(1e-4);
        }
      }
    });
  });

  it('bert: embed.hook_embed + embed.hook_pos_embed + embed.hook_token_type_embed through a float64 LayerNorm is embed.ln.hook_normalized', async () => {
    const weights = readSafetensors(new Uint8Array(readFileSync(join(FIXTURES, 'bert', 'model.safetensors'))));
    const vector = (name) => new Float32Array(toF32([...weights].find(([n]) => n.endsWith(name))[1]).bytes.buffer);
    const gamma = vector('embeddings.LayerNorm.weight'), beta = vector('embeddings.LayerNorm.bias');
    const eps = fixtureConfig('bert').layer_norm_eps;
    await withModel('bert', (model) => {
      const c = expectedOutputs('bert').find((x) => x.types && x.types.some((t) => t === 1)) ?? expectedOutputs('bert')[0];
      const a = model.run(c.ids, { tokenTypeIds: c.types, capture: ['embed.*', 'embed.ln.hook_normalized'] }).activations;
      expect(Object.keys(a).sort()).toEqual(['embed.hook_embed', 'embed.hook_pos_embed', 'embed.hook_token_type_embed', 'embed.ln.hook_normalized']);
      const d = model.config.dModel, n = c.ids.length;
      let worst = 0;
      for (let t = 0; t < n; t += 1) {
        const x = Array.from({ length: d }, (_, i) => a['embed.hook_embed'].data[t * d + i] + a['embed.hook_pos_embed'].data[t * d + i] + a['embed.hook_token_type_embed'].data[t * d + i]);
        const mean = x.reduce((p, q) => p + q, 0) / d;
        const sd = Math.sqrt(x.reduce((p, q) => p + (q - mean) ** 2, 0) / d + eps);
        x.forEach((v, i) => { worst = Math.max(worst, Math.abs((v - mean) / sd * gamma[i] + beta[i] - a['embed.ln.hook_normalized'].data[t * d + i])); });
      }
      expect(worst).toBeLessThan(1e-4);
    });
  });

  it('the parts add up: resid_mid = resid_pre + attn_out, resid_post = resid_mid + mlp_out; hook_embed + hook_pos_embed = resid_pre 0', async () => {
    await withModel('gpt2', (model) => {
      const c = expectedOutputs('gpt2')[1];
      const a = model.run(c.ids, { capture: ['hook_embed', 'hook_pos_embed', 'blocks.1.*'] }).activations;
      const pre0 = model.run(c.ids, { capture: ['blocks.0.hook_resid_pre'] }).activations['blocks.0.hook_resid_pre'].data;
      const sum = (x, y) => x.map((v, i) => v + y[i]);
      expect(maxAbsDiff(sum(a.hook_embed.data, a.hook_pos_embed.data), pre0)).toBeLessThan(1e-6);
      expect(maxAbsDiff(sum(a['blocks.1.hook_resid_pre'].data, a['blocks.1.hook_attn_out'].data), a['blocks.1.hook_resid_mid'].data)).toBeLessThan(1e-5);
      expect(maxAbsDiff(sum(a['blocks.1.hook_resid_mid'].data, a['blocks.1.hook_mlp_out'].data), a['blocks.1.hook_resid_post'].data)).toBeLessThan(1e-5);
    });
  });

  it('hook_z through W_O and b_O is hook_attn_out; hook_attn_scores softmaxed is hook_pattern (float64 here)', async () => {
    await withModel('llama', (model) => {
      const c = expectedOutputs('llama')[0];
      const { heads, headDim } = model.config;
      const a = model.run(c.ids, { capture: ['blocks.0.attn.hook_attn_scores', 'blocks.0.attn.hook_pattern', 'blocks.0.attn.hook_z', 'blocks.0.attn.hook_rot_q', 'blocks.0.attn.hook_v'] }).activations;
      const n = c.ids.length;
      expect(a['blocks.0.attn.hook_z'].shape).toEqual([n, heads, headDim]);
      expect(a['blocks.0.attn.hook_rot_q'].shape).toEqual([n, heads, headDim]);
      expect(a['blocks.0.attn.hook_v'].shape).toEqual([n, model.config.kvHeads, headDim]);
      const scores = a['blocks.0.attn.hook_attn_scores'].data, pattern = a['blocks.0.attn.hook_pattern'].data;
      let worst = 0;
      for (let row = 0; row < heads * n; row += 1) {
        const i = row % n;
        const s = Array.from(scores.subarray(row * n, (row + 1) * n));
        s.slice(i + 1).forEach((v) => expect(v).toBe(-Infinity));  // causal: later keys are masked
        const top = Math.max(...s.slice(0, i + 1));
        const e = s.map((v) => (v === -Infinity ? 0 : Math.exp(v - top)));
        const total = e.reduce((x, y) => x + y, 0);
        e.forEach((v, j) => { worst = Math.max(worst, Math.abs(v / total - pattern[row * n + j])); });
      }
      expect(worst).toBeLessThan(1e-6);
      // z = pattern · V per head (V's kv head for grouped heads), in float64.
      const v = a['blocks.0.attn.hook_v'].data, z = a['blocks.0.attn.hook_z'].data, group = heads / model.config.kvHeads;
      let zWorst = 0;
      for (let h = 0; h < heads; h += 1) {
        for (let i = 0; i < n; i += 1) {
          for (let k = 0; k < headDim; k += 1) {
            let acc = 0;
            for (let j = 0; j < n; j += 1) acc += pattern[(h * n + i) * n + j] * v[(j * model.config.kvHeads + Math.floor(h / group)) * headDim + k];
            zWorst = Math.max(zWorst, Math.abs(acc - z[(i * heads + h) * headDim + k]));
          }
        }
      }
      expect(zWorst).toBeLessThan(1e-5 * Math.max(1, maxAbs(z)));
    });
  });
});

describe('interventions', () => {
  it.each(['gpt2', 'llama', 'gemma3', 'gpt_neox'])('%s: zeroing one head\'s hook_z is disabledHeads', async (fixture) => {
    await withModel(fixture, (model) => {
      const c = expectedOutputs(fixture)[1];
      const { layers, headDim } = model.config;
      const layer = layers - 1, head = 1;
      const off = model.run(c.ids, { disabledHeads: [[layer, head]] });
      const zeroed = model.run(c.ids, {
        intervene: { [`blocks.${layer}.attn.hook_z`]: ({ data, shape }) => {
          for (let t = 0; t < shape[0]; t += 1) data.fill(0, (t * shape[1] + head) * headDim, (t * shape[1] + head + 1) * headDim);
        } },
      });
      const plain = model.run(c.ids);
      expect(maxAbsDiff(zeroed.logits, off.logits)).toBeLessThan(1e-5 * maxAbs(off.logits));
      expect(maxAbsDiff(plain.logits, off.logits)).toBeGreaterThan(1e-4 * maxAbs(off.logits));  // the head mattered
    });
  });

  it('the data form writes the same as a function, and a hook that changes nothing changes nothing', async () => {
    await withModel('gpt2', (model) => {
      const c = expectedOutputs('gpt2')[2];
      const n = c.ids.length, d = model.config.dModel;
      const plain = model.run(c.ids);
      const untouched = model.run(c.ids, { capture: model.hookNames(), intervene: { 'blocks.*.hook_resid_post': () => {} } });
      expect(same(untouched.logits, plain.logits)).toBe(true);
      expect(same(untouched.attentions, plain.attentions)).toBe(true);
      expect(Object.keys(untouched.activations).sort()).toEqual(model.hookNames().sort());
      const values = new Float32Array(2 * d).map((_, i) => Math.sin(i));
      const viaData = model.run(c.ids, { intervene: { 'blocks.0.hook_resid_mid': { positions: [0, n - 1], values } } });
      const viaFunction = model.run(c.ids, {
        intervene: { 'blocks.0.hook_resid_mid': ({ data }) => { data.set(values.subarray(0, d), 0); data.set(values.subarray(d), (n - 1) * d); } },
      });
      expect(same(viaData.logits, viaFunction.logits)).toBe(true);
      expect(maxAbsDiff(viaData.logits, plain.logits)).toBeGreaterThan(1e-3);
      // Captured after the change: what the run went on from.
      const seen = model.run(c.ids, { capture: ['blocks.0.hook_resid_mid'], intervene: { 'blocks.0.hook_resid_mid': { positions: [0, n - 1], values } } });
      expect(seen.activations['blocks.0.hook_resid_mid'].data.subarray(0, d)).toEqual(values.subarray(0, d));
    });
  });

  it.each(['gpt2', 'qwen3'])('%s: patching through intervene is model.patch (heads and MLPs)', async (fixture) => {
    await withModel(fixture, async (model) => {
      const cases = expectedOutputs(fixture);
      const clean = cases[0].ids, n = clean.length;
      const corrupt = Int32Array.from(clean);
      corrupt[1] = (corrupt[1] + 7) % model.config.vocabSize;
      const target = 5, contrast = 9;
      const { layers, heads, headDim } = model.config;
      const diff = (out) => out.logits[target] - out.logits[contrast];
      const cleanRun = model.run(clean, { logits: [n - 1], capture: ['blocks.*.attn.hook_z', 'blocks.*.hook_mlp_out'] });
      const corruptRun = model.run(corrupt, { logits: [n - 1] });
      for (const what of ['heads', 'mlps']) {
        const result = await model.patch(clean, corrupt, { target, contrast, what });
        expect(result.clean).toBeCloseTo(diff(cleanRun), 4);
        expect(result.corrupt).toBeCloseTo(diff(corruptRun), 4);
        for (let l = 0; l < layers; l += 1) {
          for (let h = 0; h < (what === 'heads' ? heads : 1); h += 1) {
            const name = what === 'heads' ? `blocks.${l}.attn.hook_z` : `blocks.${l}.hook_mlp_out`;
            const from = cleanRun.activations[name].data;
            const patched = model.run(corrupt, {
              logits: [n - 1],
              intervene: { [name]: what === 'heads'
                ? { heads: [h], values: Float32Array.from({ length: n * headDim }, (_, i) => from[(Math.floor(i / headDim) * heads + h) * headDim + (i % headDim)]) }
                : { values: from } },
            });
            const recovered = (diff(patched) - result.corrupt) / (result.clean - result.corrupt);
            expect(recovered).toBeCloseTo(result.recovered[l * (what === 'heads' ? heads : 1) + h], 3);
          }
        }
      }
    });
  });
});

describe('names', () => {
  it('hookNames() is what a run hands out, in TransformerLens\'s names, per family', async () => {
    await withModel('gpt2', (model) => {
      const names = model.hookNames();
      expect(names[0]).toBe('hook_embed');
      expect(names).toContain('hook_pos_embed');
      expect(names).toContain('blocks.0.attn.hook_q');
      expect(names).not.toContain('blocks.0.attn.hook_rot_q');
      expect(names.at(-1)).toBe('ln_final.hook_normalized');
      expect(names.filter((name) => name.startsWith('blocks.1.'))).toEqual([
        'blocks.1.hook_resid_pre', 'blocks.1.ln1.hook_normalized', 'blocks.1.attn.hook_q', 'blocks.1.attn.hook_k',
        'blocks.1.attn.hook_v', 'blocks.1.attn.hook_attn_scores', 'blocks.1.attn.hook_pattern', 'blocks.1.attn.hook_z',
        'blocks.1.hook_attn_out', 'blocks.1.hook_resid_mid', 'blocks.1.ln2.hook_normalized', 'blocks.1.mlp.hook_pre',
        'blocks.1.mlp.hook_post', 'blocks.1.hook_mlp_out', 'blocks.1.hook_resid_post']);
    });
    await withModel('gpt_neox', (model) => {
      const names = model.hookNames();
      expect(names).toContain('blocks.0.attn.hook_rot_q');
      expect(names).not.toContain('blocks.0.hook_resid_mid');  // a parallel block has none
      expect(names).not.toContain('hook_pos_embed');
    });
    await withModel('llama', (model) => expect(model.hookNames()).toContain('blocks.0.mlp.hook_pre_linear'));
  });

  it('a name that does not exist is an Error that lists the close ones; the attention\'s insides are read-only', async () => {
    await withModel('gpt2', (model) => {
      const ids = expectedOutputs('gpt2')[0].ids;
      expect(() => model.run(ids, { capture: ['blocks.0.attn.hook_zz'] })).toThrow(/no activation named "blocks.0.attn.hook_zz".*"blocks.0.attn.hook_z"/);
      expect(() => model.run(ids, { capture: ['blocks.9.hook_resid_post'] })).toThrow(/closest are/);
      expect(() => model.run(ids, { capture: ['nothing.*'] })).toThrow(/no activation of this model matches "nothing\.\*"/);
      expect(() => model.run(ids, { capture: 'hook_embed' })).toThrow(/capture must be a list/);
      expect(() => model.run(ids, { intervene: { 'blocks.0.attn.hook_pattern': () => {} } })).toThrow(/captured but not changed/);
      expect(() => model.run(ids, { intervene: { 'blocks.0.hook_resid_pre': { values: [1, 2] } } })).toThrow(/must hold .* got 2/);
      expect(() => model.run(ids, { intervene: { 'blocks.0.hook_resid_pre': () => { throw new Error('mine'); } } })).toThrow('mine');
      // The model still works, and runs as before.
      const again = model.run(ids);
      expect(maxAbsDiff(again.logits, expectedOutputs('gpt2')[0].logits)).toBeLessThan(1e-3 * maxAbs(again.logits));
    });
  });

  it('supportedModelTypes() is the family table; modelType names the model and architecture still works', async () => {
    const types = await supportedModelTypes();
    for (const t of ['gpt2', 'bert', 'llama', 'qwen2', 'mistral', 'qwen3', 'gemma3_text', 'gpt_neox', 'gpt_neo', 'distilbert', 'roberta']) {
      expect(types).toContain(t);
    }
    await withModel('qwen3', (model) => {
      expect(model.config.modelType).toBe('qwen3');
      expect(model.config.architecture).toBe('qwen3');
      expect(Object.keys(model.config)).not.toContain('architecture');
    });
  });
});

describe('contexts', () => {
  it('two contexts on one model, interleaved, give the bits of one context alone', async () => {
    await withModel('llama', (model) => {
      const [a, b] = expectedOutputs('llama').map((c) => c.ids);
      const alone = model.createContext();
      const soloA = [], soloB = [];
      for (let k = 1; k <= a.length; k += 1) soloA.push(alone.run(a.subarray(0, k), { logits: [k - 1], reusePrefix: true }));
      alone.dispose();
      const other = model.createContext();
      for (let k = 1; k <= b.length; k += 1) soloB.push(other.run(b.subarray(0, k), { logits: [k - 1], reusePrefix: true }));
      other.dispose();
      const one = model.createContext(), two = model.createContext();
      for (let k = 1; k <= Math.max(a.length, b.length); k += 1) {
        if (k <= a.length) {
          const out = one.run(a.subarray(0, k), { logits: [k - 1], reusePrefix: true });
          expect(same(out.logits, soloA[k - 1].logits)).toBe(true);
          expect(same(out.attentions, soloA[k - 1].attentions)).toBe(true);
          expect(out.reusedTokens).toBe(soloA[k - 1].reusedTokens);
        }
        if (k <= b.length) {
          const out = two.run(b.subarray(0, k), { logits: [k - 1], reusePrefix: true });
          expect(same(out.logits, soloB[k - 1].logits)).toBe(true);
          expect(out.reusedTokens).toBe(soloB[k - 1].reusedTokens);
        }
      }
      two.dispose();
      expect(() => two.run(a)).toThrow(/this context was disposed/);
      expect(same(one.run(a).logits, model.run(a).logits)).toBe(true);
    });
  });

  it('a generator owns its state: runs of the model between its steps, or another generator, change none of its tokens', async () => {
    await withModel('gpt2', async (model) => {
      const [a, b] = expectedOutputs('gpt2').map((c) => c.ids);
      const alone = [];
      for await (const step of model.generate(a, { maxNewTokens: 6, stopAtEos: false })) alone.push(step.id);
      const interleaved = [];
      const other = model.generate(b, { maxNewTokens: 6, stopAtEos: false });
      for await (const step of model.generate(a, { maxNewTokens: 6, stopAtEos: false })) {
        interleaved.push(step.id);
        model.run(b, { logits: [b.length - 1], reusePrefix: true });
        await other.next();
      }
      expect(interleaved).toEqual(alone);
    });
  });

  it('runs of the model while a patch() is under way (a page\'s typing) change neither', async () => {
    await withModel('gpt2', async (model) => {
      const [clean, other] = expectedOutputs('gpt2').map((c) => c.ids);
      const corrupt = Int32Array.from(clean);
      corrupt[2] = (corrupt[2] + 11) % model.config.vocabSize;
      const options = { target: 3, contrast: 8, what: 'heads' };
      const alone = await model.patch(clean, corrupt, options);
      const typed = [];
      for (let k = 1; k <= other.length; k += 1) typed.push(model.run(other.subarray(0, k), { logits: [k - 1], reusePrefix: true }).logits);
      model.run(clean, { logits: [0], reusePrefix: true });  // the default context's prefix starts over
      let k = 0;
      const during = await model.patch(clean, corrupt, {
        ...options,
        onProgress: () => {
          k = Math.min(k + 1, other.length);
          expect(same(model.run(other.subarray(0, k), { logits: [k - 1], reusePrefix: true }).logits, typed[k - 1])).toBe(true);
        },
      });
      expect(k).toBeGreaterThan(0);
      expect(same(during.recovered, alone.recovered)).toBe(true);
    });
  });

  it('dispose() of the model ends its contexts with a clear Error', async () => {
    const model = await loadPretrained(join(FIXTURES, 'gpt2'));
    const context = model.createContext();
    model.dispose();
    expect(() => context.run([1, 2])).toThrow(/this model was disposed/);
    expect(() => model.createContext()).toThrow(/this model was disposed/);
  });
});
