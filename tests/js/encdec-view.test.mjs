// The encoder-decoder view's computations (web/your-model/encdec-compute.mjs, run in the page's
// worker) on the T5, BART and Marian fixtures, against transformers 5.17's own numbers: the ids the
// page feeds the model (the target shifted right behind the decoder start), the three kinds of
// attention it draws, and generation's tokens, stopped by an AbortSignal between two of them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPretrained } from '../../bindings/multihead.mjs';
import { FIXTURES, expectedJson, fixtureFiles, maxAbsDiff, readSafetensors } from './checkpoints.mjs';
import { encdecGenerate, encdecRun, encodeSource, encodeTarget, meanOverHeads, rowArgmax } from '../../web/your-model/encdec-compute.mjs';

const f32 = (t) => new Float32Array(t.bytes.buffer.slice(t.bytes.byteOffset, t.bytes.byteOffset + t.bytes.length));
const TOLERANCE = { t5: 5e-5, bart: 2e-5, marian: 2e-5 };  // as tests/js/encoder-decoder.test.mjs (T5's unscaled scores)

describe.each(['t5', 'bart', 'marian'])('%s: what the page computes', (name) => {
  let model;
  const want = Object.fromEntries([...readSafetensors(new Uint8Array(readFileSync(join(FIXTURES, name, 'expected.safetensors'))))]
    .filter(([, x]) => x.dtype === 'F32').map(([key, x]) => [key, f32(x)]));
  const { cases } = expectedJson(name);
  beforeAll(async () => { model = await loadPretrained(fixtureFiles(name)); });
  afterAll(() => model?.dispose());

  it('runs the source and the target shifted right, and gives transformers\' three kinds of attention', () => {
    for (const c of cases) {
      const source = encodeSource(model, c.source), target = encodeTarget(model, c.target);
      expect(Array.from(source.ids)).toEqual(c.input_ids);
      expect(Array.from(target.ids)).toEqual(c.labels);
      const view = encdecRun(model, source, target);
      expect([view.n, view.m]).toEqual([c.input_ids.length, c.decoder_input_ids.length]);
      expect(view.inputs.map((t) => t.id)).toEqual(c.decoder_input_ids);
      expect(view.target.map((t) => t.id)).toEqual(c.labels);
      expect(maxAbsDiff(view.cross, want[`${c.key}.cross_attentions`])).toBeLessThan(TOLERANCE[name]);
      expect(maxAbsDiff(view.encoder, want[`${c.key}.encoder_attentions`])).toBeLessThan(TOLERANCE[name]);
      expect(maxAbsDiff(view.decoder, want[`${c.key}.decoder_attentions`])).toBeLessThan(TOLERANCE[name]);
      // The tokens the page shows are pieces of the texts (or a special token's name).
      for (const t of view.source) expect(t.special || c.source.includes(t.text.trim()) || t.text === t.token).toBe(true);
    }
  });

  it('generates transformers\' greedy tokens, one onToken each with its cross-attention row', async () => {
    const c = cases[0];
    const rows = [];
    const out = await encdecGenerate(model, encodeSource(model, c.source), { maxNewTokens: 10, minNewTokens: 10,
      onToken: async ({ id, crossAttention }) => rows.push({ id, length: crossAttention.length }) });
    expect(out.stopped).toBe(false);
    expect(out.ids).toEqual(c.generated.slice(1));
    expect(rows.map((r) => r.id)).toEqual(out.ids);
    expect(rows.every((r) => r.length === 2 * 4 * c.input_ids.length)).toBe(true);
  });

  it('stops between two tokens when its signal is aborted, and the model works on', async () => {
    const controller = new AbortController();
    const source = encodeSource(model, cases[0].source);
    const out = await encdecGenerate(model, source, { maxNewTokens: 10, minNewTokens: 10, signal: controller.signal,
      onToken: () => { controller.abort(); } });
    expect(out).toMatchObject({ stopped: true });
    expect(out.ids).toHaveLength(1);
    expect(encdecRun(model, source, encodeTarget(model, cases[0].target)).m).toBe(cases[0].labels.length);
  });

  it('says what is wrong with a source too long for the positions, or an empty target of ids', () => {
    if (name !== 't5') expect(() => encdecRun(model, encodeSource(model, 'the cat '.repeat(100)), encodeTarget(model, 'x'))).toThrow(/the source has \d+ tokens; this model reads at most 128/);
    expect(() => encdecRun(model, encodeSource(model, 'a'), { ids: new Int32Array(0), tokens: [] })).toThrow(/type a target, or press Generate/);
  });
});

describe('means over heads and each row\'s largest column', () => {
  // 2 layers × 2 heads × 1 row × 3 columns.
  const a = Float32Array.from([0.1, 0.2, 0.7, 0.5, 0.3, 0.2, 0.3, 0.3, 0.4, 0.9, 0.05, 0.05]);
  it('averages one layer\'s heads, or every layer\'s', () => {
    expect(Array.from(meanOverHeads(a, 2, 2, 3, 0)).map((v) => +v.toFixed(6))).toEqual([0.3, 0.25, 0.45]);
    expect(Array.from(meanOverHeads(a, 2, 2, 3, -1)).map((v) => +v.toFixed(6))).toEqual([0.45, 0.2125, 0.3375]);
  });
  it('finds each row\'s most-attended column', () => {
    expect(rowArgmax(Float32Array.from([0.1, 0.7, 0.2, 0.6, 0.3, 0.1]), 2, 3)).toEqual([{ col: 1, weight: Float32Array.from([0.7])[0] }, { col: 0, weight: Float32Array.from([0.6])[0] }]);
  });
});
