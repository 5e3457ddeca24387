// The shipped trained model through the wasm build: it loads, tokenizes and runs like the native
// build, its heads meet the bar (measured here independently of the trainer), ablation works, and
// bad input is an Error that leaves the module working.
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadLanguageModel, runtimeInfo } from '../../bindings/multihead.mjs';
import { maxAbsDiff, seededRandom } from './reference.mjs';
import { nativeTool } from './native-tools.mjs';

const MODEL = join(process.cwd(), 'web/model/austen.mhlm');
const REPORT = JSON.parse(readFileSync(join(process.cwd(), 'web/model/austen.json'), 'utf8'));
const bytes = () => new Uint8Array(readFileSync(MODEL));
const TEXT = 'Mr. Darcy bowed, and Elizabeth said nothing. Mr. Darcy bowed again, and Elizabeth';

function headOf(run, layer, head, heads) {
  const nn = run.n * run.n;
  const offset = (layer * heads + head) * nn;
  return run.attentions.subarray(offset, offset + nn);
}

describe('the trained model in wasm', () => {
  it('loads with the configuration of its model card, within the 4 MB budget', async () => {
    const model = await loadLanguageModel(bytes());
    expect(model.config).toEqual({
      vocabSize: REPORT.config.vocab, dModel: REPORT.config.d_model, heads: REPORT.config.num_heads,
      layers: REPORT.config.layers, maxPositions: REPORT.config.context, dFf: REPORT.config.d_ff,
    });
    expect(bytes().length).toBeLessThanOrEqual(4 * 1024 * 1024);
    expect(model.piece(0)).toBe('<unk>');
    model.dispose();
  });

  it('tokenizes as training did: lowercase words, suffixes, punctuation; unknown words kept visible', async () => {
    const model = await loadLanguageModel(bytes());
    const { ids, pieces } = model.tokenize('Elizabeth’s “Xylophonics”—quite!');
    expect(pieces.map((p) => p.text)).toEqual(['Elizabeth', '’s', '“', 'Xylophonics', '”', '—', 'quite', '!']);
    expect(pieces.map((p) => p.token)).toEqual(['elizabeth', "'s", '"', '<unk>', '"', '--', 'quite', '!']);
    expect(pieces[3].known).toBe(false);
    expect(ids[3]).toBe(0);
    expect(pieces.filter((p) => p.known).length).toBe(7);
    model.dispose();
  });

  const lmDump = nativeTool('mh_lm_dump');
  it.skipIf(lmDump.skip)('gives the native build’s tokens, attention and probabilities', async () => {
    lmDump.check();
    const dir = mkdtempSync(join(tmpdir(), 'mh-lm-'));
    execFileSync(lmDump.path, [MODEL, TEXT, join(dir, 'out.f32')]);
    const raw = readFileSync(join(dir, 'out.f32'));
    const native = new Float32Array(raw.buffer, raw.byteOffset, raw.length / 4);
    const model = await loadLanguageModel(bytes());
    const { ids } = model.tokenize(TEXT);
    const n = native[0];
    expect(Array.from(ids)).toEqual(Array.from(native.subarray(1, 1 + n)));
    const run = model.run(ids);
    const attention = native.subarray(1 + n, 1 + n + run.attentions.length);
    expect(maxAbsDiff(run.attentions, attention)).toBeLessThanOrEqual(1e-4);
    expect(maxAbsDiff(run.probabilities, native.subarray(1 + n + run.attentions.length))).toBeLessThanOrEqual(1e-4);
    model.dispose();
  });

  it('has normalised causal attention, next-token distributions and rollout rows', async () => {
    const model = await loadLanguageModel(bytes());
    const run = model.run(model.tokenize(TEXT).ids);
    const { n } = run, { vocabSize: vocab, layers, heads } = model.config;
    for (let lh = 0; lh < layers * heads; lh++) {
      for (let i = 0; i < n; i++) {
        let sum = 0;
        for (let j = 0; j < n; j++) {
          const a = run.attentions[lh * n * n + i * n + j];
          if (j > i) expect(a).toBe(0);
          sum += a;
        }
        expect(sum).toBeCloseTo(1, 5);
      }
    }
    for (let i = 0; i < n; i++) {
      let p = 0, r = 0;
      for (let v = 0; v < vocab; v++) p += run.probabilities[i * vocab + v];
      for (let j = 0; j < n; j++) r += run.rollout[i * n + j];
      expect(p).toBeCloseTo(1, 4);
      expect(r).toBeCloseTo(1, 5);
    }
    model.dispose();
  });

  it('has a previous-token head ≥ 0.8 and an induction head ≥ 0.5 (measured here, in wasm)', async () => {
    const model = await loadLanguageModel(bytes());
    const { layers, heads, vocabSize: vocab } = model.config;
    // Previous token on the text of the card's demo; induction on random tokens repeated twice.
    const text = 'It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife. ' +
      'However little known the feelings or views of such a man may be on his first entering a neighbourhood, this truth is so well fixed in the minds of the surrounding families.';
    const run = model.run(model.tokenize(text).ids);
    const rng = seededRandom(5);
    const half = 48;
    const random = Array.from({ length: half }, () => 1 + Math.floor(rng() * (vocab - 1)));
    const repeated = model.run(Int32Array.from([...random, ...random]));
    let bestPrevious = 0, bestInduction = 0;
    for (let l = 0; l < layers; l++) for (let h = 0; h < heads; h++) {
      const a = headOf(run, l, h, heads);
      let prev = 0;
      for (let i = 1; i < run.n; i++) prev += a[i * run.n + i - 1];
      bestPrevious = Math.max(bestPrevious, prev / (run.n - 1));
      const b = headOf(repeated, l, h, heads);
      let induction = 0;
      for (let k = 0; k + 1 < half; k++) induction += b[(half + k) * repeated.n + k + 1];
      bestInduction = Math.max(bestInduction, induction / (half - 1));
    }
    expect(bestPrevious).toBeGreaterThanOrEqual(0.8);
    expect(bestInduction).toBeGreaterThanOrEqual(0.5);
    model.dispose();
  });

  it('ablating the induction heads destroys in-context copying; ablating nothing changes nothing', async () => {
    const model = await loadLanguageModel(bytes());
    const { vocab } = model.config;
    const rng = seededRandom(9);
    const half = 40;
    const random = Array.from({ length: half }, () => 1 + Math.floor(rng() * (vocab - 1)));
    const ids = Int32Array.from([...random, ...random]);
    const secondCopyLoss = (run) => {
      let loss = 0;
      // A probability can underflow to exactly 0 (a confident wrong guess): count it as 1e-30.
      for (let t = half; t + 1 < 2 * half; t++) loss -= Math.log(Math.max(1e-30, run.probabilities[t * vocab + ids[t + 1]]));
      return loss / (half - 1);
    };
    const all = model.run(ids);
    const inductionHeads = REPORT.heads.filter((h) => h.role === 'induction').map((h) => [h.layer, h.head]);
    expect(inductionHeads.length).toBeGreaterThan(0);
    const ablated = model.run(ids, { disabledHeads: inductionHeads });
    expect(secondCopyLoss(ablated)).toBeGreaterThan(secondCopyLoss(all) + 1);  // nats per token
    expect(maxAbsDiff(model.run(ids, { disabledHeads: [] }).probabilities, all.probabilities)).toBe(0);
    model.dispose();
  });

  it('turns bad input into Errors and keeps working; dispose frees the model', async () => {
    const before = (await runtimeInfo()).allocatedBytes;
    const model = await loadLanguageModel(bytes());
    const broken = bytes();
    broken[0] = 0;
    await expect(loadLanguageModel(broken)).rejects.toThrow(/not a multihead model file/);
    await expect(loadLanguageModel(bytes().subarray(0, 1000))).rejects.toThrow(/truncated/);
    await expect(loadLanguageModel('austen.mhlm')).rejects.toThrow(/ArrayBuffer or Uint8Array/);
    expect(() => model.run(new Int32Array(0))).toThrow(/1 to 128 tokens/);
    expect(() => model.run(new Int32Array(129))).toThrow(/1 to 128 tokens/);
    expect(() => model.run([1, 2, 99999])).toThrow(/not in the vocabulary/);
    expect(() => model.run([1, 2], { disabledHeads: [[5, 0]] })).toThrow(/layer.*head/);
    expect(() => model.tokenize(42)).toThrow(/string/);
    expect(model.run([1, 2, 3]).n).toBe(3);
    model.dispose();
    expect(() => model.run([1])).toThrow(/disposed/);
    expect((await runtimeInfo()).allocatedBytes).toBeLessThanOrEqual(before + 64 * 1024);
  });
});
