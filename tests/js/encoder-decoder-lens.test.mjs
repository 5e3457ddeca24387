// The logit lens and direct logit attribution on an encoder-decoder's decoder, against a float64
// reference written here from the checkpoints' own tensors and transformers 5.17's hidden states
// and logits (tests/fixtures/hf/{t5,bart,marian}): the lens is the decoder's final norm (T5) and
// output head over each decoder hidden state; the attribution splits T5's last residual into its
// embeddings, self- and cross-attention heads (hook_z through W_O) and MLPs.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPretrained } from '../../bindings/multihead.mjs';
import { FIXTURES, expectedJson, fixtureFiles, readSafetensors } from './checkpoints.mjs';

const f32 = (t) => new Float32Array(t.bytes.buffer.slice(t.bytes.byteOffset, t.bytes.byteOffset + t.bytes.length));
const tensors = (model, file) => new Map([...readSafetensors(new Uint8Array(readFileSync(join(FIXTURES, model, file))))]
  .filter(([, x]) => x.dtype === 'F32').map(([name, x]) => [name, { data: f32(x), shape: x.shape }]));
const config = (model) => JSON.parse(readFileSync(join(FIXTURES, model, 'config.json'), 'utf8'));

// T5's decoder output × d^-½ before the head where scale_decoder_outputs (older configs: where tied).
const outputScale = (c) => ((c.scale_decoder_outputs ?? c.tie_word_embeddings ?? true) ? c.d_model ** -0.5 : 1);

// The reference's output head: logits (vocab, float64) of one row h (d floats) of a decoder hidden
// state, through T5's final RMS norm and output scale, or BART's / Marian's head as it is.
function referenceHead(model, weights, h, finalStream) {
  const c = config(model), d = c.d_model;
  const embed = (weights.get('shared.weight') ?? weights.get('model.shared.weight')).data;
  const bias = weights.get('final_logits_bias')?.data;
  let x = Float64Array.from(h);
  if (model === 't5') {
    if (!finalStream) {  // hidden state L is already normed by transformers
      const gamma = weights.get('decoder.final_layer_norm.weight').data;
      const rms = Math.sqrt(x.reduce((a, v) => a + v * v, 0) / d + c.layer_norm_epsilon);
      x = x.map((v, i) => (gamma[i] * v) / rms);
    }
    x = x.map((v) => v * outputScale(c));
  }
  const vocab = embed.length / d;
  const logits = new Float64Array(vocab);
  for (let v = 0; v < vocab; v += 1) {
    let sum = bias ? bias[v] : 0;
    for (let i = 0; i < d; i += 1) sum += x[i] * embed[v * d + i];
    logits[v] = sum;
  }
  return logits;
}
function softmax(logits) {
  const top = Math.max(...logits);
  const e = logits.map((v) => Math.exp(v - top));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / sum);
}

describe.each(['t5', 'bart', 'marian'])('%s: the logit lens on the decoder', (name) => {
  let model;
  const weights = tensors(name, 'model.safetensors');
  const want = tensors(name, 'expected.safetensors');
  const { cases } = expectedJson(name);
  beforeAll(async () => { model = await loadPretrained(fixtureFiles(name)); });
  afterAll(() => model?.dispose());

  it('the reference head over transformers\' last hidden state gives transformers\' logits (the reference is right)', () => {
    const c = cases[0], d = config(name).d_model, m = c.decoder_input_ids.length;
    const hidden = want.get(`${c.key}.decoder_hidden_states`).data, logits = want.get(`${c.key}.logits`).data;
    const L = hidden.length / (m * d) - 1, vocab = logits.length / m;
    for (const p of [0, m - 1]) {
      const got = referenceHead(name, weights, hidden.subarray((L * m + p) * d, (L * m + p + 1) * d), true);
      for (let v = 0; v < vocab; v += 1) expect(Math.abs(got[v] - logits[p * vocab + v])).toBeLessThan(1e-4);
    }
  });

  it('gives each stream\'s top tokens and probabilities, and each target\'s, as the reference does', () => {
    for (const c of cases) {
      const m = c.decoder_input_ids.length, d = config(name).d_model;
      const hidden = want.get(`${c.key}.decoder_hidden_states`).data;
      const streams = hidden.length / (m * d);
      const positions = [0, Math.floor(m / 2), m - 1];
      const targets = [c.decoder_input_ids[1] ?? 0, 3];
      const lens = model.logitLens(c.input_ids, { decoderInputIds: c.decoder_input_ids, positions, topK: 4, targets });
      expect(lens.shape).toEqual([streams, 3, 4]);
      positions.forEach((p, pi) => {
        for (let s = 0; s < streams; s += 1) {
          const probabilities = softmax(referenceHead(name, weights, hidden.subarray((s * m + p) * d, (s * m + p + 1) * d), s === streams - 1));
          const sorted = [...probabilities].sort((a, b) => b - a);
          for (let k = 0; k < 4; k += 1) {
            const at = (s * 3 + pi) * 4 + k;
            // Each listed token has the probability the reference gives it, and the k-th largest.
            expect(Math.abs(lens.probabilities[at] - probabilities[lens.ids[at]])).toBeLessThan(2e-5);
            expect(Math.abs(lens.probabilities[at] - sorted[k])).toBeLessThan(2e-5);
          }
          targets.forEach((t, ti) => {
            const at = (s * 3 + pi) * 2 + ti;
            expect(Math.abs(lens.targets.probabilities[at] - probabilities[t])).toBeLessThan(2e-5);
            const rank = probabilities.filter((q) => q > probabilities[t] + 1e-6).length;
            expect(Math.abs(lens.targets.ranks[at] - rank)).toBeLessThanOrEqual(probabilities.filter((q) => Math.abs(q - probabilities[t]) <= 1e-6).length - 1);
          });
        }
      });
    }
  });

  it('refuses positions past the decoder ids and too many targets, and goes on working', () => {
    const c = cases[0], m = c.decoder_input_ids.length;
    expect(() => model.logitLens(c.input_ids, { decoderInputIds: c.decoder_input_ids, positions: [m] })).toThrow(/decoder positions from 0 to/);
    expect(() => model.logitLens(c.input_ids, { decoderInputIds: c.decoder_input_ids, targets: Array(65).fill(1) })).toThrow(/at most 64 targets/);
    expect(() => model.logitLens(c.input_ids, {})).toThrow(/needs \{ decoderInputIds \}/);
    expect(() => model.logitLens(c.input_ids, { decoderInputIds: c.decoder_input_ids, attribute: {} })).toThrow(/attribute\(\) is its own call/);
    expect(model.logitLens(c.input_ids, { decoderInputIds: c.decoder_input_ids, positions: [m - 1] }).shape[1]).toBe(1);
  });
});

describe('t5: direct logit attribution on the decoder', () => {
  let model;
  const weights = tensors('t5', 'model.safetensors');
  const want = tensors('t5', 'expected.safetensors');
  const { cases } = expectedJson('t5');
  const c = config('t5'), d = c.d_model, heads = c.num_heads, dk = c.d_kv;
  beforeAll(async () => { model = await loadPretrained(fixtureFiles('t5')); });
  afterAll(() => model?.dispose());

  it('splits the logit difference into embeddings, self- and cross-attention heads and MLPs as the reference does', () => {
    const k = cases[1], m = k.decoder_input_ids.length, vocab = c.vocab_size, L = c.num_decoder_layers;
    const logits = want.get(`${k.key}.logits`).data;
    const run = model.run(k.input_ids, { decoderInputIds: k.decoder_input_ids, attentions: false,
      capture: ['decoder.blocks.0.hook_resid_pre', 'decoder.blocks.*.attn.hook_z', 'decoder.blocks.*.cross_attn.hook_z', 'decoder.blocks.*.hook_mlp_out'] });
    expect(run.activations['decoder.blocks.1.cross_attn.hook_z'].shape).toEqual([m, heads, dk]);
    for (const p of [1, m - 1]) {
      const row = logits.subarray(p * vocab, (p + 1) * vocab);
      const order = [...row.keys()].sort((a, b) => row[b] - row[a]);
      const [target, contrast] = order;
      const got = model.attribute(k.input_ids, { decoderInputIds: k.decoder_input_ids, position: p, target, contrast });
      // The reference: each part's write at p in float64, their sum the residual, the direction
      // s γ ⊙ (E[target] − E[contrast]) / rms(residual), s the output scale.
      const write = (z, weight) => {  // z: this head's d_k values; weight: o.weight (d × inner), the head's columns
        const { data, shape: [, inner] } = weight;
        return (h) => Float64Array.from({ length: d }, (_, i) => {
          let sum = 0;
          for (let j = 0; j < dk; j += 1) sum += data[i * inner + h * dk + j] * z[(p * heads + h) * dk + j];
          return sum;
        });
      };
      const parts = { embeddings: Float64Array.from(run.activations['decoder.blocks.0.hook_resid_pre'].data.subarray(p * d, (p + 1) * d)), heads: [], cross: [], mlps: [] };
      for (let l = 0; l < L; l += 1) {
        const self = write(run.activations[`decoder.blocks.${l}.attn.hook_z`].data, weights.get(`decoder.block.${l}.layer.0.SelfAttention.o.weight`));
        const cross = write(run.activations[`decoder.blocks.${l}.cross_attn.hook_z`].data, weights.get(`decoder.block.${l}.layer.1.EncDecAttention.o.weight`));
        for (let h = 0; h < heads; h += 1) parts.heads.push(self(h)), parts.cross.push(cross(h));
        parts.mlps.push(Float64Array.from(run.activations[`decoder.blocks.${l}.hook_mlp_out`].data.subarray(p * d, (p + 1) * d)));
      }
      const all = [parts.embeddings, ...parts.heads, ...parts.cross, ...parts.mlps];
      const residual = Float64Array.from({ length: d }, (_, i) => all.reduce((a, part) => a + part[i], 0));
      const rms = Math.sqrt(residual.reduce((a, v) => a + v * v, 0) / d + c.layer_norm_epsilon);
      const gamma = weights.get('decoder.final_layer_norm.weight').data, embed = weights.get('shared.weight').data;
      const v = Float64Array.from({ length: d }, (_, i) => (outputScale(c) * gamma[i] * (embed[target * d + i] - embed[contrast * d + i])) / rms);
      const dot = (part) => part.reduce((a, x, i) => a + x * v[i], 0);
      const scale = Math.abs(row[target] - row[contrast]) + 1;
      const close = (a, b) => expect(Math.abs(a - b)).toBeLessThan(2e-5 * scale);
      close(got.embeddings, dot(parts.embeddings));
      parts.heads.forEach((part, i) => close(got.heads[i], dot(part)));
      parts.cross.forEach((part, i) => close(got.crossHeads[i], dot(part)));
      parts.mlps.forEach((part, i) => close(got.mlps[i], dot(part)));
      expect(got.headsShape).toEqual([L, heads]);
      expect(got.biases).toBe(0);  // T5 has none
      // The parts sum to transformers' own logit difference.
      expect(Math.abs(got.total + got.normBias - (row[target] - row[contrast]))).toBeLessThan(1e-4 * scale);
      expect(Math.abs(got.logitDifference - (row[target] - row[contrast]))).toBeLessThan(1e-4 * scale);
    }
  });

  it('attributes the top prediction by default, and refuses a bad position or target', () => {
    const k = cases[0], m = k.decoder_input_ids.length, vocab = c.vocab_size;
    const row = want.get(`${k.key}.logits`).data.subarray((m - 1) * vocab, m * vocab);
    const top = row.indexOf(Math.max(...row));
    const got = model.attribute(k.input_ids, { decoderInputIds: k.decoder_input_ids });
    expect([got.position, got.target, got.contrast]).toEqual([m - 1, top, null]);
    expect(() => model.attribute(k.input_ids, { decoderInputIds: k.decoder_input_ids, position: m })).toThrow(/decoder position from 0 to/);
    expect(() => model.attribute(k.input_ids, { decoderInputIds: k.decoder_input_ids, target: vocab })).toThrow(/target must be a token id/);
    expect(model.attribute(k.input_ids, { decoderInputIds: k.decoder_input_ids, target: top }).target).toBe(top);
  });
});

describe.each(['bart', 'marian'])('%s: attribution on a post-norm decoder', (name) => {
  it('is an Error that says why, and the model goes on working', async () => {
    const model = await loadPretrained(fixtureFiles(name));
    const { cases: [k] } = expectedJson(name);
    expect(() => model.attribute(k.input_ids, { decoderInputIds: k.decoder_input_ids, target: 5 })).toThrow(/needs a pre-norm decoder.*normalise after each sublayer/);
    expect(model.run(k.input_ids, { decoderInputIds: k.decoder_input_ids }).logits.length).toBe(k.decoder_input_ids.length * model.config.vocabSize);
    model.dispose();
  });
});
