// GGUF files of a model's shape with random weights, for the benchmarks that hand the same file to
// multihead and to another engine (bench/gguf-peer.mjs: llama.cpp in wasm) or load one as large as
// the heap allows (bench/largest-gguf.mjs). Written a tensor at a time, so a file may be larger than
// any one array; with a byte-level BPE vocabulary (the fixtures' pieces and merges, padded to the
// shape's vocabulary size) so that llama.cpp, which refuses a model without one, loads it.
import { spawn } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { closeSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { GGML, T, ggufHeader, quantizeQ4_0, quantizeQ8_0, randomQ4_K, randomQ5_K, randomQ6_K } from '../tests/js/gguf-writer.mjs';

export const SHAPES = {
  // GPT-2 small's sizes as a `llama` model (the shape of bench/gguf.mjs), GPT-2's vocabulary size.
  'gpt2-small': { arch: 'llama', d: 768, layers: 12, heads: 12, kvHeads: 12, headDim: 64, ff: 3072, vocab: 50257,
    ropeBase: 10000, eps: 1e-5, context: 2048, tokenizer: 'gpt2' },
  // Llama-3.2-1B (meta-llama/Llama-3.2-1B's config.json, without its rope scaling): tied embeddings.
  'llama-3.2-1b': { arch: 'llama', d: 2048, layers: 16, heads: 32, kvHeads: 8, headDim: 64, ff: 8192, vocab: 128256,
    ropeBase: 5e5, eps: 1e-5, context: 131072, tokenizer: 'gpt2' },
  // Llama-3.2-3B (meta-llama/Llama-3.2-3B's config.json, without its rope scaling): tied embeddings.
  'llama-3.2-3b': { arch: 'llama', d: 3072, layers: 28, heads: 24, kvHeads: 8, headDim: 128, ff: 8192, vocab: 128256,
    ropeBase: 5e5, eps: 1e-5, context: 131072, tokenizer: 'gpt2' },
  // Qwen3-4B (Qwen/Qwen3-4B's config.json): tied embeddings, RMSNorm on each head's q and k.
  'qwen3-4b': { arch: 'qwen3', d: 2560, layers: 36, heads: 32, kvHeads: 8, headDim: 128, ff: 9728, vocab: 151936,
    ropeBase: 1e6, eps: 1e-6, context: 40960, tokenizer: 'qwen3', qkNorm: true },
};

const BYTES_PER_BLOCK = { q8_0: [32, 34], q4_0: [32, 18], q4_k: [256, 144], q5_k: [256, 176], q6_k: [256, 210] };
const TYPE_ID = { f32: GGML.F32, q8_0: GGML.Q8_0, q4_0: GGML.Q4_0, q4_k: GGML.Q4_K, q5_k: GGML.Q5_K, q6_k: GGML.Q6_K };
const byteLength = (type, count) => (type === 'f32' ? 4 * count : (count / BYTES_PER_BLOCK[type][0]) * BYTES_PER_BLOCK[type][1]);

// Normal values (Box–Muller over a 32-bit LCG): quick, and the same every time.
export function randomNormal(count, seed, std) {
  let s = seed >>> 0;
  const out = new Float32Array(count);
  for (let i = 0; i < count; i += 2) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const u = (s + 1) / 4294967297;
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const v = s / 4294967296, r = Math.sqrt(-2 * Math.log(u)) * std;
    out[i] = r * Math.cos(2 * Math.PI * v);
    if (i + 1 < count) out[i + 1] = r * Math.sin(2 * Math.PI * v);
  }
  return out;
}

// A matrix's bytes in `type`: Q8_0 / Q4_0 quantized from normal values by ggml's reference
// quantizers; Q4_K / Q5_K / Q6_K random blocks (no K-quant quantizer here, and the values are random
// anyway).
function matrixBytes(type, count, seed) {
  if (type === 'q4_k') return randomQ4_K(count, randomFillSync);
  if (type === 'q5_k') return randomQ5_K(count, randomFillSync);
  if (type === 'q6_k') return randomQ6_K(count, randomFillSync);
  const values = randomNormal(count, seed, 0.02);
  if (type === 'q8_0') return quantizeQ8_0(values);
  if (type === 'q4_0') return quantizeQ4_0(values);
  return new Uint8Array(values.buffer);
}

// tokenizer.ggml.* for a byte-level BPE vocabulary of `size` tokens: a fixture's pieces and merges
// (tests/fixtures/hf/{gpt2,qwen3}), unused ids filled with placeholders, the last id the end of text.
function vocabulary(fixture, size) {
  const dir = new URL(`../tests/fixtures/hf/${fixture}/`, import.meta.url);
  const pieces = JSON.parse(readFileSync(new URL('vocab.json', dir), 'utf8'));
  const tokens = Array.from({ length: size }, (_, i) => `<|unused_${i}|>`);
  const END = '<|endoftext|>';  // the last id, wherever the fixture has it (a token is in a vocabulary once)
  for (const [piece, id] of Object.entries(pieces)) if (id < size - 1 && piece !== END) tokens[id] = piece;
  tokens[size - 1] = END;
  const types = tokens.map((_, i) => (i === size - 1 ? 3 : 1));  // 3: control, 1: normal
  const merges = readFileSync(new URL('merges.txt', dir), 'utf8').split('\n').filter((l) => l && !l.startsWith('#'));
  return [
    ['tokenizer.ggml.model', T.STRING, 'gpt2'], ['tokenizer.ggml.pre', T.STRING, fixture === 'gpt2' ? 'gpt-2' : 'qwen2'],
    ['tokenizer.ggml.tokens', T.ARRAY, { type: T.STRING, values: tokens }],
    ['tokenizer.ggml.token_type', T.ARRAY, { type: T.I32, values: types }],
    ['tokenizer.ggml.merges', T.ARRAY, { type: T.STRING, values: merges }],
    ['tokenizer.ggml.bos_token_id', T.U32, size - 1], ['tokenizer.ggml.eos_token_id', T.U32, size - 1],
    ['tokenizer.ggml.add_bos_token', T.BOOL, false],
  ];
}

// The tensors of a model of shape `shape` (one of SHAPES) whose matrices are in `typeOf(name, layer)`
// (layer -1 for token_embd), its norms F32 ones: { name, shape, kind, count } in the file's order.
function modelTensors(shape, typeOf) {
  const { d, layers, heads, kvHeads, headDim, ff, vocab } = shape;
  const tensors = [];
  const matrix = (name, layer, rows, cols) => tensors.push({ name, shape: [rows, cols], kind: typeOf(name, layer), count: rows * cols });
  const ones = (name, n) => tensors.push({ name, shape: [n], kind: 'ones', count: n });
  matrix('token_embd.weight', -1, vocab, d);
  for (let l = 0; l < layers; l += 1) {
    ones(`blk.${l}.attn_norm.weight`, d);
    matrix(`blk.${l}.attn_q.weight`, l, heads * headDim, d);
    matrix(`blk.${l}.attn_k.weight`, l, kvHeads * headDim, d);
    matrix(`blk.${l}.attn_v.weight`, l, kvHeads * headDim, d);
    matrix(`blk.${l}.attn_output.weight`, l, d, heads * headDim);
    if (shape.qkNorm) { ones(`blk.${l}.attn_q_norm.weight`, headDim); ones(`blk.${l}.attn_k_norm.weight`, headDim); }
    ones(`blk.${l}.ffn_norm.weight`, d);
    matrix(`blk.${l}.ffn_gate.weight`, l, ff, d);
    matrix(`blk.${l}.ffn_up.weight`, l, ff, d);
    matrix(`blk.${l}.ffn_down.weight`, l, d, ff);
  }
  ones('output_norm.weight', d);
  return tensors;
}

/** The bytes of the tensors of such a model as its GGUF file holds them (its quantized blocks as the format packs them). */
export function fileTensorBytes(shape, typeOf) {
  return modelTensors(shape, typeOf).reduce((sum, t) => sum + byteLength(t.kind === 'ones' ? 'f32' : t.kind, t.count), 0);
}

/**
 * Writes `path`: a GGUF of shape `shape` (one of SHAPES) whose matrices are in `typeOf(name, layer)`
 * ('q8_0', 'q4_0', 'q4_k', 'q5_k', 'q6_k' or 'f32'; layer -1 for token_embd), norms F32 ones. Tied head.
 */
export function writeModelFile(path, shape, typeOf) {
  const { arch, d, layers, heads, kvHeads, headDim, ff, vocab } = shape;
  const tensors = modelTensors(shape, typeOf);
  const k = (key) => `${arch}.${key}`;
  const metadata = [
    ['general.architecture', T.STRING, arch], ['general.name', T.STRING, `random ${arch}`],
    [k('block_count'), T.U32, layers], [k('context_length'), T.U32, shape.context],
    [k('embedding_length'), T.U32, d], [k('feed_forward_length'), T.U32, ff], [k('attention.head_count'), T.U32, heads],
    [k('attention.head_count_kv'), T.U32, kvHeads], [k('attention.layer_norm_rms_epsilon'), T.F32, shape.eps],
    [k('attention.key_length'), T.U32, headDim], [k('attention.value_length'), T.U32, headDim],
    [k('rope.freq_base'), T.F32, shape.ropeBase], [k('rope.dimension_count'), T.U32, headDim],
    ...vocabulary(shape.tokenizer, vocab),
  ];
  const infos = tensors.map((t) => ({ name: t.name, shape: t.shape, type: TYPE_ID[t.kind === 'ones' ? 'f32' : t.kind],
    byteLength: byteLength(t.kind === 'ones' ? 'f32' : t.kind, t.count) }));
  const { header, offsets } = ggufHeader(metadata, infos);
  const tmp = `${path}.partial`;  // renamed when complete, so an interrupted run leaves no short file
  const fd = openSync(tmp, 'w');
  try {
    const write = (bytes) => { for (let done = 0; done < bytes.length;) done += writeSync(fd, bytes, done); };
    write(header);
    let at = 0, seed = 1;
    tensors.forEach((t, i) => {
      if (offsets[i] > at) write(new Uint8Array(offsets[i] - at));  // alignment padding
      const bytes = t.kind === 'ones' ? new Uint8Array(new Float32Array(t.count).fill(1).buffer) : matrixBytes(t.kind, t.count, seed++);
      write(bytes);
      at = offsets[i] + bytes.length;
    });
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

// The tensor types llama-quantize gives a Q4_K_M (Q5_K_M) file of an `n`-layer model with a tied
// head: token_embd (also the head) Q6_K, attn_v and ffn_down Q6_K on a third of the layers
// (llama.cpp's use_more_bits: the first and last eighth and every third between), the rest Q4_K (Q5_K).
export function q4kmTypes(n, rest = 'q4_k') {
  const moreBits = (l) => l < Math.floor(n / 8) || l >= Math.floor((7 * n) / 8) || (l - Math.floor(n / 8)) % 3 === 2;
  return (name, layer) => (layer < 0 || (/attn_v|ffn_down/.test(name) && moreBits(layer)) ? 'q6_k' : rest);
}
export const q5kmTypes = (n) => q4kmTypes(n, 'q5_k');

// Opens a bench page on the local server, which may still be starting.
// The repository served cross-origin isolated on `port` (scripts/serve.mjs) and Debian's Chromium,
// headless; close() stops both. (Playwright is imported here, not above: the unit tests import
// this file's writers.)
export async function openBrowser(port) {
  const { chromium } = await import('@playwright/test');
  const server = spawn(process.execPath, ['scripts/serve.mjs', '--port', String(port)], { stdio: 'ignore' });
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--no-first-run', '--disable-sync', '--disable-dev-shm-usage'],
  });
  return { browser, close: async () => { await browser.close(); server.kill(); } };
}

export async function openPage(page, url) {
  for (let attempt = 0; ; attempt++) {
    try {
      await page.goto(url);
      return;
    } catch (e) {
      if (attempt > 20) throw e;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}
