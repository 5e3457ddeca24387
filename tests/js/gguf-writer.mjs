// Test helper: the Hugging Face fixtures written as GGUF files the way llama.cpp's converter
// (convert_hf_to_gguf.py) writes them, so that transformers' numbers in expected.safetensors check
// the GGUF path for architectures with no GGUF fixture of their own. Written from llama.cpp's
// conventions (tensor names, metadata keys, the `llama` architecture's Q/K row permutation, Gemma's
// 1 + w norms, GPT-2's transposed Conv1D weights), independently of src/io/gguf_model.cpp.
// Tensors are F32 (the fixtures' F16 / BF16 widened exactly).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, fixtureConfig, readSafetensors, toF32 } from './checkpoints.mjs';

export const T = { I32: 5, U32: 4, F32: 6, BOOL: 7, STRING: 8, ARRAY: 9 };
// ggml's type ids of the tensor types written here.
export const GGML = { F32: 0, Q4_0: 2, Q8_0: 8, Q4_K: 12, Q5_K: 13, Q6_K: 14 };

/**
 * GGUF v3 bytes from [key, type, value] metadata and { name, shape (PyTorch order), data: Float32Array }
 * tensors, or { name, shape, type (ggml's id), bytes } for tensors already in another type. An ARRAY
 * value is { type, values } (values of type U32, I32, F32 or STRING).
 */
export function writeGguf(metadata, tensors, alignment = 32) {
  const { header, offsets, dataBytes } = ggufHeader(metadata, tensors.map((t) => ({ ...t, byteLength: tensorBytes(t).length })), alignment);
  const out = new Uint8Array(header.length + dataBytes);
  out.set(header);
  tensors.forEach((t, i) => out.set(tensorBytes(t), header.length + offsets[i]));
  return out;
}

/**
 * The header of a GGUF file (padded to where the tensor data starts) for tensors given as
 * { name, shape, type, byteLength }, each tensor's offset in the data and the data's length: for
 * files too large to hold in one array, whose tensors are then written one at a time.
 */
export function ggufHeader(metadata, tensors, alignment = 32) {
  const parts = [];
  const enc = new TextEncoder();
  const u32 = (v) => { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, v, true); parts.push(b); };
  const i32 = (v) => { const b = new Uint8Array(4); new DataView(b.buffer).setInt32(0, v, true); parts.push(b); };
  const u64 = (v) => { const b = new Uint8Array(8); new DataView(b.buffer).setBigUint64(0, BigInt(v), true); parts.push(b); };
  const f32 = (v) => { const b = new Uint8Array(4); new DataView(b.buffer).setFloat32(0, v, true); parts.push(b); };
  const str = (s) => { const b = enc.encode(s); u64(b.length); parts.push(b); };
  const value = (type, v) => {
    if (type === T.U32) u32(v);
    else if (type === T.I32) i32(v);
    else if (type === T.F32) f32(v);
    else if (type === T.BOOL) parts.push(Uint8Array.of(v ? 1 : 0));
    else if (type === T.ARRAY) {
      u32(v.type);
      u64(v.values.length);
      for (const x of v.values) value(v.type, x);
    } else str(v);
  };
  parts.push(enc.encode('GGUF'));
  u32(3);
  u64(tensors.length);
  u64(metadata.length);
  for (const [key, type, v] of metadata) {
    str(key);
    u32(type);
    value(type, v);
  }
  let offset = 0;
  const offsets = [];
  for (const t of tensors) {
    str(t.name);
    u32(t.shape.length);
    for (const ne of [...t.shape].reverse()) u64(ne);
    u32(t.type ?? 0);  // F32 unless given
    offsets.push(offset);
    u64(offset);
    offset += Math.ceil(t.byteLength / alignment) * alignment;
  }
  const headerBytes = parts.reduce((n, p) => n + p.length, 0);
  const header = new Uint8Array(Math.ceil(headerBytes / alignment) * alignment);
  let at = 0;
  for (const p of parts) { header.set(p, at); at += p.length; }
  return { header, offsets, dataBytes: offset };
}
const tensorBytes = (t) => t.bytes ?? new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.length * 4);

// llama.cpp's LlamaModel.permute: each head's rows reordered for rotary on adjacent pairs
// (reshape(heads, 2, D/2, in).swapaxes(1, 2)).
function permuteRows(data, shape, heads) {
  const rows = shape[0], cols = shape.length > 1 ? shape[1] : 1, D = rows / heads, out = new Float32Array(data.length);
  for (let h = 0; h < heads; h += 1) {
    for (let a = 0; a < 2; a += 1) {
      for (let b = 0; b < D / 2; b += 1) {
        const from = h * D + a * (D / 2) + b, to = h * D + b * 2 + a;
        out.set(data.subarray(from * cols, (from + 1) * cols), to * cols);
      }
    }
  }
  return out;
}

function transpose(data, [rows, cols]) {
  const out = new Float32Array(data.length);
  for (let r = 0; r < rows; r += 1) for (let c = 0; c < cols; c += 1) out[c * rows + r] = data[r * cols + c];
  return out;
}

const LAYER_NAMES = {
  llama: [
    ['input_layernorm.weight', 'attn_norm.weight'], ['self_attn.q_proj.weight', 'attn_q.weight'],
    ['self_attn.k_proj.weight', 'attn_k.weight'], ['self_attn.v_proj.weight', 'attn_v.weight'],
    ['self_attn.o_proj.weight', 'attn_output.weight'], ['self_attn.q_proj.bias', 'attn_q.bias'],
    ['self_attn.k_proj.bias', 'attn_k.bias'], ['self_attn.v_proj.bias', 'attn_v.bias'],
    ['post_attention_layernorm.weight', 'ffn_norm.weight'], ['mlp.gate_proj.weight', 'ffn_gate.weight'],
    ['mlp.up_proj.weight', 'ffn_up.weight'], ['mlp.down_proj.weight', 'ffn_down.weight'],
    ['self_attn.q_norm.weight', 'attn_q_norm.weight'], ['self_attn.k_norm.weight', 'attn_k_norm.weight'],
  ],
  gemma3: [
    ['input_layernorm.weight', 'attn_norm.weight'], ['self_attn.q_proj.weight', 'attn_q.weight'],
    ['self_attn.k_proj.weight', 'attn_k.weight'], ['self_attn.v_proj.weight', 'attn_v.weight'],
    ['self_attn.o_proj.weight', 'attn_output.weight'], ['self_attn.q_norm.weight', 'attn_q_norm.weight'],
    ['self_attn.k_norm.weight', 'attn_k_norm.weight'], ['post_attention_layernorm.weight', 'post_attention_norm.weight'],
    ['pre_feedforward_layernorm.weight', 'ffn_norm.weight'], ['post_feedforward_layernorm.weight', 'post_ffw_norm.weight'],
    ['mlp.gate_proj.weight', 'ffn_gate.weight'], ['mlp.up_proj.weight', 'ffn_up.weight'], ['mlp.down_proj.weight', 'ffn_down.weight'],
  ],
  gpt2: [
    ['ln_1.weight', 'attn_norm.weight'], ['ln_1.bias', 'attn_norm.bias'], ['attn.c_attn.weight', 'attn_qkv.weight'],
    ['attn.c_attn.bias', 'attn_qkv.bias'], ['attn.c_proj.weight', 'attn_output.weight'], ['attn.c_proj.bias', 'attn_output.bias'],
    ['ln_2.weight', 'ffn_norm.weight'], ['ln_2.bias', 'ffn_norm.bias'], ['mlp.c_fc.weight', 'ffn_up.weight'],
    ['mlp.c_fc.bias', 'ffn_up.bias'], ['mlp.c_proj.weight', 'ffn_down.weight'], ['mlp.c_proj.bias', 'ffn_down.bias'],
  ],
};

// ggml's reference quantizers (quantize_row_q8_0_ref, quantize_row_q4_0_ref), written from the
// formats: Q8_0 rounds x / d to nearest, ties away from zero (C's roundf); Q4_0 truncates x / d + 8.5.
const f32buf = new Float32Array(1), u32buf = new Uint32Array(f32buf.buffer);
function toHalf(x) {  // float32 → binary16, rounded to nearest even
  f32buf[0] = x;
  const bits = u32buf[0], sign = (bits >>> 16) & 0x8000, exp = (bits >>> 23) & 0xff, mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const m = mant | 0x800000, shift = 14 - e, half = 1 << (shift - 1);
    let h = m >>> shift;
    const rest = m & ((1 << shift) - 1);
    if (rest > half || (rest === half && h & 1)) h += 1;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && h & 1)) h += 1;
  return sign | h;
}
const roundAway = (v) => Math.sign(v) * Math.round(Math.abs(v));
export function quantizeQ8_0(x) {
  const out = new Uint8Array((x.length / 32) * 34), view = new DataView(out.buffer);
  for (let b = 0; b < x.length / 32; b += 1) {
    let amax = 0;
    for (let j = 0; j < 32; j += 1) amax = Math.max(amax, Math.abs(x[32 * b + j]));
    const d = Math.fround(amax / 127), id = d ? Math.fround(1 / d) : 0;
    view.setUint16(34 * b, toHalf(d), true);
    for (let j = 0; j < 32; j += 1) view.setInt8(34 * b + 2 + j, roundAway(Math.fround(x[32 * b + j] * id)));
  }
  return out;
}
export function quantizeQ4_0(x) {
  const out = new Uint8Array((x.length / 32) * 18), view = new DataView(out.buffer);
  for (let b = 0; b < x.length / 32; b += 1) {
    let max = 0;
    for (let j = 0; j < 32; j += 1) if (Math.abs(x[32 * b + j]) > Math.abs(max)) max = x[32 * b + j];
    const d = Math.fround(max / -8), id = d ? Math.fround(1 / d) : 0;
    view.setUint16(18 * b, toHalf(d), true);
    const q = (v) => Math.min(15, Math.trunc(Math.fround(Math.fround(v * id) + 8.5)));
    for (let j = 0; j < 16; j += 1) out[18 * b + 2 + j] = q(x[32 * b + j]) | (q(x[32 * b + j + 16]) << 4);
  }
  return out;
}

// Random but valid Q4_K, Q5_K and Q6_K blocks (256 values each) for benchmarks' random weights:
// random 6-bit scales and mins (Q4_K, Q5_K), 8-bit scales (Q6_K) and quants, with super-block scales
// that keep the values within about ±0.1. Not a quantizer: nothing is rounded from given values.
// `fill(bytes)` fills a Uint8Array with random bytes (crypto.randomFillSync in Node).
// Q4_K (144 bytes) and Q5_K (176): value = d·scale·q − dmin·min, scale, min < 64, q < 16 (32).
const randomKQuant = (bytes, d) => (count, fill) => {
  const out = new Uint8Array((count / 256) * bytes), view = new DataView(out.buffer);
  fill(out);
  for (let at = 0; at < out.length; at += bytes) { view.setUint16(at, toHalf(d), true); view.setUint16(at + 2, toHalf(7.5e-4), true); }
  return out;
};
export const randomQ4_K = randomKQuant(144, 1e-4);
export const randomQ5_K = randomKQuant(176, 5e-5);
export function randomQ6_K(count, fill) {
  const out = new Uint8Array((count / 256) * 210), view = new DataView(out.buffer);
  fill(out);
  const d = toHalf(2.5e-5);  // value = d·scale·(q − 32), |scale| ≤ 128, q < 64
  for (let at = 0; at < out.length; at += 210) view.setUint16(at + 208, d, true);
  return out;
}

/**
 * A fixture (tests/fixtures/hf/{fixture}) as llama.cpp would convert it: architecture `arch` is
 * 'llama' (Q/K permuted), 'qwen2', 'qwen3', 'gemma3' or 'gpt2'. quantize: { type: 'q8_0' | 'q4_0',
 * tensors: (ggufName) => boolean } writes those tensors in that type, the rest F32.
 */
export function fixtureAsGguf(fixture, arch, quantize = null) {
  const config = fixtureConfig(fixture);
  const weights = readSafetensors(new Uint8Array(readFileSync(join(FIXTURES, fixture, 'model.safetensors'))));
  const get = (name) => {
    const t = weights.get(name) ?? weights.get(`model.${name}`) ?? weights.get(`transformer.${name}`);
    if (!t) return null;
    const f = toF32(t);
    return { shape: t.shape, data: new Float32Array(f.bytes.buffer.slice(f.bytes.byteOffset, f.bytes.byteOffset + f.bytes.length)) };
  };
  const gpt2 = arch === 'gpt2';
  const layers = gpt2 ? config.n_layer : config.num_hidden_layers;
  const heads = gpt2 ? config.n_head : config.num_attention_heads;
  const kvHeads = config.num_key_value_heads ?? heads;
  const d = gpt2 ? config.n_embd : config.hidden_size;
  const headDim = config.head_dim ?? d / heads;
  const tensors = [];
  const add = (name, t) => {
    if (!t) return;
    if (!quantize?.tensors(name)) tensors.push({ name, ...t });
    else if (quantize.type === 'q8_0') tensors.push({ name, shape: t.shape, type: 8, bytes: quantizeQ8_0(t.data) });
    else tensors.push({ name, shape: t.shape, type: 2, bytes: quantizeQ4_0(t.data) });
  };
  const norm = (t) => (arch === 'gemma3' && t ? { shape: t.shape, data: t.data.map((w) => w + 1) } : t);
  if (gpt2) {
    add('token_embd.weight', get('wte.weight'));
    add('position_embd.weight', get('wpe.weight'));
    add('output_norm.weight', get('ln_f.weight'));
    add('output_norm.bias', get('ln_f.bias'));
  } else {
    add('token_embd.weight', get('embed_tokens.weight'));
    add('output_norm.weight', norm(get('norm.weight')));
    if (!config.tie_word_embeddings && arch !== 'gemma3') add('output.weight', get('lm_head.weight'));
  }
  for (let l = 0; l < layers; l += 1) {
    for (const [hub, gguf] of LAYER_NAMES[gpt2 ? 'gpt2' : arch === 'gemma3' ? 'gemma3' : 'llama']) {
      let t = get(`${gpt2 ? 'h' : 'layers'}.${l}.${hub}`);
      if (!t) continue;
      if (gpt2 && t.shape.length === 2) t = { shape: [t.shape[1], t.shape[0]], data: transpose(t.data, t.shape) };
      if (arch === 'llama' && /attn_[qk]\./.test(gguf)) t = { shape: t.shape, data: permuteRows(t.data, t.shape, gguf.startsWith('attn_q') ? heads : kvHeads) };
      if (/norm/.test(gguf)) t = norm(t);
      add(`blk.${l}.${gguf}`, t);
    }
  }
  const k = (key) => `${arch}.${key}`;
  const metadata = [
    ['general.architecture', T.STRING, arch],
    [k('block_count'), T.U32, layers],
    [k('context_length'), T.U32, gpt2 ? config.n_positions : config.max_position_embeddings],
    [k('embedding_length'), T.U32, d],
    [k('feed_forward_length'), T.U32, gpt2 ? (config.n_inner ?? 4 * d) : config.intermediate_size],
    [k('attention.head_count'), T.U32, heads],
  ];
  if (gpt2) {
    metadata.push([k('attention.layer_norm_epsilon'), T.F32, config.layer_norm_epsilon]);
  } else {
    metadata.push([k('attention.head_count_kv'), T.U32, kvHeads], [k('attention.layer_norm_rms_epsilon'), T.F32, config.rms_norm_eps],
      [k('rope.freq_base'), T.F32, config.rope_theta ?? config.rope_parameters?.rope_theta ?? 10000], [k('attention.key_length'), T.U32, headDim],
      [k('attention.value_length'), T.U32, headDim], [k('rope.dimension_count'), T.U32, headDim]);
  }
  if (arch === 'gemma3') metadata.push([k('attention.sliding_window'), T.U32, config.sliding_window], [k('rope.freq_base_swa'), T.F32, config.rope_local_base_freq]);
  return writeGguf(metadata, tensors);
}
