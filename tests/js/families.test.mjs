// The families added for Pythia, TinyStories, Qwen3, Gemma 3, DistilBERT and RoBERTa, in the
// variants a user's download can have. Each variant is made from a fixture by a transformation
// that keeps the model's function (another prefix, no head, other config key names, another
// dtype, an untied copy of the head), so the reference's numbers must still come out; where a
// variant changes the function (softcapping), the expected numbers are derived from the
// reference's by the definition (cap · tanh(logit / cap)).
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { loadPretrained } from '../../bindings/multihead.mjs';
import { FIXTURES, encodeJson, expectedOutputs, maxAbs, maxAbsDiff, renameTensors, toF32 } from './checkpoints.mjs';
import { checkAgainstTransformers, variant } from './fixture-checks.mjs';

const strip = (prefix) => (name) => name.replace(prefix, '');
const load = async (files, check) => {
  const model = await loadPretrained(files);
  try { return check(model); } finally { model.dispose(); }
};

describe('Pythia (gpt_neox)', () => {
  it('GPTNeoXModel: no "gpt_neox." prefix and no embed_out → hidden states, logits null', async () => {
    const files = variant('gpt_neox', {
      tensors: (t) => renameTensors(t, (name) => (name === 'embed_out.weight' ? null : name.replace(/^gpt_neox\./, ''))),
    });
    await load(files, (model) => {
      expect(model.config.hasLmHead).toBe(false);
      checkAgainstTransformers(model, 'gpt_neox', { logits: false });
    });
  });

  it('transformers 5\'s names (rope_parameters with rope_theta and partial_rotary_factor), in F32', async () => {
    const files = variant('gpt_neox', {
      tensors: (t) => new Map([...t].map(([n, x]) => [n, toF32(x)])),
      config: ({ rotary_pct: partial, rotary_emb_base: theta, ...rest }) => ({
        ...rest, rope_parameters: { rope_type: 'default', rope_theta: theta, partial_rotary_factor: partial },
      }),
    });
    await load(files, (model) => {
      expect(model.config.weightType).toBe('f32');
      checkAgainstTransformers(model, 'gpt_neox');
    });
  });

  it('the sequential block (use_parallel_residual false) is another function: the outputs move', async () => {
    const files = variant('gpt_neox', { tensors: (t) => t, config: (c) => ({ ...c, use_parallel_residual: false }) });
    const c = expectedOutputs('gpt_neox')[2];
    await load(files, (model) => {
      const out = model.run(c.ids);
      const [L, H, n] = out.attentionShape;
      // Layer 0's attention reads only the embeddings: the same; layer 1's reads what the block made.
      const first = L > 0 ? H * n * n : 0;
      expect(maxAbsDiff(out.attentions.subarray(0, first), c.attentions.subarray(0, first))).toBeLessThan(1e-4);
      expect(maxAbsDiff(out.logits, c.logits)).toBeGreaterThan(1e-2 * maxAbs(c.logits));
    });
  });
});

describe('TinyStories (gpt_neo)', () => {
  it('GPTNeoModel: no "transformer." prefix', async () => {
    const files = variant('gpt_neo', { tensors: (t) => renameTensors(t, strip(/^transformer\./)) });
    await load(files, (model) => checkAgainstTransformers(model, 'gpt_neo'));
  });

  it('attention_layers spelled out instead of attention_types; the local layers are named', async () => {
    const files = variant('gpt_neo', {
      tensors: (t) => t,
      config: ({ attention_types: _, ...rest }) => ({ ...rest, attention_layers: ['global', 'local'] }),
    });
    await load(files, (model) => {
      expect(model.config.slidingWindow).toBe(8);
      expect(model.config.slidingLayers).toEqual([1]);
      checkAgainstTransformers(model, 'gpt_neo');
    });
  });

  it('a local layer is banded: no weight on a key 8 or more tokens back, some inside the window', async () => {
    const c = expectedOutputs('gpt_neo').at(-1);
    await load(join(FIXTURES, 'gpt_neo'), (model) => {
      const out = model.run(c.ids);
      const [, H, n] = out.attentionShape;
      for (const [layer, local] of [[0, false], [1, true]]) {
        let outside = 0, inside = 0;
        for (let h = 0; h < H; h += 1)
          for (let i = 8; i < n; i += 1) {
            const row = out.attentions.subarray(((layer * H + h) * n + i) * n, ((layer * H + h) * n + i + 1) * n);
            for (let j = 0; j <= i; j += 1) (i - j >= 8 ? (outside += row[j]) : (inside += row[j]));
          }
        if (local) expect(outside).toBe(0);
        else expect(outside).toBeGreaterThan(1);
        expect(inside).toBeGreaterThan(1);
      }
    });
  });

  it('attention types that do not cover the layers, or an unknown kind, are refused by name', async () => {
    const short = variant('gpt_neo', { tensors: (t) => t, config: (c) => ({ ...c, attention_types: [[['global'], 1]] }) });
    await expect(loadPretrained(short)).rejects.toThrow(/name 1 layers, but the model has 2/);
    const odd = variant('gpt_neo', { tensors: (t) => t, config: (c) => ({ ...c, attention_types: [[['global', 'sparse'], 1]] }) });
    await expect(loadPretrained(odd)).rejects.toThrow(/attention type "sparse"/);
  });
});

describe('Qwen3', () => {
  it('without the "model." prefix, and with an untied head (a copy of the embedding)', async () => {
    const files = variant('qwen3', {
      tensors: (t) => {
        const out = renameTensors(t, strip(/^model\./));
        out.set('lm_head.weight', t.get('model.embed_tokens.weight'));
        return out;
      },
      config: (c) => ({ ...c, tie_word_embeddings: false }),
    });
    await load(files, (model) => checkAgainstTransformers(model, 'qwen3'));
  });

  it('rope_parameters (transformers 5) in F32; a rope scaling it does not implement is refused by name', async () => {
    const files = variant('qwen3', {
      tensors: (t) => new Map([...t].map(([n, x]) => [n, toF32(x)])),
      config: ({ rope_theta: theta, ...rest }) => ({ ...rest, rope_parameters: { rope_type: 'default', rope_theta: theta } }),
    });
    await load(files, (model) => checkAgainstTransformers(model, 'qwen3'));
    const yarn = variant('qwen3', {
      tensors: (t) => t, config: (c) => ({ ...c, rope_scaling: { rope_type: 'yarn', factor: 4, original_max_position_embeddings: 32768 } }),
    });
    await expect(loadPretrained(yarn)).rejects.toThrow(/rope scaling of type "yarn" is not supported/);
  });

  it('use_sliding_window: the layers from max_window_layers on are local (a window wider than the texts: the same numbers)', async () => {
    const files = variant('qwen3', {
      tensors: (t) => t, config: (c) => ({ ...c, use_sliding_window: true, sliding_window: 4096, max_window_layers: 1 }),
    });
    await load(files, (model) => {
      expect(model.config.slidingLayers).toEqual([1]);
      expect(model.config.slidingWindow).toBe(4096);
      checkAgainstTransformers(model, 'qwen3');
    });
  });
});

describe('Gemma 3 (gemma3_text)', () => {
  it('the older sliding_window_pattern instead of layer_types; the local layers are named', async () => {
    const files = variant('gemma3', {
      tensors: (t) => t,
      config: ({ layer_types: _, _sliding_window_pattern: __, ...rest }) => ({ ...rest, sliding_window_pattern: 3 }),
    });
    await load(files, (model) => {
      expect(model.config.slidingLayers).toEqual([0, 1]);
      checkAgainstTransformers(model, 'gemma3');
    });
  });

  it('transformers 5\'s rope_parameters per layer type', async () => {
    const files = variant('gemma3', {
      tensors: (t) => t,
      config: ({ rope_theta: full, rope_local_base_freq: local, rope_scaling: _, ...rest }) => ({
        ...rest,
        rope_parameters: {
          full_attention: { rope_type: 'default', rope_theta: full },
          sliding_attention: { rope_type: 'default', rope_theta: local },
        },
      }),
    });
    await load(files, (model) => checkAgainstTransformers(model, 'gemma3'));
  });

  it('final_logit_softcapping: logits = cap · tanh(logit / cap); attentions unchanged', async () => {
    const cap = 30;
    const files = variant('gemma3', { tensors: (t) => t, config: (c) => ({ ...c, final_logit_softcapping: cap }) });
    await load(files, (model) => {
      for (const c of expectedOutputs('gemma3')) {
        const out = model.run(c.ids);
        const want = c.logits.map((v) => cap * Math.tanh(v / cap));
        expect(maxAbsDiff(out.logits, want), c.key).toBeLessThan(1e-3 * maxAbs(want));
        expect(maxAbsDiff(out.attentions, c.attentions), c.key).toBeLessThan(1e-4);
        expect(maxAbs(out.logits)).toBeLessThanOrEqual(cap);
      }
    });
  });

  it('a multimodal Gemma 3, a bidirectional one and an unknown layer type are refused by name', async () => {
    const multimodal = variant('gemma3', { tensors: (t) => t, config: (c) => ({ model_type: 'gemma3', text_config: c }) });
    await expect(loadPretrained(multimodal)).rejects.toThrow(/Gemma 3 multimodal checkpoint.*gemma3_text/);
    const both = variant('gemma3', { tensors: (t) => t, config: (c) => ({ ...c, use_bidirectional_attention: true }) });
    await expect(loadPretrained(both)).rejects.toThrow(/use_bidirectional_attention/);
    const odd = variant('gemma3', {
      tensors: (t) => t, config: (c) => ({ ...c, layer_types: ['sliding_attention', 'chunked_attention', 'full_attention'] }),
    });
    await expect(loadPretrained(odd)).rejects.toThrow(/layer 1's type .* not supported/);
  });
});

describe('DistilBERT and RoBERTa', () => {
  it('DistilBertModel and RobertaModel: no prefix, no MLM head → hidden states, logits null', async () => {
    for (const [fixture, prefix, head] of [['distilbert', /^distilbert\./, /^vocab_/], ['roberta', /^roberta\./, /^lm_head\./]]) {
      const files = variant(fixture, { tensors: (t) => renameTensors(t, (name) => (head.test(name) ? null : name.replace(prefix, ''))) });
      await load(files, (model) => {
        expect(model.config.hasLmHead).toBe(false);
        checkAgainstTransformers(model, fixture, { logits: false });
      });
    }
  });

  // transformers' XLMRobertaModel and CamembertModel are RobertaModel's code ("Copied from"), with
  // the same tensor names: the RoBERTa fixture renamed to each gives transformers' RoBERTa numbers.
  it('xlm-roberta and camembert read as RoBERTa', async () => {
    for (const [modelType, architecture] of [['xlm-roberta', 'XLMRobertaForMaskedLM'], ['camembert', 'CamembertForMaskedLM']]) {
      const files = variant('roberta', { tensors: (t) => t, config: (c) => ({ ...c, model_type: modelType, architectures: [architecture] }) });
      await load(files, (model) => {
        expect(model.config.modelType).toBe(modelType);
        checkAgainstTransformers(model, 'roberta');
      });
    }
  });

  it('RoBERTa reads as many tokens as its positions allow (514 − 2), and says so past them', async () => {
    await load(join(FIXTURES, 'roberta'), (model) => {
      expect(model.config.maxPositions).toBe(512);
      expect(model.run(new Int32Array(512).fill(5)).attentionShape[2]).toBe(512);
      expect(() => model.run(new Int32Array(513).fill(5))).toThrow(/at most 512 tokens/);
    });
  });

  it('RoBERTa: a <pad> inside the text takes the padding position, and the tokens after it count on', async () => {
    // transformers' create_position_ids_from_input_ids: pads sit at padding_idx, others count from
    // padding_idx + 1 over the non-pad tokens. Checked through the first layer's input: the
    // embeddings (hidden state 0) of the tokens after the pad equal a run without the pad.
    await load(join(FIXTURES, 'roberta'), (model) => {
      const d = model.config.dModel;
      const withPad = model.run(Int32Array.from([0, 50, 1, 60, 70, 2]), { hiddenStates: true });
      const without = model.run(Int32Array.from([0, 50, 60, 70, 2]), { hiddenStates: true });
      expect(maxAbsDiff(withPad.hiddenStates.subarray(3 * d, 6 * d), without.hiddenStates.subarray(2 * d, 5 * d))).toBeLessThan(1e-6);
      expect(maxAbsDiff(withPad.hiddenStates.subarray(0, 2 * d), without.hiddenStates.subarray(0, 2 * d))).toBeLessThan(1e-6);
    });
  });
});
