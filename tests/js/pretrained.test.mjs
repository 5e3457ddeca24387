// Real checkpoints through the wasm build, against Hugging Face transformers' own outputs
// (tests/fixtures/hf, made by transformers 5.17): token ids exact, attentions within 1e-4, logits
// within 1e-3 of the largest |logit|, hidden states. The hub variants of each family (prefixes,
// dtypes, rope styles, tied or not, shards, BertModel without its head) are made from the
// fixtures by transformations that keep the model's function, so the same numbers must come out.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { loadMultihead, loadPretrained, runtimeInfo } from '../../bindings/multihead.mjs';
import {
  FIXTURES, MODELS, encodeJson, expectedOutputs, fixtureConfig, fixtureFiles, maxAbs, maxAbsDiff, readSafetensors,
  renameTensors, shard, toF32, writeSafetensors,
} from './checkpoints.mjs';
import { checkAgainstTransformers, variant } from './fixture-checks.mjs';

describe('Hugging Face checkpoints in wasm match transformers', () => {
  for (const fixture of MODELS) {
    it(`${fixture}: every case (ids, attentions, hidden states, logits), loaded from its folder`, async () => {
      const seen = [];
      const model = await loadPretrained(join(FIXTURES, fixture), { onProgress: (p) => seen.push(p) });
      const config = fixtureConfig(fixture);
      expect(model.config.architecture).toBe(config.model_type);
      expect(model.config.layers).toBe(config.n_layer ?? config.num_hidden_layers ?? config.num_layers ?? config.n_layers);
      expect(seen.length).toBeGreaterThan(0);
      expect(seen.at(-1).loaded).toBe(seen.at(-1).total);
      expect(checkAgainstTransformers(model, fixture)).toBeGreaterThanOrEqual(5);
      model.dispose();
    });
  }

  it('the same models from in-memory files (Map of Uint8Array, objects of Blobs, File[])', async () => {
    const files = fixtureFiles('qwen2');
    const fromMap = await loadPretrained(files);
    checkAgainstTransformers(fromMap, 'qwen2');
    fromMap.dispose();
    const blobs = Object.fromEntries([...fixtureFiles('bert')].map(([name, bytes]) => [name, new Blob([bytes])]));
    const fromBlobs = await loadPretrained(blobs);
    checkAgainstTransformers(fromBlobs, 'bert');
    fromBlobs.dispose();
    const asFiles = [...fixtureFiles('gpt2')].map(([name, bytes]) => new File([bytes], `gpt2/${name}`));
    const fromFiles = await loadPretrained(asFiles);
    checkAgainstTransformers(fromFiles, 'gpt2');
    fromFiles.dispose();
  });
});

// A safetensors F32 tensor rounded to a 2-byte dtype by round(value, DataView) (floatToHalf,
// floatToBf16 below); other tensors as they are.
function roundTensor(t, dtype, round) {
  if (t.dtype !== 'F32') return t;
  const f = new Float32Array(t.bytes.buffer.slice(t.bytes.byteOffset, t.bytes.byteOffset + t.bytes.length));
  const h = new Uint16Array(f.length);
  const buf = new DataView(new ArrayBuffer(4));
  for (let i = 0; i < f.length; i += 1) h[i] = round(f[i], buf);
  return { dtype, shape: t.shape, bytes: new Uint8Array(h.buffer) };
}
const toF16 = (t) => roundTensor(t, 'F16', floatToHalf);

describe('hub variants of each family give transformers\' numbers too', () => {
  it('GPT-2 saved by GPT2LMHeadModel: keys under "transformer." and an lm_head.weight (tied)', async () => {
    const files = variant('gpt2', {
      tensors: (t) => {
        const out = renameTensors(t, (name) => `transformer.${name}`);
        out.set('lm_head.weight', t.get('wte.weight'));
        return out;
      },
    });
    const model = await loadPretrained(files);
    checkAgainstTransformers(model, 'gpt2');
    model.dispose();
  });

  it('GPT-2 in F16 loads at 2 bytes a weight and stays close (fp16 rounding of the weights)', async () => {
    // Round-trip through F16 changes the weights slightly: compare against the model loaded from
    // the F32 copy of the same rounded weights, which must give exactly the same numbers.
    const half = variant('gpt2', { tensors: (t) => new Map([...t].map(([n, x]) => [n, toF16(x)])) });
    const widened = variant('gpt2', { tensors: (t) => new Map([...t].map(([n, x]) => [n, toF32(toF16(x))])) });
    const a = await loadPretrained(half), b = await loadPretrained(widened);
    expect(a.config.weightBytes).toBeLessThan(b.config.weightBytes * 0.55);
    const ids = expectedOutputs('gpt2')[2].ids;
    const ra = a.run(ids), rb = b.run(ids);
    expect(maxAbsDiff(ra.attentions, rb.attentions)).toBeLessThan(1e-5);
    expect(maxAbsDiff(ra.logits, rb.logits)).toBeLessThan(1e-4 * maxAbs(rb.logits));
    a.dispose();
    b.dispose();
  });

  it('an F16 weight that is inf or NaN fails the run with the overflow error at any length (never a finite result)', async () => {
    // The kernels widen fp16 the fast way, which reads exponent 31 as finite (±2^16 · 1.m), and redo
    // the work exactly where they meet it: one token (the decoding strips) and several (the
    // widened panels) must both see the inf or NaN.
    const ids = expectedOutputs('gpt2')[2].ids;
    for (const special of [0x7c00, 0xfc00, 0x7e00]) {
      const files = variant('gpt2', {
        // Every tensor in F16 (a checkpoint that mixes types is widened whole), one weight special.
        tensors: (t) => new Map([...t].map(([name, x]) => {
          const half = toF16(x);
          if (name === 'h.0.attn.c_proj.weight') {
            const h = new Uint16Array(half.bytes.buffer);
            h[Math.floor(h.length / 3)] = special;
          }
          return [name, half];
        })),
      });
      const model = await loadPretrained(files);
      for (const n of [1, 2, 5, 16]) {
        const text = Array.from({ length: n }, (_, i) => ids[i % ids.length]);
        expect(() => model.run(text), `${special.toString(16)}, ${n} tokens`).toThrow(/overflowed float32/);
      }
      model.dispose();
    }
  });

  it('F16 (one new token a run, and whole runs) sums exactly what F32 copies of the same weights do, inputs past 2^16 included', async () => {
    // One new token reads fp16 weights a row at a time, widened in registers: over weights known
    // finite with its inputs prescaled by 2^112 (gemm.cpp, prescale_rows), or the watched way where
    // an input reaches 2^16 (which × 2^112 would overflow): ln_1's gain of 10^6 puts layer 0's
    // attention inputs there. Either way each product's sums are float32's, bit for bit. An MLP
    // 1044 wide (random weights) reads its down-projection (K > 1024) in strips of 4 panels, the
    // fixture's (K = 256) one panel at a time.
    const ids = Array.from(expectedOutputs('gpt2').at(-1).ids);
    const f32 = (x) => new Float32Array(x.bytes.buffer.slice(x.bytes.byteOffset, x.bytes.byteOffset + x.bytes.length));
    const tensor = (shape, values) => ({ dtype: 'F32', shape, bytes: new Uint8Array(Float32Array.from(values).buffer) });
    let seed = 1;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31 - 0.5) * 0.1;
    const inner = 1044;
    const cases = [
      { what: 'as stored', edit: (name, x) => x },
      { what: 'ln_1 × 10^6', edit: (name, x) => (name === 'h.0.ln_1.weight' ? tensor(x.shape, f32(x).map((v) => v * 1e6)) : x) },
      {
        what: `n_inner ${inner}`,
        config: (c) => ({ ...c, n_inner: inner }),
        edit: (name, x) => {
          if (name.endsWith('mlp.c_fc.weight')) return tensor([x.shape[0], inner], Array.from({ length: x.shape[0] * inner }, random));
          if (name.endsWith('mlp.c_fc.bias')) return tensor([inner], Array.from({ length: inner }, random));
          if (name.endsWith('mlp.c_proj.weight')) return tensor([inner, x.shape[1]], Array.from({ length: inner * x.shape[1] }, random));
          return x;
        },
      },
    ];
    for (const { what, edit, config } of cases) {
      // Matrices rounded to F16 (or F16 and back to F32), vectors as they are (float32 in memory).
      const edited = new Map();  // edited once: the random weights must be the same in both files
      const weights = (round) => (t) => new Map([...t].map(([name, x]) => {
        if (!edited.has(name)) edited.set(name, edit(name, x));
        const e = edited.get(name);
        return [name, e.shape.length === 2 ? round(e) : e];
      }));
      const half = await loadPretrained(variant('gpt2', { tensors: weights(toF16), config }));
      const widened = await loadPretrained(variant('gpt2', { tensors: weights((x) => toF32(toF16(x))), config }));
      expect(half.config.weightType).toBe('f16');
      for (let k = 1; k <= ids.length; k += 1) {
        const run = (model) => model.run(Int32Array.from(ids.slice(0, k)), { logits: [k - 1], reusePrefix: true });
        const a = run(half), b = run(widened);
        expect(a.reusedTokens).toBe(k - 1);
        expect(maxAbsDiff(a.attentions, b.attentions), `${what}, ${k} tokens`).toBe(0);
        expect(maxAbsDiff(a.logits, b.logits), `${what}, ${k} tokens`).toBe(0);
        expect(a.logits.every(Number.isFinite)).toBe(true);
      }
      // Whole runs: up to 6 tokens read fp16 in place (3-row tiles, a prescaled or not), more
      // widen panels into a copy; float32 reads its panels in place. The same sums again.
      for (const n of [2, 3, 4, 5, 6, 7, 9, 16, ids.length]) {
        const a = half.run(Int32Array.from(ids.slice(0, n))), b = widened.run(Int32Array.from(ids.slice(0, n)));
        expect(maxAbsDiff(a.attentions, b.attentions), `${what}, whole run of ${n}`).toBe(0);
        expect(maxAbsDiff(a.logits, b.logits), `${what}, whole run of ${n}`).toBe(0);
      }
      half.dispose();
      widened.dispose();
    }
  });

  it('weightType f16 / bf16: an F32 checkpoint loaded at 2 bytes a weight computes exactly what the rounded checkpoint does', async () => {
    // The reference rounds in JS (floatToHalf, floatToBf16 below), independently of the loader's C++,
    // every matrix (2-D tensor: projections and embeddings); vectors stay float32.
    const rounded = (dtype, round) => (t) => (t.shape.length === 2 ? roundTensor(t, dtype, round) : t);
    const dir = join(FIXTURES, 'gpt2');
    const ids = expectedOutputs('gpt2')[2].ids;
    for (const [weightType, dtype, round] of [['f16', 'F16', floatToHalf], ['bf16', 'BF16', floatToBf16]]) {
      const converted = await loadPretrained(dir, { weightType });
      const stored = await loadPretrained(variant('gpt2', { tensors: (t) => new Map([...t].map(([n, x]) => [n, rounded(dtype, round)(x)])) }));
      expect(converted.config.weightType).toBe(weightType);
      expect(converted.config.weightBytes).toBe(stored.config.weightBytes);
      const a = converted.run(ids), b = stored.run(ids);
      expect(maxAbsDiff(a.attentions, b.attentions)).toBe(0);
      expect(maxAbsDiff(a.logits, b.logits)).toBe(0);
      converted.dispose();
      stored.dispose();
    }
    const plain = await loadPretrained(dir);
    expect(plain.config.weightType).toBe('f32');
    plain.dispose();
    await expect(loadPretrained(dir, { weightType: 'fp8' })).rejects.toThrow(/weightType must be 'f16', 'bf16', 'f32', 'q8_0' or 'q4_0'/);
  });

  it('BF16 sums exactly what F32 copies of the same weights do, at every length from 1 to 40 tokens', async () => {
    // bf16 panels are read in place by the tiles up to 24 tokens (4-row tiles, plain build) or 30
    // (5- and 6-row tiles over extending loads, relaxed build), and widened into a copy beyond;
    // one token reads them a row at a time. Every path sums the same products in the same order
    // as over float32, so the numbers must be the same bits.
    const toBf16 = (t) => roundTensor(t, 'BF16', floatToBf16);
    const matrices = (round) => (t) => new Map([...t].map(([name, x]) => [name, x.shape.length === 2 ? round(x) : x]));
    const bf16 = await loadPretrained(variant('gpt2', { tensors: matrices(toBf16) }));
    const widened = await loadPretrained(variant('gpt2', { tensors: matrices((x) => toF32(toBf16(x))) }));
    expect(bf16.config.weightType).toBe('bf16');
    expect(widened.config.weightType).toBe('f32');
    const ids = Array.from(expectedOutputs('gpt2').at(-1).ids);
    for (let n = 1; n <= 40; n += 1) {
      const a = bf16.run(Int32Array.from(ids.slice(0, n))), b = widened.run(Int32Array.from(ids.slice(0, n)));
      expect(maxAbsDiff(a.attentions, b.attentions), `${n} tokens`).toBe(0);
      expect(maxAbsDiff(a.logits, b.logits), `${n} tokens`).toBe(0);
    }
    bf16.dispose();
    widened.dispose();
  });

  it('BertModel (a sentence encoder): no "bert." prefix and no MLM head → hidden states, logits null', async () => {
    const files = variant('bert', {
      tensors: (t) => renameTensors(t, (name) => (name.startsWith('cls.') ? null : name.replace(/^bert\./, ''))),
      config: (c) => ({ ...c, architectures: ['BertModel'] }),
    });
    const model = await loadPretrained(files);
    expect(model.config.hasLmHead).toBe(false);
    checkAgainstTransformers(model, 'bert', { logits: false });
    model.dispose();
  });

  it('old BERT checkpoints with LayerNorm.gamma / beta', async () => {
    const files = variant('bert', {
      tensors: (t) => renameTensors(t, (name) => name.replace(/LayerNorm\.weight$/, 'LayerNorm.gamma').replace(/LayerNorm\.bias$/, 'LayerNorm.beta')),
    });
    const model = await loadPretrained(files);
    checkAgainstTransformers(model, 'bert');
    model.dispose();
  });

  it('Llama with transformers 5\'s rope_parameters, in F32, sharded in three with an index', async () => {
    const files = variant('llama', {
      tensors: (t) => new Map([...t].map(([n, x]) => [n, toF32(x)])),
      config: (c) => {
        const { rope_theta: theta, ...rest } = c;
        return { ...rest, rope_parameters: { rope_type: 'default', rope_theta: theta } };
      },
    });
    const all = readSafetensors(files.get('model.safetensors'));
    files.delete('model.safetensors');
    for (const [name, bytes] of shard(all, 3)) files.set(name, bytes);
    const model = await loadPretrained(files);
    checkAgainstTransformers(model, 'llama');
    model.dispose();
  });

  it('Llama without the "model." prefix and with a tied head (lm_head dropped, embedding kept)', async () => {
    // Tying the head to the embedding changes the logits unless they are the same matrix: make
    // them so, then the expected numbers hold.
    const files = variant('llama', {
      tensors: (t) => {
        const out = renameTensors(t, (name) => (name === 'lm_head.weight' ? null : name.replace(/^model\./, '')));
        out.set('embed_tokens.weight', t.get('lm_head.weight'));
        return out;
      },
      config: (c) => ({ ...c, tie_word_embeddings: true }),
    });
    const model = await loadPretrained(files);
    // Embedding changed to the head's matrix: ids differ from the fixture's inputs, so check the
    // invariant instead: logits = final hidden · embeddingᵀ.
    const ids = expectedOutputs('llama')[1].ids;
    const out = model.run(ids, { lastHiddenState: true });
    const head = toF32(readSafetensors(fixtureFiles('llama').get('model.safetensors')).get('lm_head.weight'));
    const w = new Float32Array(head.bytes.buffer), d = model.config.dModel, V = model.config.vocabSize;
    for (const [t, v] of [[0, 5], [ids.length - 1, 1000]]) {
      let dot = 0;
      for (let k = 0; k < d; k += 1) dot += out.lastHiddenState[t * d + k] * w[v * d + k];
      expect(out.logits[t * V + v]).toBeCloseTo(dot, 3);
    }
    model.dispose();
  });

  it('Qwen2 with an untied head (lm_head.weight present, tie_word_embeddings false)', async () => {
    const files = variant('qwen2', {
      tensors: (t) => { const out = new Map(t); out.set('lm_head.weight', t.get('model.embed_tokens.weight')); return out; },
      config: (c) => ({ ...c, tie_word_embeddings: false }),
    });
    const model = await loadPretrained(files);
    checkAgainstTransformers(model, 'qwen2');
    model.dispose();
  });

  it('Mistral is the Llama graph (model_type mistral, a sliding window wider than the text)', async () => {
    const files = variant('llama', { tensors: (t) => t, config: (c) => ({ ...c, model_type: 'mistral', sliding_window: 4096 }) });
    const model = await loadPretrained(files);
    expect(model.config.architecture).toBe('mistral');
    checkAgainstTransformers(model, 'llama');
    model.dispose();
  });
});

// The causal families: gpt_neo's and gemma3's local layers see 8 tokens, which these texts pass.
const CAUSAL = ['gpt2', 'llama', 'qwen2', 'gpt_neox', 'gpt_neo', 'qwen3', 'gemma3'];

describe('generation with the key/value cache', () => {
  for (const fixture of CAUSAL) {
    it(`${fixture}: greedy tokens are the argmax of full-sequence logits; each step's attention row is the full run's`, async () => {
      const model = await loadPretrained(join(FIXTURES, fixture));
      const prompt = model.tokenize('The cat sat on the mat.').ids;
      const steps = [];
      for await (const step of model.generate(prompt, { maxNewTokens: 8, stopAtEos: false })) steps.push(step);
      expect(steps.length).toBe(8);
      const all = Int32Array.from([...prompt, ...steps.map((s) => s.id)]);
      const full = model.run(all);
      const V = model.config.vocabSize, [L, H, n] = full.attentionShape;
      steps.forEach((step, k) => {
        const q = prompt.length - 1 + k;  // the query that produced this token
        const row = full.logits.subarray(q * V, (q + 1) * V);
        expect(step.id).toBe(row.indexOf(Math.max(...row)));
        for (let i = 0; i < L * H; i += 1) {
          const want = full.attentions.subarray((i * n + q) * n, (i * n + q) * n + q + 1);
          expect(maxAbsDiff(step.attentions.subarray(i * (q + 1), (i + 1) * (q + 1)), want)).toBeLessThan(1e-5);
        }
      });
      // Each step's text is what it adds to the decoded sequence (a word-initial space included);
      // a character whose bytes are not all generated yet is held back (the last, here: U+FFFD).
      const settled = (text) => text.replace(/\uFFFD+$/u, '');
      expect(model.decode(prompt) + steps.map((s) => s.text).join('')).toBe(settled(model.decode(all)));
      expect(steps.every((s) => !s.text.endsWith('\uFFFD'))).toBe(true);
      // Sampling with a seed replays; another seed (almost surely) differs. The temperature is
      // high because some fixtures' next-token logits are far apart (gemma3's top two by 18).
      const sample = async (seed) => {
        const ids = [];
        for await (const s of model.generate(prompt, { maxNewTokens: 12, temperature: 20, topK: 50, seed, stopAtEos: false })) ids.push(s.id);
        return ids.join(',');
      };
      expect(await sample(7)).toBe(await sample(7));
      expect(await sample(7)).not.toBe(await sample(8));
      model.dispose();
    });
  }

  it('generate() lets the event loop turn every few milliseconds, not after every token, without a timer\'s wait', async () => {
    // Counted, not timed: a setImmediate that re-arms itself counts the loop's turns. Yielding by
    // setTimeout(0) would wait ≥ 1 ms a token, hundreds of turns. A turn costs ~0.1 ms, twice this
    // fixture's decoding step, so fast tokens come several a turn; a consumer that takes 1 ms a
    // token (a page drawing each) gets a turn at least every 5 ms of it. A timer set during a
    // generation that long runs before it ends.
    const model = await loadPretrained(join(FIXTURES, 'gpt2'));
    const prompt = model.tokenize('The cat sat on the mat.').ids, tokens = 60;
    const busy = (ms) => { const t = performance.now(); while (performance.now() - t < ms) { /* a consumer's work */ } };
    const generation = async (consumerMs) => {
      let turns = 0, ticking = true, timerRan = false, count = 0;
      const tick = () => { if (ticking) { turns += 1; setImmediate(tick); } };
      setImmediate(tick);
      for await (const step of model.generate(prompt, { maxNewTokens: tokens, stopAtEos: false })) {
        if (count === 0) setTimeout(() => { timerRan = true; }, 0);
        count += step.id >= 0 ? 1 : 0;
        busy(consumerMs);
      }
      const timerRanBeforeTheEnd = timerRan;
      ticking = false;
      return { turns, count, timerRanBeforeTheEnd };
    };
    const slow = await generation(1);
    expect(slow.count).toBe(tokens);
    expect(slow.timerRanBeforeTheEnd).toBe(true);
    expect(slow.turns).toBeGreaterThanOrEqual(Math.floor(tokens / 5) - 1);
    expect(slow.turns).toBeLessThanOrEqual(tokens);
    const fast = await generation(0);
    expect(fast.count).toBe(tokens);
    expect(fast.turns).toBeLessThan(tokens / 2);
    model.dispose();
  });

  it('the encoders (BERT, DistilBERT, RoBERTa) cannot generate: a clear error', async () => {
    for (const fixture of ['bert', 'distilbert', 'roberta']) {
      const model = await loadPretrained(join(FIXTURES, fixture));
      await expect(model.generate([2, 5, 3]).next()).rejects.toThrow(/causal language model/);
      model.dispose();
    }
  });
});

describe('reusePrefix: a text edited and run again computes only what changed', () => {
  // Every result is compared with a full run of the same ids (and the last with transformers).
  const options = { valueNorms: true };
  function expectSameAsFull(model, ids, got, what) {
    const want = model.run(ids, { ...options, logits: got.logitRows });
    // GPT-Neo's scores are not divided by √head_dim (4 here), so float32 rounding moves them 4× as far.
    const tolerance = model.config.architecture === 'gpt_neo' ? 4e-5 : 1e-5;
    expect(got.attentionShape, what).toEqual(want.attentionShape);
    expect(maxAbsDiff(got.attentions, want.attentions), `${what} attentions`).toBeLessThan(tolerance);
    expect(maxAbsDiff(got.valueNorms, want.valueNorms), `${what} value norms`).toBeLessThan(1e-5 * maxAbs(want.valueNorms));
    expect(maxAbsDiff(got.logits, want.logits), `${what} logits`).toBeLessThan(1e-5 * maxAbs(want.logits));
  }
  for (const fixture of CAUSAL) {
    it(`${fixture}: typed token by token, edited in the middle, cut short: each run equals a full run; the last, transformers'`, async () => {
      const model = await loadPretrained(join(FIXTURES, fixture));
      const c = expectedOutputs(fixture).at(-1), ids = Array.from(c.ids), n = ids.length, V = model.config.vocabSize;
      const run = (list, rows = [list.length - 1]) => model.run(Int32Array.from(list), { ...options, logits: rows, reusePrefix: true });
      for (let k = 1; k <= n; k += 1) {
        const got = run(ids.slice(0, k));
        expect(got.reusedTokens).toBe(k - 1);  // the previous run had the first k − 1 tokens
        expectSameAsFull(model, Int32Array.from(ids.slice(0, k)), got, `${fixture} ${k} tokens`);
        if (k === n) {
          expect(maxAbsDiff(got.attentions, c.attentions), 'transformers\' attentions').toBeLessThan(1e-4);
          const last = c.logits.subarray((n - 1) * V, n * V);
          expect(maxAbsDiff(got.logits, last), 'transformers\' logits').toBeLessThan(1e-3 * maxAbs(last));
        }
      }
      // An edit at position 2: rows 0 and 1 are kept, the rest computed again.
      const edited = [...ids];
      edited[2] = (edited[2] + 1) % V;
      let got = run(edited);
      expect(got.reusedTokens).toBe(2);
      expectSameAsFull(model, Int32Array.from(edited), got, `${fixture} edited`);
      // Cut short: all but the last of the shorter text; a logits row before the shared end limits it.
      got = run(edited.slice(0, n - 2));
      expect(got.reusedTokens).toBe(n - 3);
      got = run(edited.slice(0, n - 2), [1, n - 3]);
      expect(got.reusedTokens).toBe(1);
      expectSameAsFull(model, Int32Array.from(edited.slice(0, n - 2)), got, `${fixture} rows 1 and n − 3`);
      // Other switched-off heads cannot reuse the last run; the same ones again can.
      const off = { ...options, logits: [n - 1], reusePrefix: true, disabledHeads: [[0, 1]] };
      expect(model.run(Int32Array.from(ids), off).reusedTokens).toBe(0);
      got = model.run(Int32Array.from(ids), off);
      expect(got.reusedTokens).toBe(n - 1);
      const full = model.run(Int32Array.from(ids), { ...options, logits: [n - 1], disabledHeads: [[0, 1]] });
      expect(maxAbsDiff(got.attentions, full.attentions)).toBeLessThan(1e-5);
      expect(maxAbsDiff(got.logits, full.logits)).toBeLessThan(1e-5 * maxAbs(full.logits));
      // generate() uses the same cache: the next run starts over.
      for await (const step of model.generate(ids.slice(0, 3), { maxNewTokens: 2, stopAtEos: false })) expect(step.id).toBeGreaterThanOrEqual(0);
      got = run(ids);
      expect(got.reusedTokens).toBe(0);
      expectSameAsFull(model, Int32Array.from(ids), got, `${fixture} after generate`);
      model.dispose();
    });
  }

  it('bad input still gets run()\'s errors (positions from the first token), and the model keeps working', async () => {
    const model = await loadPretrained(join(FIXTURES, 'gpt2'));
    const ids = model.tokenize('The cat sat on the mat because it was tired.').ids, n = ids.length;
    const reuse = { logits: [n - 1], reusePrefix: true };
    model.run(ids, reuse);
    const bad = Int32Array.from(ids);
    bad[n - 1] = model.config.vocabSize;
    expect(() => model.run(bad, reuse)).toThrow(`token id ${model.config.vocabSize} at position ${n - 1}`);
    // The refused run changed nothing: the cache still holds the first run's tokens.
    const again = model.run(ids, reuse);
    expect(again.reusedTokens).toBe(n - 1);
    expect(again.logits.every(Number.isFinite)).toBe(true);
    // Value norms asked or not: the cached values give them for every key, so the start is still reused.
    const withNorms = model.run(ids, { ...reuse, valueNorms: true });
    expect(withNorms.reusedTokens).toBe(n - 1);
    const fullNorms = model.run(ids, { logits: [n - 1], valueNorms: true }).valueNorms;
    expect(maxAbsDiff(withNorms.valueNorms, fullNorms)).toBeLessThan(1e-5 * maxAbs(fullNorms));
    expect(() => model.run(ids, { ...reuse, lastHiddenState: true })).toThrow(/hidden states/);
    expect(() => model.run(ids, { reusePrefix: true })).toThrow(/logits/);
    // A bidirectional model: every row depends on every token, so it runs in full.
    const bert = await loadPretrained(join(FIXTURES, 'bert'));
    const enc = bert.tokenize('The cat sat on the [MASK].');
    const first = bert.run(enc.ids, { logits: [2], reusePrefix: true });
    const second = bert.run(enc.ids, { logits: [2], reusePrefix: true });
    expect(second.reusedTokens).toBe(0);
    expect(second.attentions).toEqual(first.attentions);
    bert.dispose();
    model.dispose();
  });
});

describe('bad checkpoints and bad input: a readable Error, nothing leaked, the module keeps working', () => {
  const good = () => fixtureFiles('gpt2');
  const without = (name) => { const f = good(); f.delete(name); return f; };
  const cases = [
    ['no config.json', () => without('config.json'), /no config\.json/],
    ['no weights', () => without('model.safetensors'), /no model\.safetensors/],
    ['a shard the index names is missing', () => {
      const f = without('model.safetensors');
      for (const [name, bytes] of shard(readSafetensors(good().get('model.safetensors')), 2)) f.set(name, bytes);
      f.delete('model-00002-of-00002.safetensors');
      return f;
    }, /no model-00002-of-00002\.safetensors.*every shard/],
    ['unsupported architecture', () => { const f = good(); f.set('config.json', encodeJson({ ...fixtureConfig('gpt2'), model_type: 'mamba' })); return f; },
      /unsupported architecture "mamba".*gpt2, bert, llama, qwen2, mistral/],
    ['config.json that is not JSON', () => { const f = good(); f.set('config.json', new TextEncoder().encode('{"model_type": "gpt2",')); return f; }, /config\.json is not valid JSON/],
    ['a truncated download', () => { const f = good(); f.set('model.safetensors', f.get('model.safetensors').subarray(0, 300000)); return f; }, /truncated/],
    ['an absurd header length', () => { const f = good(); const b = f.get('model.safetensors').slice(); b.set([255, 255, 255, 255, 255, 255, 0, 0]); f.set('model.safetensors', b); return f; }, /absurd/],
    ['a header whose offsets run past the end', () => {
      const f = good();
      const t = readSafetensors(f.get('model.safetensors'));
      const bytes = writeSafetensors(t);
      const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
      const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
      header['wte.weight'].data_offsets[1] += 4000;
      header['wte.weight'].shape[0] += 1000 / 64;
      const text = new TextEncoder().encode(JSON.stringify(header));
      const out = new Uint8Array(8 + text.length + bytes.length - 8 - n);
      new DataView(out.buffer).setBigUint64(0, BigInt(text.length), true);
      out.set(text, 8);
      out.set(bytes.subarray(8 + n), 8 + text.length);
      f.set('model.safetensors', out);
      return f;
    }, /wte\.weight|overlaps|truncated|gap/],
    ['weights of another shape than config.json says', () => { const f = good(); f.set('config.json', encodeJson({ ...fixtureConfig('gpt2'), n_embd: 128 })); return f; }, /do not match the config/],
    ['weights of another family', () => { const f = fixtureFiles('bert'); f.set('config.json', encodeJson(fixtureConfig('gpt2'))); return f; }, /no "wte\.weight" tensor/],
    ['a tokenizer.json that is not JSON', () => { const f = good(); f.set('tokenizer.json', new TextEncoder().encode('{"model": ')); return f; }, /tokenizer\.json is not valid JSON/],
    ['a tokenizer.json with an unknown model', () => { const f = good(); f.set('tokenizer.json', encodeJson({ model: { type: 'WordLevel', vocab: {} } })); return f; }, /WordLevel model is not supported/],
    ['a shard index naming a file outside the folder', () => { const f = without('model.safetensors'); f.set('model.safetensors.index.json', encodeJson({ weight_map: { a: '../x.safetensors' } })); return f; }, /plain \.safetensors/],
  ];
  for (const [what, files, message] of cases) {
    it(what, async () => {
      await expect(loadPretrained(files())).rejects.toThrow(message);
    });
  }

  it('a folder that is not a checkpoint, and nonsense sources', async () => {
    await expect(loadPretrained(join(FIXTURES, '..'))).rejects.toThrow(/no config\.json/);
    await expect(loadPretrained(join(FIXTURES, 'nope'))).rejects.toThrow(/no folder/);
    await expect(loadPretrained(42)).rejects.toThrow(/folder path.*URL.*File/);
  });

  it('a model too big for memory is refused before anything is allocated, naming the bytes', async () => {
    // A header that declares 4.9 GB of GPT-2 weights (over wasm32's 4 GB heap), in a file that says
    // it is that big (a Blob that reports the size): the loader must refuse it from the header,
    // without reading the data, and say that at 2 bytes a weight (2.4 GB) it would fit.
    const d = 4096, V = 100000, ff = 4 * d;
    const shapes = {
      'wte.weight': [V, d], 'wpe.weight': [512, d], 'h.0.ln_1.weight': [d], 'h.0.ln_1.bias': [d],
      'h.0.attn.c_attn.weight': [d, 3 * d], 'h.0.attn.c_attn.bias': [3 * d], 'h.0.attn.c_proj.weight': [d, d],
      'h.0.attn.c_proj.bias': [d], 'h.0.ln_2.weight': [d], 'h.0.ln_2.bias': [d], 'h.0.mlp.c_fc.weight': [d, ff],
      'h.0.mlp.c_fc.bias': [ff], 'h.0.mlp.c_proj.weight': [ff, d], 'h.0.mlp.c_proj.bias': [d], 'ln_f.weight': [d], 'ln_f.bias': [d],
    };
    for (let l = 1; l < 4; l += 1)
      for (const [name, shape] of Object.entries(shapes)) if (name.startsWith('h.0.')) shapes[name.replace('h.0.', `h.${l}.`)] = shape;
    const header = {};
    let at = 0;
    for (const [name, shape] of Object.entries(shapes)) {
      const size = shape.reduce((a, b) => a * b, 4);
      header[name] = { dtype: 'F32', shape, data_offsets: [at, at + size] };
      at += size;
    }
    const text = new TextEncoder().encode(JSON.stringify(header));
    const bytes = new Uint8Array(8 + text.length);
    new DataView(bytes.buffer).setBigUint64(0, BigInt(text.length), true);
    bytes.set(text, 8);
    class HugeFile extends Blob {
      get size() { return bytes.length + at; }
      slice(from, to) { return new Blob([bytes.subarray(from, Math.min(to, bytes.length))]); }
    }
    const files = Object.fromEntries(good());
    files['config.json'] = encodeJson({ ...fixtureConfig('gpt2'), n_embd: d, n_head: 32, vocab_size: V, n_layer: 4 });
    files['model.safetensors'] = new HugeFile([]);
    await expect(loadPretrained(files)).rejects.toThrow(/needs 4\d\d\d MB for its weights but only \d+ MB of memory are available.*at 2 bytes.*2\d\d\d MB/);
    const model = await loadPretrained(good());
    expect(model.run([1, 2]).n).toBe(2);
    model.dispose();
  });

  it('ids out of range, too many tokens, bad options: errors, and the model keeps working', async () => {
    const model = await loadPretrained(join(FIXTURES, 'gpt2'));
    const ids = model.tokenize('The cat sat on the mat.').ids;
    const before = model.run(ids);
    expect(() => model.run([1, 2, 99999])).toThrow(/token id 99999 at position 2 is not in the vocabulary/);
    expect(() => model.run(new Int32Array(513))).toThrow(/at most 512/);
    expect(() => model.run([])).toThrow(/at least one/);
    expect(() => model.run(ids, { attentions: { layers: [7] } })).toThrow(/attentions\.layers/);
    expect(() => model.run(ids, { disabledHeads: [[0, 9]] })).toThrow(/disabledHeads/);
    expect(() => model.run(ids, { tokenTypeIds: [1] })).toThrow(/tokenTypeIds/);
    expect(() => model.run(ids, { logits: [ids.length] })).toThrow(/logits rows must be token positions/);
    expect(() => model.run('hello')).toThrow(/Int32Array/);
    const after = model.run(ids);
    expect(after.logits).toEqual(before.logits);
    model.dispose();
    expect(() => model.run(ids)).toThrow(/disposed/);
  });

  it('failed loads leave no memory behind', async () => {
    const core = await loadMultihead();
    const truncated = () => { const f = good(); f.set('model.safetensors', f.get('model.safetensors').subarray(0, 400000)); return f; };
    for (let i = 0; i < 3; i += 1) await expect(loadPretrained(truncated())).rejects.toThrow();
    const heap = core.HEAPU8.length;
    for (let i = 0; i < 30; i += 1) await expect(loadPretrained(truncated())).rejects.toThrow(/truncated/);
    expect(core.HEAPU8.length).toBe(heap);  // 30 leaked models (~500 KB each) would have grown it
    const model = await loadPretrained(good());
    expect(model.run([1, 2, 3]).logits.length).toBe(3 * 1000);
    model.dispose();
  });
});

describe('selections and extras', () => {
  it('checkpoints whose layers fit in cache leave the GEMM\'s touching ahead untuned (runtimeInfo)', async () => {
    // The first checkpoint with ≥ 64 MB of layer matrices times its products with and without the
    // touches (core/gemm_tuning.h); the fixtures (< 1 MB) must not: they would time the cache.
    for (const fixture of MODELS) (await loadPretrained(join(FIXTURES, fixture))).dispose();
    expect((await runtimeInfo()).touchTuning).toEqual({ tuned: false, fromRows: 0, msWith: 0, msWithout: 0 });
  });
  it('logits for chosen rows are exactly those rows of the full output', async () => {
    const model = await loadPretrained(join(FIXTURES, 'qwen2'));
    const ids = model.tokenize('It is a truth universally acknowledged.').ids;
    const whole = model.run(ids), V = model.config.vocabSize;
    const some = model.run(ids, { logits: [ids.length - 1, 2] });
    expect(some.logitRows).toEqual([ids.length - 1, 2]);
    const want = Float32Array.from([...whole.logits.subarray((ids.length - 1) * V, ids.length * V), ...whole.logits.subarray(2 * V, 3 * V)]);
    expect(some.logits.length).toBe(want.length);
    expect(maxAbsDiff(some.logits, want)).toBeLessThan(1e-5 * maxAbs(want));  // a 2-row product may round differently
    // Asking for the last hidden state too carries every row through the last layer.
    const withHidden = model.run(ids, { logits: [ids.length - 1, 2], lastHiddenState: true });
    expect(withHidden.lastHiddenState.length).toBe(ids.length * model.config.dModel);
    expect(maxAbsDiff(withHidden.logits, want)).toBeLessThan(1e-5 * maxAbs(want));
    model.dispose();
  });

  it('into: the caller\'s arrays are filled with what a new run returns; a wrong one is refused, the model still works', async () => {
    const model = await loadPretrained(join(FIXTURES, 'gpt2'));
    const ids = model.tokenize('The cat sat on the mat because it was tired.').ids;
    const fresh = model.run(ids, { attentions: { layers: [1], heads: [0, 2] }, logits: [ids.length - 1] });
    const into = { attentions: new Float32Array(fresh.attentions.length).fill(NaN), logits: new Float32Array(fresh.logits.length).fill(NaN) };
    for (let round = 0; round < 2; round += 1) {  // filled again the second time
      const out = model.run(ids, { attentions: { layers: [1], heads: [0, 2] }, logits: [ids.length - 1], into });
      expect(out.attentions).toBe(into.attentions);
      expect(out.logits).toBe(into.logits);
      expect(Array.from(into.attentions)).toEqual(Array.from(fresh.attentions));
      expect(Array.from(into.logits)).toEqual(Array.from(fresh.logits));
    }
    expect(() => model.run(ids, { into: { attentions: new Float32Array(3) } })).toThrow(/into\.attentions must be a Float32Array of length \d+, got .* of length 3/);
    expect(() => model.run(ids, { into: { logits: [1, 2] } })).toThrow(/into\.logits must be a Float32Array/);
    expect(() => model.run(ids, { into: 5 })).toThrow(/into must be \{ attentions\?, logits\? \}/);
    expect(Array.from(model.run(ids, { attentions: { layers: [1], heads: [0, 2] }, logits: [ids.length - 1] }).attentions)).toEqual(Array.from(fresh.attentions));
    model.dispose();
  });

  it('rollout is Π over layers of (½ mean-head attention + ½ I), computed here in float64', async () => {
    const model = await loadPretrained(join(FIXTURES, 'gpt2'));
    const ids = model.tokenize('The cat sat on the mat because it was tired.').ids;
    const out = model.run(ids, { rollout: true });
    const [L, H, n] = out.attentionShape;
    let r = Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));
    for (let l = 0; l < L; l += 1) {
      const m = Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => {
        let s = 0;
        for (let h = 0; h < H; h += 1) s += out.attentions[((l * H + h) * n + i) * n + j];
        return 0.5 * s / H + (i === j ? 0.5 : 0);
      }));
      r = m.map((row) => r[0].map((_, j) => row.reduce((acc, v, k) => acc + v * r[k][j], 0)));
    }
    expect(maxAbsDiff(out.rollout, r.flat())).toBeLessThan(1e-5);
    expect(() => model.run(ids, { rollout: true, attentions: { layers: [0] } })).toThrow(/every head/);
    model.dispose();
  });

  it('a subset of layers and heads is exactly that part of the whole; value norms; ablation', async () => {
    const model = await loadPretrained(join(FIXTURES, 'llama'));
    const ids = model.tokenize('It is a truth universally acknowledged.').ids;
    const whole = model.run(ids, { valueNorms: true });
    const part = model.run(ids, { attentions: { layers: [1], heads: [0, 3] } });
    const [L, H, n] = whole.attentionShape;
    expect(part.attentionShape).toEqual([1, 2, n, n]);
    const head = (r, li, hi, heads) => r.attentions.subarray(((li * heads) + hi) * n * n, ((li * heads) + hi + 1) * n * n);
    expect(head(part, 0, 0, 2)).toEqual(head(whole, 1, 0, H));
    expect(head(part, 0, 1, 2)).toEqual(head(whole, 1, 3, H));
    expect(whole.valueNorms.length).toBe(L * H * n);
    const off = model.run(ids, { disabledHeads: [[1, 2]] });
    expect(head(off, 0, 0, H)).toEqual(head(whole, 0, 0, H));  // layer 0 does not see the switch
    expect(maxAbsDiff(off.logits, whole.logits)).toBeGreaterThan(1e-4);
    model.dispose();
  });
});

// IEEE half from float32, round to nearest even (test helper for the F16 variant).
function floatToHalf(value, buf) {
  buf.setFloat32(0, value);
  const x = buf.getUint32(0);
  const sign = (x >>> 16) & 0x8000, exp = (x >>> 23) & 0xff, mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    return sign | roundHalf((mant | 0x800000) >>> (1 - e));
  }
  let h = sign | (e << 10) | (mant >>> 13);
  const r = mant & 0x1fff;
  if (r > 0x1000 || (r === 0x1000 && (h & 1))) h += 1;
  return h;
}
function roundHalf(m) {
  const r = m & 0x1fff;
  let h = m >>> 13;
  if (r > 0x1000 || (r === 0x1000 && (h & 1))) h += 1;
  return h;
}
// bfloat16 from float32 (its top 16 bits), round to nearest even (test helper for weightType 'bf16').
function floatToBf16(value, buf) {
  buf.setFloat32(0, value);
  const x = buf.getUint32(0);
  if ((x & 0x7fffffff) > 0x7f800000) return (x >>> 16) | 0x40;
  const low = x & 0xffff;
  let h = x >>> 16;
  if (low > 0x8000 || (low === 0x8000 && (h & 1))) h += 1;
  return h;
}
