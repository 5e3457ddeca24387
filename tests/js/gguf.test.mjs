// GGUF files through loadPretrained in wasm: the four llama.cpp fixtures (tests/fixtures/gguf, with
// a float64 reference computed on their dequantized tensors and llama.cpp's own greedy
// continuations), every way of naming the file (path, URL, hub id + file, File, bytes, a folder of
// files), and the Hugging Face fixtures converted as llama.cpp converts them (gguf-writer.mjs), which
// must give transformers' numbers — the architectures without a GGUF fixture of their own included.
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadMultihead, loadPretrained, readGgufMetadata } from '../../bindings/multihead.mjs';
import { startHubServer } from '../browser/hub-server.mjs';
import { expectedOutputs, maxAbs, maxAbsDiff, readSafetensors } from './checkpoints.mjs';
import { variant } from './fixture-checks.mjs';
import { fixtureAsGguf } from './gguf-writer.mjs';
import { q4kmTypes, q5kmTypes, writeModelFile } from '../../bench/gguf-common.mjs';

const GGUF = join(process.cwd(), 'tests/fixtures/gguf');
const FIXTURES = ['llama-q8_0', 'qwen2-q4_0', 'llama-q4_k_m', 'gpt2-f16'];
const fileOf = (name) => join(GGUF, name, 'model.gguf');

// A fixture's reference: per case the ids, attentions, logits and greedy ids (typed arrays) and margins.
function reference(name) {
  const tensors = readSafetensors(new Uint8Array(readFileSync(join(GGUF, name, 'expected.safetensors'))));
  const typed = (Type, t) => new Type(t.bytes.buffer.slice(t.bytes.byteOffset, t.bytes.byteOffset + t.bytes.length));
  const json = JSON.parse(readFileSync(join(GGUF, name, 'expected.json'), 'utf8'));
  return json.cases.map((c, k) => ({
    ...c,
    ids: typed(Int32Array, tensors.get(`case${k}.input_ids`)),
    attentions: typed(Float32Array, tensors.get(`case${k}.attentions`)),
    logits: typed(Float32Array, tensors.get(`case${k}.logits`)),
    greedyIds: Array.from(typed(Int32Array, tensors.get(`case${k}.greedy_ids`))),
  }));
}

// How far each fixture may be from the float64 reference on its dequantized weights: products over
// 8-, 6- and 4-bit blocks quantize the rows of activations to 8 bits a block of 32 (Q4_K's and Q6_K's
// once for 256), as llama.cpp does (gemm_blocks.h), which moves attentions by up to 5.5e-3 (llama-q8_0),
// 9.8e-3 (qwen2-q4_0) and 1.0e-2 (llama-q4_k_m: 4 layers) and logits by up to 0.36 %, 0.45 % and 0.81 % of
// a row's range (measured with Q6_K in its super-blocks; 0.27 % and 0.47 % with it widened); gpt2-f16
// computes in float32.
const TOLERANCE = {
  'llama-q8_0': { attentions: 2e-2, logits: 2e-2 },
  'qwen2-q4_0': { attentions: 2e-2, logits: 2e-2 },
  'llama-q4_k_m': { attentions: 2e-2, logits: 2e-2 },
  'gpt2-f16': { attentions: 1e-4, logits: 1e-4 },
};

// Every case against the reference: attentions, logits (against each row's range), each position's
// top token where the reference's margin is clear (over 1 % of the range), and the greedy
// continuation through generate(), which must also be llama.cpp's.
async function checkAgainstReference(model, name) {
  const V = model.config.vocabSize;
  let worstAttention = 0, worstLogits = 0;
  for (const c of reference(name)) {
    const out = model.run(c.ids);
    expect(out.attentions.length).toBe(c.attentions.length);
    worstAttention = Math.max(worstAttention, maxAbsDiff(out.attentions, c.attentions));
    for (let i = 0; i < c.ids.length; i += 1) {
      const want = c.logits.subarray(i * V, (i + 1) * V), got = out.logits.subarray(i * V, (i + 1) * V);
      let lo = Infinity, hi = -Infinity, top = 0, ours = 0;
      want.forEach((x, j) => { lo = Math.min(lo, x); if (x > hi) { hi = x; top = j; } if (got[j] > got[ours]) ours = j; });
      worstLogits = Math.max(worstLogits, maxAbsDiff(got, want) / (hi - lo));
      if (c.argmax_margin_over_range[i] > 0.01) expect(ours, `${name} ${c.key} position ${i}`).toBe(top);
    }
    const greedy = [];
    for await (const step of model.generate(c.ids, { maxNewTokens: 12, stopAtEos: false })) greedy.push(step.id);
    expect(greedy, `${name} ${c.key} greedy`).toEqual(c.greedyIds);
    expect(greedy, `${name} ${c.key}: llama.cpp's own continuation`).toEqual(c.llama_cpp.greedy_ids);
  }
  expect(worstAttention, name).toBeLessThan(TOLERANCE[name].attentions);
  expect(worstLogits, name).toBeLessThan(TOLERANCE[name].logits);
}

describe('GGUF fixtures against the float64 reference and llama.cpp', () => {
  for (const name of FIXTURES) {
    it(`${name}: every case's attentions, logits, top tokens and greedy continuation`, async () => {
      const seen = [];
      const model = await loadPretrained(fileOf(name), { onProgress: (p) => seen.push(p) });
      const expected = JSON.parse(readFileSync(join(GGUF, name, 'expected.json'), 'utf8'));
      expect(model.config.modelType).toBe(expected.architecture === 'gpt2' ? 'gpt2' : expected.architecture);
      // Q8_0 stays in 8-bit blocks, Q4_0 and Q4_K in 4-bit ones (their Q6_K matrices in 6-bit ones);
      // gpt2-f16 mixes F16 and F32 matrices, so widens.
      expect(model.config.weightType).toBe({ 'llama-q8_0': 'q8', 'qwen2-q4_0': 'q4', 'llama-q4_k_m': 'q4', 'gpt2-f16': 'f32' }[name]);
      if (name !== 'gpt2-f16') expect(model.config.weightBytes).toBeLessThan(0.45 * 4 * model.config.parameterCount);
      expect(seen.at(-1).loaded).toBe(seen.at(-1).total);
      await checkAgainstReference(model, name);
      model.dispose();
    });
  }

  // Blocks widened into float32 panels (the products' other path: setIntegerBlockTiles(false)) give
  // the bits of float32 weights (weightType f32).
  it('blocks widened in the product give the bits of float32 weights (weightType f32)', async () => {
    const core = await loadMultihead();
    for (const name of ['llama-q8_0', 'llama-q4_k_m']) {
      const blocks = await loadPretrained(fileOf(name)), widened = await loadPretrained(fileOf(name), { weightType: 'f32' });
      expect(widened.config.weightType).toBe('f32');
      expect(blocks.config.weightBytes).toBeLessThan(0.45 * widened.config.weightBytes);
      core.setIntegerBlockTiles(false);
      try {
        for (const c of reference(name)) {
          const a = blocks.run(c.ids), b = widened.run(c.ids);
          expect(Buffer.compare(Buffer.from(a.logits.buffer, a.logits.byteOffset, a.logits.byteLength), Buffer.from(b.logits.buffer, b.logits.byteOffset, b.logits.byteLength)), `${name} ${c.key}`).toBe(0);
          expect(Buffer.compare(Buffer.from(a.attentions.buffer, a.attentions.byteOffset, a.attentions.byteLength), Buffer.from(b.attentions.buffer, b.attentions.byteOffset, b.attentions.byteLength)), `${name} ${c.key}`).toBe(0);
        }
      } finally {
        core.setIntegerBlockTiles(true);
      }
      blocks.dispose();
      widened.dispose();
    }
  });

  // Prefill (integer tiles) and decoding (one new row, the rest in the key/value cache: the one-row
  // path) both quantize each row to 8 bits a block and sum its products as integers, as llama.cpp
  // does; a product's row is the same bits either way (tests/cpp/gemm_test.cpp, natively and in
  // wasm: scripts/gemm-test-wasm.sh). Through the whole model the rows differ a little: attention
  // over the cache sums in another order than the tiles' (float32 weights differ by ~1e-6 there
  // too), and a last bit can move a value to the next 8-bit step. Each row decoded step by step
  // stays within 2 % of the range of the same row in prefill (measured with Q6_K in blocks: 0.24 %, 2e-5 % and 0.37 %),
  // and prefill differs from the float32 product of the widened blocks (it did quantize).
  it("decoding's rows stay close to the same rows in prefill", async () => {
    const core = await loadMultihead();
    for (const name of ['llama-q8_0', 'qwen2-q4_0', 'llama-q4_k_m']) {
      const model = await loadPretrained(fileOf(name));
      const V = model.config.vocabSize;
      for (const c of reference(name)) {
        const n = c.ids.length, prefill = model.run(c.ids, { attentions: false }).logits, context = model.createContext();
        context.run(c.ids.subarray(0, 1), { attentions: false, logits: false, reusePrefix: true });
        for (let i = 1; i < n; i += 1) {
          const step = context.run(c.ids.subarray(0, i + 1), { attentions: false, logits: [i], reusePrefix: true });
          expect(step.reusedTokens).toBe(i);
          const row = prefill.subarray(i * V, (i + 1) * V);
          const range = Math.max(...row) - Math.min(...row);
          expect(maxAbsDiff(step.logits, row) / range, `${name} ${c.key} row ${i}`).toBeLessThan(0.02);
        }
        core.setIntegerBlockTiles(false);
        const widened = model.run(c.ids, { attentions: false }).logits;
        core.setIntegerBlockTiles(true);
        expect(maxAbsDiff(prefill, widened), `${name} ${c.key}`).toBeGreaterThan(0);
        context.dispose();
      }
      model.dispose();
    }
  });

  // Q6_K and Q5_K kept as 6- and 5-bit blocks where the fixtures have none: a tied embedding (looked
  // up element by element, and the head's product) and attn_v / ffn_down in Q6_K, the other matrices
  // Q4_K or Q5_K, in a random qwen3 of a Q4_K_M / Q5_K_M file's types with d = 256 (the K-quants'
  // 256-value blocks). 1.125 bytes a Q6_K weight, 0.625 a Q4_K one and 0.75 a Q5_K one (their integer
  // scales kept); the blocks widened in the product give the bits of the same file widened to float32;
  // decoding stays close to prefill.
  for (const [layout, typesOf, kept, keptBytes] of [['Q4_K_M', q4kmTypes, 'q4', 0.625], ['Q5_K_M', q5kmTypes, 'q5', 0.75]]) {
    it(`${layout}: Q6_K as 6-bit blocks (a tied embedding and head) beside ${kept} ones, their bytes, the values of float32`, async () => {
      const shape = { arch: 'qwen3', d: 256, layers: 3, heads: 2, kvHeads: 1, headDim: 128, ff: 512, vocab: 1024,
        ropeBase: 1e6, eps: 1e-6, context: 512, tokenizer: 'qwen3', qkNorm: true };
      const dir = mkdtempSync(join(tmpdir(), `mh-${kept}-`)), path = join(dir, 'model.gguf');
      const typeOf = typesOf(shape.layers);
      const core = await loadMultihead();
      try {
        writeModelFile(path, shape, typeOf);
        const blocks = await loadPretrained(path), widened = await loadPretrained(path, { weightType: 'f32' });
        expect(blocks.config.weightType).toBe(kept);
        const { d, heads, kvHeads, headDim, ff, vocab } = shape;
        let bytes = vocab * d * 1.125 + 4 * d;  // the tied embedding (Q6_K), the final norm
        for (let l = 0; l < shape.layers; l += 1) {
          const at = (name, count) => count * (typeOf(name, l) === 'q6_k' ? 1.125 : keptBytes);
          bytes += at('attn_q', heads * headDim * d) + at('attn_k', kvHeads * headDim * d) + at('attn_v', kvHeads * headDim * d) +
            at('attn_output', d * heads * headDim) + at('ffn_gate', ff * d) + at('ffn_up', ff * d) + at('ffn_down', d * ff) +
            4 * (2 * d + 2 * headDim);  // attn_norm, ffn_norm, q_norm, k_norm
        }
        expect(blocks.config.weightBytes).toBe(bytes);
        const ids = Int32Array.from({ length: 19 }, (_, i) => (i * 37 + 5) % vocab);
        core.setIntegerBlockTiles(false);
        let a, b;
        try {
          a = blocks.run(ids);
          b = widened.run(ids);
        } finally {
          core.setIntegerBlockTiles(true);
        }
        expect(maxAbsDiff(a.logits, b.logits)).toBe(0);
        expect(maxAbsDiff(a.attentions, b.attentions)).toBe(0);
        const prefill = blocks.run(ids, { attentions: false }).logits, context = blocks.createContext();
        expect(maxAbsDiff(prefill, b.logits)).toBeGreaterThan(0);  // it did quantize the rows
        context.run(ids.subarray(0, 18), { attentions: false, logits: false, reusePrefix: true });
        const step = context.run(ids, { attentions: false, logits: [18], reusePrefix: true });
        const row = prefill.subarray(18 * vocab);
        expect(maxAbsDiff(step.logits, row) / (Math.max(...row) - Math.min(...row))).toBeLessThan(0.02);
        context.dispose();
        blocks.dispose();
        widened.dispose();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  // The integer dot-add (src/core/gemm_tuning.h) gives the products over blocks the same bits: every
  // fixture's prefill (tiles) and decoding steps (one row) with it and without, in a Node process
  // whose V8 runs only its optimizing compiler (Node 20's baseline compiler computes the dot-add
  // wrongly in some functions: there the first product measures it inexact, and it stays off and
  // cannot be turned on, as this process checks). Where it measured exact and faster it is on.
  // Its own Node processes, as the relaxed build's: once is enough (not again in the plain build's run).
  it.skipIf(process.env.MULTIHEAD_EXPECT_BUILD === 'simd')('the integer dot-add, where it computes exactly, gives the same bits; elsewhere it stays off', async () => {
    const api = join(process.cwd(), 'bindings/multihead.mjs');
    const run = (flags) => JSON.parse(execFileSync(process.execPath, [...flags, '--input-type=module', '-e', `
      import { loadMultihead, loadPretrained, runtimeInfo } from ${JSON.stringify(api)};
      const core = await loadMultihead();
      const bits = (x) => Buffer.from(x.buffer, x.byteOffset, x.byteLength).toString('base64');
      const out = { fixtures: {} };
      for (const name of ${JSON.stringify(['llama-q8_0', 'qwen2-q4_0', 'llama-q4_k_m'])}) {
        const model = await loadPretrained(${JSON.stringify(GGUF)} + '/' + name + '/model.gguf');
        const ids = Int32Array.from({ length: 12 }, (_, i) => (i * 37 + 5) % model.config.vocabSize);
        const once = () => {
          const prefill = model.run(ids), context = model.createContext();
          const steps = [];
          for (let i = 1; i <= ids.length; i += 1) steps.push(bits(context.run(ids.subarray(0, i), { attentions: false, logits: [i - 1], reusePrefix: true }).logits));
          context.dispose();
          return [bits(prefill.logits), bits(prefill.attentions), ...steps];
        };
        const off = once();
        out.info = (await runtimeInfo()).integerDotAdd;
        out.accepted = core.setIntegerDotAdd(true);
        const on = out.accepted ? once() : off;
        core.setIntegerDotAdd(false);
        out.fixtures[name] = on.filter((x, i) => x !== off[i]).length;
        model.dispose();
      }
      console.log(JSON.stringify(out));`], { encoding: 'utf8', timeout: 120_000 }));
    const optimized = run(['--no-liftoff']);
    expect(optimized.info).toMatchObject({ measured: true, exact: true });
    expect(optimized.accepted).toBe(true);
    expect(optimized.fixtures).toEqual({ 'llama-q8_0': 0, 'qwen2-q4_0': 0, 'llama-q4_k_m': 0 });
    const plain = run([]);  // as a user's program runs
    expect(plain.info.measured).toBe(true);
    expect(plain.accepted).toBe(plain.info.exact);
    if (plain.info.on) expect(plain.info.exact).toBe(true);
    expect(plain.fixtures).toEqual({ 'llama-q8_0': 0, 'qwen2-q4_0': 0, 'llama-q4_k_m': 0 });
  }, 240_000);

  it('at 2 bytes a weight (weightType bf16) it stays close, with the same clear top tokens', async () => {
    const model = await loadPretrained(fileOf('llama-q8_0'), { weightType: 'bf16' });
    expect(model.config.weightType).toBe('bf16');
    for (const c of reference('llama-q8_0')) {
      const out = model.run(c.ids);
      expect(maxAbsDiff(out.attentions, c.attentions)).toBeLessThan(2e-2);
    }
    model.dispose();
  });
});

describe('a GGUF file however it is named', () => {
  const bytes = new Uint8Array(readFileSync(fileOf('qwen2-q4_0')));
  const firstCase = reference('qwen2-q4_0')[0];
  const sameAttentions = (model) => {
    expect(maxAbsDiff(model.run(firstCase.ids).attentions, firstCase.attentions)).toBeLessThan(TOLERANCE['qwen2-q4_0'].attentions);
    model.dispose();
  };

  it('its bytes, a File, a Blob, a list of files, a folder with { file }, a file: URL', async () => {
    sameAttentions(await loadPretrained(bytes));
    sameAttentions(await loadPretrained(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)));
    sameAttentions(await loadPretrained(new File([bytes], 'qwen2.5-0.5b-q4_0.gguf')));
    sameAttentions(await loadPretrained(new Blob([bytes])));
    sameAttentions(await loadPretrained([new File([bytes], 'models/x.gguf'), new File(['{}'], 'notes.json')]));
    sameAttentions(await loadPretrained(join(GGUF, 'qwen2-q4_0'), { file: 'model.gguf' }));
    sameAttentions(await loadPretrained(new URL(`file://${fileOf('qwen2-q4_0')}`)));
  });

  it('a hub id with { file }, and a URL, read with byte ranges', async () => {
    const hub = await startHubServer();
    try {
      sameAttentions(await loadPretrained('local/GGUF', { hub: hub.url, file: 'qwen2-q4_0.gguf' }));
      sameAttentions(await loadPretrained(`${hub.url}/local/GGUF/resolve/main/qwen2-q4_0.gguf`));
      await expect(loadPretrained('local/GGUF', { hub: hub.url, file: 'nothing.gguf' })).rejects.toThrow(/no nothing\.gguf/);
    } finally {
      await hub.close();
    }
  });

  it('two GGUF files and no name, a file that is not .gguf, a truncated or foreign file: an Error that says so; loading goes on working', async () => {
    const two = [new File([bytes], 'a.gguf'), new File([bytes], 'b.gguf')];
    await expect(loadPretrained(two)).rejects.toThrow(/2 GGUF files .*file: 'a\.gguf'/);
    await expect(loadPretrained(join(GGUF, 'qwen2-q4_0'), { file: 'model.bin' })).rejects.toThrow(/must name a \.gguf file/);
    await expect(loadPretrained(bytes.subarray(0, bytes.length - 100))).rejects.toThrow(/truncated/);
    await expect(loadPretrained(bytes.subarray(0, 1000))).rejects.toThrow(/truncated|ends/);
    const foreign = bytes.slice();
    foreign.set(new TextEncoder().encode('GGUX'));
    await expect(loadPretrained(foreign)).rejects.toThrow(/not a GGUF file/);
    sameAttentions(await loadPretrained(bytes));
  });

  it('readGgufMetadata: the metadata of any GGUF file, or an Error', async () => {
    const metadata = await readGgufMetadata(bytes);
    expect(metadata['general.architecture']).toBe('qwen2');
    expect(metadata['tokenizer.ggml.model']).toBe('gpt2');
    expect(metadata['tokenizer.ggml.tokens'].length).toBe(JSON.parse(readFileSync(join(GGUF, 'qwen2-q4_0', 'expected.json'), 'utf8')).tensors['token_embd.weight'].ne[1]);
    expect(typeof metadata['qwen2.rope.freq_base']).toBe('number');
    await expect(readGgufMetadata(bytes.subarray(0, 200), bytes.length)).rejects.toThrow(/pass more/);
    await expect(readGgufMetadata(new Uint8Array(10))).rejects.toThrow(/GGUF/);
  });
});

describe('Hugging Face fixtures converted as llama.cpp converts them give transformers\' numbers', () => {
  // llama: Q/K rows permuted for rotary on pairs; gpt2: Conv1D transposed; qwen3: q/k norms.
  for (const [fixture, arch] of [['llama', 'llama'], ['qwen2', 'qwen2'], ['qwen3', 'qwen3'], ['gpt2', 'gpt2']]) {
    it(`${fixture} as GGUF architecture ${arch}`, async () => {
      const model = await loadPretrained(fixtureAsGguf(fixture, arch));
      for (const c of expectedOutputs(fixture)) {
        const out = model.run(c.ids);
        expect(maxAbsDiff(out.attentions, c.attentions), `${fixture} ${c.key}`).toBeLessThan(1e-4);
        expect(maxAbsDiff(out.logits, c.logits), `${fixture} ${c.key}`).toBeLessThan(1e-3 * maxAbs(c.logits));
      }
      model.dispose();
    });
  }

  // weightType 'q8_0' / 'q4_0' quantizes a safetensors checkpoint while it loads: the same blocks as
  // the checkpoint converted to a GGUF file whose matrices were quantized by ggml's reference
  // quantizers (gguf-writer.mjs, written independently of the C++ quantizer), so the same bits out.
  // The matrices quantized are those products read whole with K a multiple of 32: here attn_output
  // (K = heads × head_dim 16, cut per head) and the token embedding (a table) stay as stored.
  for (const type of ['q8_0', 'q4_0']) {
    it(`llama quantized while loading (weightType ${type}) gives the bits of its ${type.toUpperCase()} GGUF conversion`, async () => {
      const dir = join(process.cwd(), 'tests/fixtures/hf/llama');
      const quantized = await loadPretrained(dir, { weightType: type });
      const converted = await loadPretrained(fixtureAsGguf('llama', 'llama', { type, tensors: (name) => /^(blk\.\d+\.(attn_[qkv]|ffn_(gate|up|down))|output)\.weight$/.test(name) }));
      expect(quantized.config.weightType).toBe(type.slice(0, 2));
      expect(converted.config.weightType).toBe(type.slice(0, 2));
      const bf16Bytes = (await loadPretrained(dir)).config.weightBytes;
      expect(quantized.config.weightBytes).toBeLessThan((type === 'q8_0' ? 0.8 : 0.65) * bf16Bytes);
      for (const c of expectedOutputs('llama')) {
        const a = quantized.run(c.ids), b = converted.run(c.ids);
        expect(maxAbsDiff(a.logits, b.logits), c.key).toBe(0);
        expect(maxAbsDiff(a.attentions, b.attentions), c.key).toBe(0);
        // 8-bit weights stay near transformers' numbers (measured: attentions within 0.05 on this tiny
        // random model with the products on widened blocks, 0.107 with the rows quantized to 8 bits
        // too); 4 bits move them by up to 0.6 here, checked instead through the GGUF path's float64
        // reference on the dequantized weights (the fixtures above).
        if (type === 'q8_0') expect(maxAbsDiff(a.attentions, c.attentions), c.key).toBeLessThan(0.15);
      }
      quantized.dispose();
      converted.dispose();
    });
  }

  it("weightType 'q8_0' refuses a matrix holding NaN by its name, and the module goes on loading", async () => {
    const withNaN = variant('llama', {
      tensors: (t) => {
        const q = t.get('model.layers.1.mlp.up_proj.weight');  // bf16: 0x7fc0 is a NaN
        const bytes = q.bytes.slice();
        bytes[200] = 0xc0;
        bytes[201] = 0x7f;
        t.set('model.layers.1.mlp.up_proj.weight', { ...q, bytes });
        return t;
      },
    });
    await expect(loadPretrained(withNaN, { weightType: 'q8_0' })).rejects.toThrow(/model\.layers\.1\.mlp\.up_proj\.weight holds nan.*cannot be quantized/);
    const model = await loadPretrained(join(process.cwd(), 'tests/fixtures/hf/llama'), { weightType: 'q4_0' });
    expect(model.config.weightType).toBe('q4');
    model.dispose();
  });

  it("weightType 'q8_0' / 'q4_0' on a GGUF file says the file keeps its own types", async () => {
    await expect(loadPretrained(fileOf('qwen2-q4_0'), { weightType: 'q8_0' })).rejects.toThrow(/GGUF file keeps the types it was quantized to/);
    const model = await loadPretrained(fileOf('qwen2-q4_0'));  // and the module still loads one
    expect(model.config.weightType).toBe('q4');
    model.dispose();
  });

  it('gemma3: 1 + w norms, and llama.cpp\'s layer pattern (every sixth layer full), as the checkpoint with those layer types', async () => {
    const model = await loadPretrained(fixtureAsGguf('gemma3', 'gemma3'));
    const asLlamaCpp = await loadPretrained(variant('gemma3', {
      tensors: (t) => t,
      config: (c) => ({ ...c, layer_types: ['sliding_attention', 'sliding_attention', 'sliding_attention'] }),
    }));
    expect(model.config.slidingLayers).toEqual([0, 1, 2]);
    for (const c of expectedOutputs('gemma3')) {
      const ours = model.run(c.ids), hf = asLlamaCpp.run(c.ids);
      expect(maxAbsDiff(ours.attentions, hf.attentions), c.key).toBeLessThan(1e-4);
      expect(maxAbsDiff(ours.logits, hf.logits), c.key).toBeLessThan(1e-3 * maxAbs(hf.logits));
    }
    model.dispose();
    asLlamaCpp.dispose();
  });
});
