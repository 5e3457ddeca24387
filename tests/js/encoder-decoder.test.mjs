// Encoder-decoders (T5, BART, Marian) through the JS API against transformers 5.17's own numbers
// (tests/fixtures/hf/{t5,bart,marian}, made by gen_encdec_vision.py): the source's and the
// target's ids, every attention of the three kinds and the logits under teacher forcing, and
// greedy generation (10 new tokens, minNewTokens 10) with generation_config.json's rules.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generationSettings } from '../../bindings/encoder-decoder.mjs';
import { loadPretrained } from '../../bindings/multihead.mjs';
import { FIXTURES, expectedJson, fixtureFiles, maxAbs, maxAbsDiff, readSafetensors } from './checkpoints.mjs';
import { variant } from './fixture-checks.mjs';

const f32 = (t) => new Float32Array(t.bytes.buffer.slice(t.bytes.byteOffset, t.bytes.byteOffset + t.bytes.length));
function expected(model) {
  const t = readSafetensors(new Uint8Array(readFileSync(join(FIXTURES, model, 'expected.safetensors'))));
  return Object.fromEntries([...t].filter(([, x]) => x.dtype === 'F32').map(([name, x]) => [name, f32(x)]));
}

// T5's scores are not scaled by 1/√d_kv: float32's rounding in q and k reaches its attentions
// √d_kv times larger (tests/cpp/encoder_decoder_test.cpp says how large).
const ATTENTION_TOLERANCE = { t5: 5e-5, bart: 2e-5, marian: 2e-5 };

describe.each(['t5', 'bart', 'marian'])('%s against transformers 5.17', (name) => {
  let model;
  const want = expected(name);
  const { cases } = expectedJson(name);
  beforeAll(async () => { model = await loadPretrained(fixtureFiles(name)); });
  afterAll(() => model?.dispose());

  it('is an encoder-decoder whose decoder starts where generation_config.json says', () => {
    expect(model.config.encoderDecoder).toBe(true);
    expect([model.config.layers, model.config.decoderLayers]).toEqual([2, 2]);
    expect(model.config.decoderStartTokenId).toBe(cases[0].decoder_input_ids[0]);
  });

  it('tokenizes the source and the target as transformers does', () => {
    for (const c of cases) {
      expect(Array.from(model.tokenize(c.source).ids)).toEqual(c.input_ids);
      expect(Array.from(model.tokenizeTarget(c.target).ids)).toEqual(c.labels);
    }
  });

  it('gives every attention and the logits (within 2e-5 of the largest) of transformers', () => {
    for (const c of cases) {
      const out = model.run(c.input_ids, { decoderInputIds: c.decoder_input_ids });
      const n = c.input_ids.length, m = c.decoder_input_ids.length;
      expect(out.crossAttentionShape).toEqual([2, 4, m, n]);
      for (const kind of ['encoder_attentions', 'decoder_attentions', 'cross_attentions']) {
        const got = out[kind.replace(/_(\w)/g, (_, x) => x.toUpperCase())];
        expect(got.length).toBe(want[`${c.key}.${kind}`].length);
        expect(maxAbsDiff(got, want[`${c.key}.${kind}`])).toBeLessThan(ATTENTION_TOLERANCE[name]);
      }
      const logits = want[`${c.key}.logits`];
      expect(maxAbsDiff(out.logits, logits) / maxAbs(logits)).toBeLessThan(2e-5);
    }
  });

  it('captures activations by name: each cross-attention pattern is transformers\' without asking for attentions', () => {
    const c = cases[0];
    const names = model.hookNames();
    expect(names[0]).toBe('encoder.blocks.0.hook_resid_pre');
    expect(names).toContain('decoder.blocks.1.cross_attn.hook_pattern');
    const out = model.run(c.input_ids, { decoderInputIds: c.decoder_input_ids, attentions: false,
      capture: ['decoder.blocks.*.cross_attn.hook_pattern', 'encoder.blocks.1.hook_resid_pre'] });
    expect(out.crossAttentions).toBe(null);
    const n = c.input_ids.length, m = c.decoder_input_ids.length, d = model.config.dModel;
    const cross = want[`${c.key}.cross_attentions`], hidden = want[`${c.key}.encoder_hidden_states`];
    for (const l of [0, 1]) {
      const { data, shape } = out.activations[`decoder.blocks.${l}.cross_attn.hook_pattern`];
      expect(shape).toEqual([4, m, n]);
      expect(maxAbsDiff(data, cross.subarray(l * 4 * m * n, (l + 1) * 4 * m * n))).toBeLessThan(ATTENTION_TOLERANCE[name]);
    }
    const resid = out.activations['encoder.blocks.1.hook_resid_pre'].data;  // transformers' hidden_states[1]
    expect(maxAbsDiff(resid, hidden.subarray(n * d, 2 * n * d)) / maxAbs(hidden)).toBeLessThan(2e-5);
  });

  it('generates greedily what transformers generated, each token with its cross-attention row', async () => {
    for (const c of cases) {
      const steps = [];
      for await (const step of model.generate(c.input_ids, { maxNewTokens: 10, minNewTokens: 10 })) steps.push(step);
      expect([model.config.decoderStartTokenId, ...steps.map((s) => s.id)]).toEqual(c.generated);
      const [L, H, n] = steps[0].crossAttentionShape;
      expect([L, H, n]).toEqual([2, 4, c.input_ids.length]);
      for (let r = 0; r < L * H; r += 1) {  // each head's row is a distribution over the source
        expect(steps.at(-1).crossAttention.subarray(r * n, (r + 1) * n).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 5);
      }
      expect(steps.map((s) => s.text).join('')).toBe(model.decode(c.generated));
    }
  });
});

describe('generation settings, as transformers reads them', () => {
  it('generation_config.json first, then config.json; bad_words_ids of one token; the start from bos_token_id where unnamed', () => {
    const hf = { decoder_start_token_id: 5, eos_token_id: 2, forced_eos_token_id: 2, no_repeat_ngram_size: 3 };
    const generation = { decoder_start_token_id: 7, eos_token_id: [2, 9], bad_words_ids: [[58100], [4, 5]] };
    expect(generationSettings(hf, generation)).toEqual({ decoderStartTokenId: 7, eosTokenIds: [2, 9], forcedBosTokenId: -1,
      forcedEosTokenId: 2, bannedTokenIds: [58100], noRepeatNgramSize: 3 });
    expect(generationSettings({ bos_token_id: 0 }, null).decoderStartTokenId).toBe(0);
    expect(generationSettings({}, null).decoderStartTokenId).toBe(null);
  });
});

describe('encoder-decoders refuse what they cannot do, in words, and go on working', () => {
  let bart;
  beforeAll(async () => { bart = await loadPretrained(fixtureFiles('bart')); });
  afterAll(() => bart?.dispose());

  it('a source longer than the positions', () => {
    expect(() => bart.run(new Array(129).fill(5), { decoderInputIds: [2] })).toThrow(/at most 128.*shorter source/);
    expect(bart.run([0, 5, 2], { decoderInputIds: [2, 5] }).logits.length).toBe(2 * bart.config.vocabSize);
  });

  it('a run without decoderInputIds, and what does not apply to encoder-decoders yet', () => {
    expect(() => bart.run([0, 5, 2])).toThrow(/decoderInputIds/);
    expect(() => bart.createContext()).toThrow(/not available for encoder-decoder models/);
    expect(() => bart.run([0, 5, 2], { decoderInputIds: [2], intervene: {} })).toThrow(/intervene is not available/);
    expect(() => bart.run([0, 5, 2], { decoderInputIds: [2], capture: ['decoder.blocks.0.cross_attn.hook_patern'] }))
      .toThrow(/closest are "decoder.blocks.0.cross_attn.hook_pattern"/);
    expect(() => bart.contributions([0, 5, 2])).toThrow(/not available for encoder-decoder models/);
    expect(() => bart.logitLens([0, 5, 2])).toThrow(/logitLens\(\) of an encoder-decoder needs \{ decoderInputIds \}/);
  });

  it('generation stops where its signal aborts, and refuses bounds that do not make sense', async () => {
    const controller = new AbortController();
    const ids = [];
    const run = async () => {
      for await (const step of bart.generate([0, 5, 2], { maxNewTokens: 5, minNewTokens: 5, signal: controller.signal })) {
        ids.push(step.id);
        controller.abort();
      }
    };
    await expect(run()).rejects.toMatchObject({ name: 'AbortError' });
    expect(ids.length).toBe(1);
    await expect(bart.generate([0, 5, 2], { maxNewTokens: 2, minNewTokens: 3 }).next()).rejects.toThrow(/minNewTokens must be/);
    const generator = bart.generate([0, 5, 2], { maxNewTokens: 3 });
    expect((await generator.next()).value.crossAttentionShape).toEqual([2, 4, 3]);
    await generator.return();  // its context goes with it
  });

  it('a source.spm that is not a SentencePiece model', async () => {
    const files = fixtureFiles('marian');
    files.set('source.spm', new TextEncoder().encode('this is not a SentencePiece model'));
    await expect(loadPretrained(files)).rejects.toThrow(/source.spm, target.spm\) could not be read: .*not a SentencePiece model/);
  });

  it('a T5 feed_forward_proj that is not implemented', async () => {
    const files = variant('t5', { tensors: (t) => t, config: (c) => ({ ...c, feed_forward_proj: 'gated-tanh' }) });
    await expect(loadPretrained(files)).rejects.toThrow(/feed_forward_proj "gated-tanh" is not supported/);
  });
});
