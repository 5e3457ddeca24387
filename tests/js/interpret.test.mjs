// Why a prediction: the logit lens, direct logit attribution, activation patching and token
// contributions, against independent references: float64 computations in this file from the
// checkpoints' own weights and transformers' (or the float64 reference's) hidden states and
// attentions in the fixtures, a float64 GPT-2 for patching, and invariants that hold exactly (the attribution sums to the logit
// difference; patching the one differing token restores the clean run; rows of contributions sum
// to 1). Bad input is an Error, and the model keeps working.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { loadPretrained } from '../../bindings/multihead.mjs';
import { FIXTURES, expectedOutputs, fixtureConfig, readSafetensors, toF32 } from './checkpoints.mjs';

const CAUSAL = ['gpt2', 'llama', 'qwen2', 'gpt_neox', 'gpt_neo', 'qwen3', 'gemma3'];
// Each family's end: its final norm (LayerNorm, RMSNorm, or Gemma's RMSNorm × (1 + w)) and output head.
const ENDS = {
  gpt2: { norm: 'ln_f', kind: 'ln', eps: 'layer_norm_epsilon', head: 'wte.weight' },
  gpt_neo: { norm: 'transformer.ln_f', kind: 'ln', eps: 'layer_norm_epsilon', head: 'transformer.wte.weight' },
  gpt_neox: { norm: 'gpt_neox.final_layer_norm', kind: 'ln', eps: 'layer_norm_eps', head: 'embed_out.weight' },
  llama: { norm: 'model.norm', kind: 'rms', eps: 'rms_norm_eps', head: 'lm_head.weight' },
  qwen2: { norm: 'model.norm', kind: 'rms', eps: 'rms_norm_eps', head: 'model.embed_tokens.weight' },
  qwen3: { norm: 'model.norm', kind: 'rms', eps: 'rms_norm_eps', head: 'model.embed_tokens.weight' },
  gemma3: { norm: 'model.norm', kind: 'rms1', eps: 'rms_norm_eps', head: 'model.embed_tokens.weight' },
};

const weightsOf = (fixture) => readSafetensors(new Uint8Array(readFileSync(join(FIXTURES, fixture, 'model.safetensors'))));
const f64 = (t) => Float64Array.from(new Float32Array(toF32(t).bytes.buffer));

// The family's end in float64: norm parameters and the head (vocab × d).
function endOf(fixture) {
  const e = ENDS[fixture], w = weightsOf(fixture), config = fixtureConfig(fixture);
  const gamma = f64(w.get(`${e.norm}.weight`)).map((g) => (e.kind === 'rms1' ? 1 + g : g));
  const beta = e.kind === 'ln' ? f64(w.get(`${e.norm}.bias`)) : null;
  const eps = config[e.eps] ?? (e.kind === 'ln' ? 1e-5 : 1e-6);
  return { gamma, beta, eps, head: f64(w.get(e.head)), d: gamma.length, vocab: config.vocab_size, centred: e.kind === 'ln' };
}

function normed(end, x) {
  const d = end.d;
  const mean = end.centred ? x.reduce((a, b) => a + b, 0) / d : 0;
  const variance = x.reduce((a, b) => a + (b - mean) ** 2, 0) / d;
  const s = Math.sqrt(variance + end.eps);
  return Array.from(x, (v, i) => ((v - mean) / s) * end.gamma[i] + (end.beta ? end.beta[i] : 0));
}

function softmax(logits) {
  const top = Math.max(...logits);
  const e = logits.map((v) => Math.exp(v - top));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / sum);
}

// Rotary positions in the rotate-half layout: dims i and i + dims/2 of v (i < dims/2) turned by
// position t / theta^(2i/dims); the rest of v as it is.
function rotateHalf(v, t, theta, dims) {
  const half = dims / 2, out = [...v];
  for (let i = 0; i < half; i += 1) {
    const angle = t / theta ** ((2 * i) / dims), c = Math.cos(angle), s = Math.sin(angle);
    out[i] = v[i] * c - v[i + half] * s;
    out[i + half] = v[i + half] * c + v[i] * s;
  }
  return out;
}

// A layer's heads' outputs (n × heads·dk) with the patched head's taken from patch.head.from,
// when the patch is for this layer.
function patchedHeads(concat, patch, layer, dk) {
  if (patch.head?.layer !== layer) return concat;
  const { head, from } = patch.head;
  return concat.map((row, i) => row.map((v, e) => (e >= head * dk && e < (head + 1) * dk ? from[i][e] : v)));
}

function headLogits(end, h) {
  const out = new Float64Array(end.vocab);
  for (let v = 0; v < end.vocab; v += 1) {
    let s = 0;
    for (let i = 0; i < end.d; i += 1) s += end.head[v * end.d + i] * h[i];
    out[v] = s;
  }
  return Array.from(out);
}

// GPT-2 in float64, from the fixture's weights (transformers' modeling_gpt2: pre-LayerNorm blocks,
// Conv1D weights [in][out], gelu_new, a tied head), with the activations patching replaces: each
// layer's heads' outputs before c_proj, its MLP's output, and the residual entering it.
function gpt2Float64() {
  const w = weightsOf('gpt2'), cfg = fixtureConfig('gpt2');
  const d = cfg.n_embd, H = cfg.n_head, L = cfg.n_layer, dk = d / H, eps = cfg.layer_norm_epsilon ?? 1e-5, V = cfg.vocab_size;
  const get = (name) => f64(w.get(name));
  const wte = get('wte.weight'), wpe = get('wpe.weight'), lnf = [get('ln_f.weight'), get('ln_f.bias')];
  const layers = Array.from({ length: L }, (_, l) => Object.fromEntries(['ln_1.weight', 'ln_1.bias', 'attn.c_attn.weight', 'attn.c_attn.bias',
    'attn.c_proj.weight', 'attn.c_proj.bias', 'ln_2.weight', 'ln_2.bias', 'mlp.c_fc.weight', 'mlp.c_fc.bias', 'mlp.c_proj.weight',
    'mlp.c_proj.bias'].map((k) => [k, get(`h.${l}.${k}`)])));
  const ln = (x, g, b) => {
    const m = x.reduce((a, v) => a + v, 0) / x.length, s = Math.sqrt(x.reduce((a, v) => a + (v - m) ** 2, 0) / x.length + eps);
    return x.map((v, i) => ((v - m) / s) * g[i] + b[i]);
  };
  const linear = (x, W, b, inn, out) => Array.from({ length: out }, (_, o) => x.reduce((a, xi, i) => a + xi * W[i * out + o], b[o]));
  const gelu = (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
  function forward(ids, patch = {}) {
    const n = ids.length;
    let x = ids.map((id, t) => Array.from({ length: d }, (_, i) => wte[id * d + i] + wpe[t * d + i]));
    const heads = [], mlps = [], residuals = [];
    layers.forEach((P, l) => {
      if (patch.residual?.layer === l) x[patch.residual.position] = [...patch.residual.from];
      residuals.push(x.map((row) => [...row]));
      const qkv = x.map((row) => linear(ln(row, P['ln_1.weight'], P['ln_1.bias']), P['attn.c_attn.weight'], P['attn.c_attn.bias'], d, 3 * d));
      let concat = Array.from({ length: n }, () => new Array(d).fill(0));
      for (let h = 0; h < H; h += 1)
        for (let i = 0; i < n; i += 1) {
          const scores = Array.from({ length: i + 1 }, (_, j) => {
            let s = 0;
            for (let e = 0; e < dk; e += 1) s += qkv[i][h * dk + e] * qkv[j][d + h * dk + e];
            return s / Math.sqrt(dk);
          });
          const probabilities = softmax(scores);
          for (let e = 0; e < dk; e += 1) concat[i][h * dk + e] = probabilities.reduce((a, p, j) => a + p * qkv[j][2 * d + h * dk + e], 0);
        }
      concat = patchedHeads(concat, patch, l, dk);
      heads.push(concat.map((row) => [...row]));
      x = x.map((row, i) => linear(concat[i], P['attn.c_proj.weight'], P['attn.c_proj.bias'], d, d).map((v, e) => row[e] + v));
      let mlp = x.map((row) => linear(linear(ln(row, P['ln_2.weight'], P['ln_2.bias']), P['mlp.c_fc.weight'], P['mlp.c_fc.bias'], d, 4 * d).map(gelu),
        P['mlp.c_proj.weight'], P['mlp.c_proj.bias'], 4 * d, d));
      if (patch.mlp?.layer === l) mlp = patch.mlp.from.map((row) => [...row]);
      mlps.push(mlp.map((row) => [...row]));
      x = x.map((row, i) => row.map((v, e) => v + mlp[i][e]));
    });
    const h = ln(x[n - 1], ...lnf);
    const logits = Array.from({ length: V }, (_, v) => h.reduce((a, hi, i) => a + hi * wte[v * d + i], 0));
    return { logits, heads, mlps, residuals };
  }
  return { forward, L, H };
}

// The Llama family in float64 (transformers' modeling_llama / qwen2 / qwen3: RMSNorm, rotate-half
// rotary positions, grouped key/value heads, SwiGLU; Qwen2's q/k/v biases, Qwen3's per-head q/k
// norms), from the fixture's weights, with the same patchable activations as gpt2Float64.
function llamaFloat64(fixture) {
  const w = weightsOf(fixture), cfg = fixtureConfig(fixture);
  const d = cfg.hidden_size, H = cfg.num_attention_heads, Hkv = cfg.num_key_value_heads, L = cfg.num_hidden_layers;
  const dk = cfg.head_dim ?? d / H, ff = cfg.intermediate_size, eps = cfg.rms_norm_eps, V = cfg.vocab_size;
  const theta = cfg.rope_theta ?? cfg.rope_parameters?.rope_theta ?? 10000;
  const get = (name) => (w.has(name) ? f64(w.get(name)) : null);
  const embed = get('model.embed_tokens.weight'), head = get('lm_head.weight') ?? embed, norm = get('model.norm.weight');
  const rms = (x, g) => { const s = Math.sqrt(x.reduce((a, v) => a + v * v, 0) / x.length + eps); return x.map((v, i) => (v / s) * g[i]); };
  // nn.Linear: W is [out][in].
  const linear = (x, W, b, out) => Array.from({ length: out }, (_, o) => x.reduce((a, xi, i) => a + xi * W[o * x.length + i], b ? b[o] : 0));
  const rope = (v, t) => rotateHalf(v, t, theta, dk);
  const layers = Array.from({ length: L }, (_, l) => {
    const p = `model.layers.${l}.`;
    return Object.fromEntries(['input_layernorm.weight', 'self_attn.q_proj.weight', 'self_attn.k_proj.weight', 'self_attn.v_proj.weight',
      'self_attn.o_proj.weight', 'self_attn.q_proj.bias', 'self_attn.k_proj.bias', 'self_attn.v_proj.bias', 'self_attn.q_norm.weight',
      'self_attn.k_norm.weight', 'post_attention_layernorm.weight', 'mlp.gate_proj.weight', 'mlp.up_proj.weight', 'mlp.down_proj.weight']
      .map((k) => [k, get(p + k)]));
  });
  function forward(ids, patch = {}) {
    const n = ids.length;
    let x = ids.map((id) => Array.from(embed.subarray(id * d, (id + 1) * d)));
    const heads = [], mlps = [], residuals = [];
    layers.forEach((P, l) => {
      if (patch.residual?.layer === l) x[patch.residual.position] = [...patch.residual.from];
      residuals.push(x.map((row) => [...row]));
      const h = x.map((row) => rms(row, P['input_layernorm.weight']));
      const split = (row, W, b, count, normW, t) => Array.from({ length: count }, (_, g) => {
        let v = linear(row, W, b, count * dk).slice(g * dk, (g + 1) * dk);
        if (normW) v = rms(v, normW);
        return t === null ? v : rope(v, t);
      });
      const q = h.map((row, t) => split(row, P['self_attn.q_proj.weight'], P['self_attn.q_proj.bias'], H, P['self_attn.q_norm.weight'], t));
      const k = h.map((row, t) => split(row, P['self_attn.k_proj.weight'], P['self_attn.k_proj.bias'], Hkv, P['self_attn.k_norm.weight'], t));
      const v = h.map((row) => split(row, P['self_attn.v_proj.weight'], P['self_attn.v_proj.bias'], Hkv, null, null));
      let concat = Array.from({ length: n }, () => new Array(H * dk).fill(0));
      for (let hh = 0; hh < H; hh += 1) {
        const g = Math.floor(hh / (H / Hkv));
        for (let i = 0; i < n; i += 1) {
          const scores = Array.from({ length: i + 1 }, (_, j) => q[i][hh].reduce((a, qe, e) => a + qe * k[j][g][e], 0) / Math.sqrt(dk));
          const probabilities = softmax(scores);
          for (let e = 0; e < dk; e += 1) concat[i][hh * dk + e] = probabilities.reduce((a, p, j) => a + p * v[j][g][e], 0);
        }
      }
      concat = patchedHeads(concat, patch, l, dk);
      heads.push(concat.map((row) => [...row]));
      x = x.map((row, i) => linear(concat[i], P['self_attn.o_proj.weight'], null, d).map((val, e) => row[e] + val));
      let mlp = x.map((row) => {
        const hn = rms(row, P['post_attention_layernorm.weight']);
        const gate = linear(hn, P['mlp.gate_proj.weight'], null, ff), up = linear(hn, P['mlp.up_proj.weight'], null, ff);
        return linear(gate.map((gv, i) => (gv / (1 + Math.exp(-gv))) * up[i]), P['mlp.down_proj.weight'], null, d);
      });
      if (patch.mlp?.layer === l) mlp = patch.mlp.from.map((row) => [...row]);
      mlps.push(mlp.map((row) => [...row]));
      x = x.map((row, i) => row.map((val, e) => val + mlp[i][e]));
    });
    const hLast = rms(x[n - 1], norm);
    const logits = Array.from({ length: V }, (_, t) => hLast.reduce((a, hi, i) => a + hi * head[t * d + i], 0));
    return { logits, heads, mlps, residuals };
  }
  return { forward, L, H };
}

// GPT-Neo and GPT-NeoX in float64 (transformers' modeling_gpt_neo / modeling_gpt_neox): nn.Linear
// weights; GPT-Neo's unscaled scores and local layers (a causal window of window_size), GELU-new,
// learned positions, a tied head; GPT-NeoX's query_key_value fused per head, rotary positions on
// the first rotary_pct of each head (rotate half), exact GELU, the parallel residual
// x + attn(ln1 x) + mlp(ln2 x), an untied embed_out. The same patchable activations as above.
function neoFloat64(fixture) {
  const w = weightsOf(fixture), cfg = fixtureConfig(fixture), neox = fixture === 'gpt_neox';
  const d = cfg.hidden_size, H = neox ? cfg.num_attention_heads : cfg.num_heads, L = neox ? cfg.num_hidden_layers : cfg.num_layers;
  const dk = d / H, ff = cfg.intermediate_size ?? 4 * d, V = cfg.vocab_size, eps = neox ? cfg.layer_norm_eps : cfg.layer_norm_epsilon;
  const get = (name) => f64(w.get(name));
  const at = neox ? (k) => `gpt_neox.${k}` : (k) => `transformer.${k}`;
  const embed = get(at(neox ? 'embed_in.weight' : 'wte.weight')), positions = neox ? null : get(at('wpe.weight'));
  const head = neox ? get('embed_out.weight') : embed;
  const final = neox ? [get(at('final_layer_norm.weight')), get(at('final_layer_norm.bias'))] : [get(at('ln_f.weight')), get(at('ln_f.bias'))];
  const local = neox ? [] : cfg.attention_types.flatMap(([kinds, times]) => Array.from({ length: times }, () => kinds).flat()).map((k) => k === 'local');
  const rotary = neox ? Math.floor(dk * cfg.rotary_pct) : 0, base = cfg.rotary_emb_base ?? 10000;
  const ln = (x, g, b) => {
    const m = x.reduce((a, v) => a + v, 0) / x.length, s = Math.sqrt(x.reduce((a, v) => a + (v - m) ** 2, 0) / x.length + eps);
    return x.map((v, i) => ((v - m) / s) * g[i] + b[i]);
  };
  const linear = (x, W, b, out) => Array.from({ length: out }, (_, o) => x.reduce((a, xi, i) => a + xi * W[o * x.length + i], b ? b[o] : 0));
  // erf to ~1e-7 (Abramowitz & Stegun 7.1.26), enough against the 2e-3 the test asks.
  const erf = (x) => {
    const t = 1 / (1 + 0.3275911 * Math.abs(x));
    const y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
    return x >= 0 ? y : -y;
  };
  const gelu = neox ? (x) => 0.5 * x * (1 + erf(x / Math.SQRT2)) : (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
  const rope = (v, t) => rotateHalf(v, t, base, rotary);
  const layers = Array.from({ length: L }, (_, l) => {
    const p = neox ? `gpt_neox.layers.${l}.` : `transformer.h.${l}.`;
    const names = neox
      ? ['input_layernorm.weight', 'input_layernorm.bias', 'post_attention_layernorm.weight', 'post_attention_layernorm.bias', 'attention.query_key_value.weight',
        'attention.query_key_value.bias', 'attention.dense.weight', 'attention.dense.bias', 'mlp.dense_h_to_4h.weight', 'mlp.dense_h_to_4h.bias',
        'mlp.dense_4h_to_h.weight', 'mlp.dense_4h_to_h.bias']
      : ['ln_1.weight', 'ln_1.bias', 'ln_2.weight', 'ln_2.bias', 'attn.attention.q_proj.weight', 'attn.attention.k_proj.weight',
        'attn.attention.v_proj.weight', 'attn.attention.out_proj.weight', 'attn.attention.out_proj.bias', 'mlp.c_fc.weight', 'mlp.c_fc.bias',
        'mlp.c_proj.weight', 'mlp.c_proj.bias'];
    return Object.fromEntries(names.map((k) => [k, get(p + k)]));
  });
  function forward(ids, patch = {}) {
    const n = ids.length;
    let x = ids.map((id, t) => Array.from({ length: d }, (_, i) => embed[id * d + i] + (positions ? positions[t * d + i] : 0)));
    const heads = [], mlps = [], residuals = [];
    layers.forEach((P, l) => {
      if (patch.residual?.layer === l) x[patch.residual.position] = [...patch.residual.from];
      residuals.push(x.map((row) => [...row]));
      const h1 = x.map((row) => (neox ? ln(row, P['input_layernorm.weight'], P['input_layernorm.bias']) : ln(row, P['ln_1.weight'], P['ln_1.bias'])));
      // q, k, v: n × heads × dk.
      let q, k, v;
      if (neox) {
        const qkv = h1.map((row) => linear(row, P['attention.query_key_value.weight'], P['attention.query_key_value.bias'], 3 * d));
        const part = (row, hh, which) => row.slice(hh * 3 * dk + which * dk, hh * 3 * dk + (which + 1) * dk);
        q = qkv.map((row, t) => Array.from({ length: H }, (_, hh) => rope(part(row, hh, 0), t)));
        k = qkv.map((row, t) => Array.from({ length: H }, (_, hh) => rope(part(row, hh, 1), t)));
        v = qkv.map((row) => Array.from({ length: H }, (_, hh) => part(row, hh, 2)));
      } else {
        const split = (row) => Array.from({ length: H }, (_, hh) => row.slice(hh * dk, (hh + 1) * dk));
        q = h1.map((row) => split(linear(row, P['attn.attention.q_proj.weight'], null, d)));
        k = h1.map((row) => split(linear(row, P['attn.attention.k_proj.weight'], null, d)));
        v = h1.map((row) => split(linear(row, P['attn.attention.v_proj.weight'], null, d)));
      }
      const scale = neox ? 1 / Math.sqrt(dk) : 1, window = local[l] ? cfg.window_size : Infinity;
      let concat = Array.from({ length: n }, () => new Array(d).fill(0));
      for (let hh = 0; hh < H; hh += 1)
        for (let i = 0; i < n; i += 1) {
          const keys = Array.from({ length: i + 1 }, (_, j) => j).filter((j) => i - j < window);
          const probabilities = softmax(keys.map((j) => q[i][hh].reduce((a, qe, e) => a + qe * k[j][hh][e], 0) * scale));
          for (let e = 0; e < dk; e += 1) concat[i][hh * dk + e] = probabilities.reduce((a, p, idx) => a + p * v[keys[idx]][hh][e], 0);
        }
      concat = patchedHeads(concat, patch, l, dk);
      heads.push(concat.map((row) => [...row]));
      const attention = concat.map((row) => (neox ? linear(row, P['attention.dense.weight'], P['attention.dense.bias'], d)
        : linear(row, P['attn.attention.out_proj.weight'], P['attn.attention.out_proj.bias'], d)));
      // GPT-NeoX's MLP reads x as it entered the layer; GPT-Neo's, x after the attention.
      const mlpInput = neox ? x.map((row) => ln(row, P['post_attention_layernorm.weight'], P['post_attention_layernorm.bias']))
        : x.map((row, i) => ln(row.map((val, e) => val + attention[i][e]), P['ln_2.weight'], P['ln_2.bias']));
      let mlp = mlpInput.map((row) => (neox
        ? linear(linear(row, P['mlp.dense_h_to_4h.weight'], P['mlp.dense_h_to_4h.bias'], ff).map(gelu), P['mlp.dense_4h_to_h.weight'], P['mlp.dense_4h_to_h.bias'], d)
        : linear(linear(row, P['mlp.c_fc.weight'], P['mlp.c_fc.bias'], ff).map(gelu), P['mlp.c_proj.weight'], P['mlp.c_proj.bias'], d)));
      if (patch.mlp?.layer === l) mlp = patch.mlp.from.map((row) => [...row]);
      mlps.push(mlp.map((row) => [...row]));
      x = x.map((row, i) => row.map((val, e) => val + attention[i][e] + mlp[i][e]));
    });
    const hLast = ln(x[n - 1], ...final);
    const logits = Array.from({ length: V }, (_, t) => hLast.reduce((a, hi, i) => a + hi * head[t * d + i], 0));
    return { logits, heads, mlps, residuals };
  }
  return { forward, L, H };
}

// Gemma 3 in float64 (transformers' modeling_gemma3): the embedding × √d, RMSNorm × (1 + w) before
// and after the attention and the MLP, per-head q/k norms, scores × query_pre_attn_scalar^-½,
// sliding layers (layer_types) with their own rotary base, GeGLU with tanh GELU, a tied head.
function gemmaFloat64() {
  const w = weightsOf('gemma3'), cfg = fixtureConfig('gemma3');
  const d = cfg.hidden_size, H = cfg.num_attention_heads, Hkv = cfg.num_key_value_heads, L = cfg.num_hidden_layers;
  const dk = cfg.head_dim, ff = cfg.intermediate_size, eps = cfg.rms_norm_eps, V = cfg.vocab_size;
  const get = (name) => f64(w.get(name));
  const embed = get('model.embed_tokens.weight'), norm = get('model.norm.weight');
  const rms = (x, g) => { const s = Math.sqrt(x.reduce((a, v) => a + v * v, 0) / x.length + eps); return x.map((v, i) => (v / s) * (1 + g[i])); };
  const linear = (x, W, out) => Array.from({ length: out }, (_, o) => x.reduce((a, xi, i) => a + xi * W[o * x.length + i], 0));
  const gelu = (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
  const rope = (v, t, theta) => rotateHalf(v, t, theta, dk);
  const layers = Array.from({ length: L }, (_, l) => Object.fromEntries(['input_layernorm', 'post_attention_layernorm', 'pre_feedforward_layernorm',
    'post_feedforward_layernorm', 'self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj', 'self_attn.o_proj', 'self_attn.q_norm',
    'self_attn.k_norm', 'mlp.gate_proj', 'mlp.up_proj', 'mlp.down_proj'].map((k) => [k, get(`model.layers.${l}.${k}.weight`)])));
  function forward(ids, patch = {}) {
    const n = ids.length;
    let x = ids.map((id) => Array.from(embed.subarray(id * d, (id + 1) * d), (v) => v * Math.sqrt(d)));
    const heads = [], mlps = [], residuals = [];
    layers.forEach((P, l) => {
      const sliding = cfg.layer_types[l] === 'sliding_attention', theta = sliding ? cfg.rope_local_base_freq : cfg.rope_theta;
      if (patch.residual?.layer === l) x[patch.residual.position] = [...patch.residual.from];
      residuals.push(x.map((row) => [...row]));
      const h = x.map((row) => rms(row, P.input_layernorm));
      const split = (row, W, count, normW, t) => Array.from({ length: count }, (_, g) => {
        const v = linear(row, W, count * dk).slice(g * dk, (g + 1) * dk);
        return normW ? rope(rms(v, normW), t, theta) : v;
      });
      const q = h.map((row, t) => split(row, P['self_attn.q_proj'], H, P['self_attn.q_norm'], t));
      const k = h.map((row, t) => split(row, P['self_attn.k_proj'], Hkv, P['self_attn.k_norm'], t));
      const v = h.map((row) => split(row, P['self_attn.v_proj'], Hkv, null, 0));
      let concat = Array.from({ length: n }, () => new Array(H * dk).fill(0));
      for (let hh = 0; hh < H; hh += 1) {
        const g = Math.floor(hh / (H / Hkv));
        for (let i = 0; i < n; i += 1) {
          const keys = Array.from({ length: i + 1 }, (_, j) => j).filter((j) => !sliding || i - j < cfg.sliding_window);
          const probabilities = softmax(keys.map((j) => q[i][hh].reduce((a, qe, e) => a + qe * k[j][g][e], 0) / Math.sqrt(cfg.query_pre_attn_scalar)));
          for (let e = 0; e < dk; e += 1) concat[i][hh * dk + e] = probabilities.reduce((a, p, idx) => a + p * v[keys[idx]][g][e], 0);
        }
      }
      concat = patchedHeads(concat, patch, l, dk);
      heads.push(concat.map((row) => [...row]));
      x = x.map((row, i) => rms(linear(concat[i], P['self_attn.o_proj'], d), P.post_attention_layernorm).map((val, e) => row[e] + val));
      let mlp = x.map((row) => {
        const hn = rms(row, P.pre_feedforward_layernorm);
        const gate = linear(hn, P['mlp.gate_proj'], ff), up = linear(hn, P['mlp.up_proj'], ff);
        return rms(linear(gate.map((gv, i) => gelu(gv) * up[i]), P['mlp.down_proj'], d), P.post_feedforward_layernorm);
      });
      if (patch.mlp?.layer === l) mlp = patch.mlp.from.map((row) => [...row]);
      mlps.push(mlp.map((row) => [...row]));
      x = x.map((row, i) => row.map((val, e) => val + mlp[i][e]));
    });
    const hLast = rms(x[n - 1], norm);
    const logits = Array.from({ length: V }, (_, t) => hLast.reduce((a, hi, i) => a + hi * embed[t * d + i], 0));
    return { logits, heads, mlps, residuals };
  }
  return { forward, L, H };
}

// Every head, MLP and residual position patched by the engine against a float64 model's patching.
async function patchingAgainst(fixture, ref, cleanText, corruptText) {
  const model = await loadPretrained(join(FIXTURES, fixture));
  const clean = Array.from(model.tokenize(cleanText).ids), corrupt = Array.from(model.tokenize(corruptText).ids);
  expect(corrupt.length).toBe(clean.length);
  const n = clean.length, L = ref.L, H = ref.H;
  const cleanRun = ref.forward(clean), corruptRun = ref.forward(corrupt);
  const order = cleanRun.logits.map((v, i) => [v, i]).sort((a, b) => b[0] - a[0]);
  const [target, contrast] = [order[0][1], order[1][1]];
  const diff = (logits) => logits[target] - logits[contrast];
  const [c, k] = [diff(cleanRun.logits), diff(corruptRun.logits)];
  const recovered = (patched) => (diff(patched.logits) - k) / (c - k);
  const check = (got, want, what) => want.forEach((v, i) => expect(Math.abs(got.recovered[i] - v), `${fixture} ${what} ${i}`).toBeLessThan(2e-3 * Math.max(1, Math.abs(v))));
  const heads = await model.patch(clean, corrupt, { target, contrast, what: 'heads' });
  expect(heads.clean).toBeCloseTo(c, 2);
  expect(heads.corrupt).toBeCloseTo(k, 2);
  check(heads, Array.from({ length: L * H }, (_, i) => recovered(ref.forward(corrupt, { head: { layer: Math.floor(i / H), head: i % H, from: cleanRun.heads[Math.floor(i / H)] } }))), 'head');
  const mlps = await model.patch(clean, corrupt, { target, contrast, what: 'mlps' });
  check(mlps, Array.from({ length: L }, (_, l) => recovered(ref.forward(corrupt, { mlp: { layer: l, from: cleanRun.mlps[l] } }))), 'mlp');
  const residual = await model.patch(clean, corrupt, { target, contrast, what: 'residual' });
  check(residual, Array.from({ length: L * n }, (_, i) => recovered(ref.forward(corrupt, { residual: { layer: Math.floor(i / n), position: i % n, from: cleanRun.residuals[Math.floor(i / n)][i % n] } }))), 'residual');
  model.dispose();
}

describe('the logit lens against the fixtures\' own hidden states, through a float64 final norm and head', () => {
  for (const fixture of CAUSAL) {
    it(`${fixture}: every stream at every position; the last stream is the model's output`, async () => {
      const model = await loadPretrained(join(FIXTURES, fixture));
      const end = endOf(fixture);
      const c = expectedOutputs(fixture)[1];
      const [streams, n, d] = c.hiddenShape;
      // Targets: the reference's top token after the embeddings at the last position.
      const first = softmax(headLogits(end, normed(end, c.hidden.subarray((n - 1) * d, n * d))));
      const target = first.indexOf(Math.max(...first));
      const lens = model.logitLens(c.ids, { topK: 3, targets: [target] });
      expect(lens.shape).toEqual([streams, n, 3]);
      for (let s = 0; s < streams; s += 1)
        for (let p = 0; p < n; p += 1) {
          // Streams before the last: the reference's residual through the family's end; the last:
          // the model's logits (the fixture's hidden state there is already normed).
          const probabilities = softmax(s < streams - 1
            ? headLogits(end, normed(end, c.hidden.subarray((s * n + p) * d, (s * n + p + 1) * d)))
            : Array.from(c.logits.subarray(p * end.vocab, (p + 1) * end.vocab)));
          const at = (s * n + p) * 3, top = Math.max(...probabilities);
          expect(lens.probabilities[at], `${fixture} stream ${s} position ${p}`).toBeCloseTo(top, 2);
          expect(probabilities[lens.ids[at]], `${fixture} stream ${s} position ${p}: the top token`).toBeGreaterThan(top - 2e-3);
          expect(lens.targets.probabilities[s * n + p]).toBeCloseTo(probabilities[target], 2);
          // Its rank: between the tokens clearly above it and those not clearly below it.
          const pt = probabilities[target], rank = lens.targets.ranks[s * n + p];
          expect(rank).toBeGreaterThanOrEqual(probabilities.filter((q) => q > pt + 2e-3).length);
          expect(rank).toBeLessThanOrEqual(probabilities.filter((q) => q > pt - 2e-3).length);
        }
      model.dispose();
    });
  }

  it('an encoder reads each layer through its MLM head; positions and targets are checked', async () => {
    const model = await loadPretrained(join(FIXTURES, 'bert'));
    const c = expectedOutputs('bert')[0], n = c.ids.length, V = model.config.vocabSize;
    const lens = model.logitLens(c.ids, { positions: [1, n - 2], topK: 2, tokenTypeIds: c.types });
    expect(lens.shape).toEqual([model.config.layers + 1, 2, 2]);
    // The last stream is the MLM head's own output (the fixture's logits).
    const last = softmax(Array.from(c.logits.subarray(V, 2 * V)));
    expect(lens.probabilities[(model.config.layers * 2) * 2]).toBeCloseTo(Math.max(...last), 3);
    expect(() => model.logitLens(c.ids, { positions: [n] })).toThrow(/positions must be a non-empty list of token positions from 0 to/);
    expect(() => model.logitLens(c.ids, { targets: [V] })).toThrow(/each target must be a token id from 0 to/);
    expect(() => model.logitLens(c.ids, { topK: 0 })).toThrow(/topK must be a whole number/);
    expect(model.run(c.ids, { tokenTypeIds: c.types }).logits.length).toBe(n * V);
    model.dispose();
  });
});

describe('direct logit attribution', () => {
  for (const fixture of CAUSAL) {
    it(`${fixture}: the parts sum to the logit difference; each layer's share is what the fixture's residual streams say`, async () => {
      const model = await loadPretrained(join(FIXTURES, fixture));
      const end = endOf(fixture);
      const c = expectedOutputs(fixture)[2];
      const [, n, d] = c.hiddenShape, p = n - 1, L = model.config.layers;
      const row = Array.from(c.logits.subarray(p * end.vocab, (p + 1) * end.vocab));
      const order = row.map((v, i) => [v, i]).sort((a, b) => b[0] - a[0]);
      const [target, contrast] = [order[0][1], order[1][1]];
      const a = model.attribute(c.ids, { target, contrast });
      expect(a).toMatchObject({ position: p, target, contrast, headsShape: [L, model.config.heads] });
      const sum = a.embeddings + a.biases + a.heads.reduce((x, y) => x + y, 0) + a.mlps.reduce((x, y) => x + y, 0);
      expect(sum).toBeCloseTo(a.total, 6);
      expect(Math.abs(a.total + a.normBias - a.logitDifference)).toBeLessThan(1e-4 * Math.max(1, Math.abs(a.logitDifference)));
      expect(a.logitDifference).toBeCloseTo(order[0][0] - order[1][0], 2);  // transformers' (or the reference's) logits
      // Layer by layer against the fixture's residual streams: a part's attribution is its write
      // · v / σ with v = γ ⊙ (W_U[target] − W_U[contrast]) (centred for LayerNorm); σ cancels
      // between two parts, so layer l's share ÷ the embeddings' must be the streams' ratio.
      const v = Array.from({ length: d }, (_, i) => end.gamma[i] * (end.head[target * d + i] - end.head[contrast * d + i]));
      if (end.centred) { const m = v.reduce((x, y) => x + y, 0) / d; for (let i = 0; i < d; i += 1) v[i] -= m; }
      const stream = (s) => c.hidden.subarray((s * n + p) * d, (s * n + p + 1) * d);
      const dot = (x) => x.reduce((acc, xi, i) => acc + xi * v[i], 0);
      const embeddings = dot(stream(0));
      for (let l = 0; l + 1 < L; l += 1) {  // the last stream in the fixture is after the final norm
        const layer = a.heads.slice(l * model.config.heads, (l + 1) * model.config.heads).reduce((x, y) => x + y, 0) + a.mlps[l] + a.biasesByLayer[l];
        const written = dot(stream(l + 1)) - dot(stream(l));
        expect(Math.abs(layer * embeddings - a.embeddings * written), `${fixture} layer ${l}`)
          .toBeLessThan(2e-3 * Math.max(Math.abs(layer * embeddings), Math.abs(a.embeddings * written), 1e-3));
      }
      // A switched-off head writes nothing.
      const off = model.attribute(c.ids, { target, contrast, disabledHeads: [[0, 1]] });
      expect(off.heads[1]).toBe(0);
      model.dispose();
    });
  }

  it('the default target is the top prediction; encoders and bad input are clear errors', async () => {
    const model = await loadPretrained(join(FIXTURES, 'gpt2'));
    const ids = model.tokenize('The cat sat on the mat.').ids;
    const logits = model.run(ids, { logits: [ids.length - 1] }).logits;
    expect(model.attribute(ids).target).toBe(logits.indexOf(Math.max(...logits)));
    // The lens can bring the attribution of a position from its own forward pass: the same numbers.
    const both = model.logitLens(ids, { positions: [ids.length - 1], attribute: { target: 7, contrast: 9 } });
    const alone = model.attribute(ids, { target: 7, contrast: 9 });
    expect(both.attribution.total).toBeCloseTo(alone.total, 5);
    alone.heads.forEach((v, i) => expect(both.attribution.heads[i]).toBeCloseTo(v, 5));
    expect(both.attribution.logitDifference).toBeCloseTo(alone.logitDifference, 4);
    expect(() => model.logitLens(ids, { attribute: { target: 1e6 } })).toThrow(/attribute.target must be a token id/);
    expect(() => model.attribute(ids, { position: ids.length })).toThrow(/position must be a token position/);
    expect(() => model.attribute(ids, { target: -1 })).toThrow(/target must be a token id/);
    expect(() => model.attribute(ids, { target: 5, contrast: 1e6 })).toThrow(/contrast must be a token id/);
    expect(model.run(ids).n).toBe(ids.length);
    model.dispose();
    const bert = await loadPretrained(join(FIXTURES, 'bert'));
    expect(() => bert.attribute([2, 5, 3], { target: 5 })).toThrow(/needs a decoder: a bert encoder normalises after every layer/);
    bert.dispose();
  });
});

describe('activation patching', () => {
  for (const fixture of CAUSAL) {
    it(`${fixture}: restoring the one different token restores the clean run; nothing else at that layer moves it`, async () => {
      const model = await loadPretrained(join(FIXTURES, fixture));
      const clean = Array.from(model.tokenize('When Mary and John went to the store, John gave a drink to').ids);
      const n = clean.length, L = model.config.layers, at = 3;
      const corrupt = [...clean];
      corrupt[at] = (corrupt[at] + 7) % model.config.vocabSize;
      const last = model.run(clean, { attentions: false, logits: [n - 1] }).logits;
      const target = last.indexOf(Math.max(...last));
      const residual = await model.patch(clean, corrupt, { target, what: 'residual' });
      expect(residual.shape).toEqual([L, n]);
      for (let p = 0; p < n; p += 1) {
        // The residual entering layer 0 is the embeddings: only position `at` differs.
        if (p === at) expect(residual.recovered[p]).toBeCloseTo(1, 4);
        else expect(residual.recovered[p]).toBeCloseTo(0, 12);
      }
      // Positions before `at` are the same in both runs at every layer: patching them changes nothing.
      for (let l = 0; l < L; l += 1) for (let p = 0; p < at; p += 1) expect(residual.recovered[l * n + p]).toBeCloseTo(0, 12);
      // A change at the last position only: the residual entering any layer there carries all of it.
      const lastOnly = [...clean];
      lastOnly[n - 1] = (lastOnly[n - 1] + 11) % model.config.vocabSize;
      const tail = await model.patch(clean, lastOnly, { target, what: 'residual' });
      for (let l = 0; l < L; l += 1) expect(tail.recovered[l * n + n - 1], `layer ${l}`).toBeCloseTo(1, 4);
      // Heads and MLPs: the shapes, and values that are finite.
      const seen = [];
      const heads = await model.patch(clean, corrupt, { target, what: 'heads', onProgress: (s) => seen.push(s.done) });
      expect(heads.shape).toEqual([L, model.config.heads]);
      expect(heads.recovered.every(Number.isFinite)).toBe(true);
      expect(seen.at(-1)).toBe(L * model.config.heads);
      const mlps = await model.patch(clean, corrupt, { target, what: 'mlps' });
      expect(mlps.shape).toEqual([L]);
      expect(mlps.recovered.every(Number.isFinite)).toBe(true);
      model.dispose();
    });
  }

  const IOI = ['When Mr. Darcy and Elizabeth went to the house, Darcy gave a letter to',
    'When Mr. Darcy and Elizabeth went to the house, Elizabeth gave a letter to'];
  it('GPT-2: every head, MLP and residual position patched, against a float64 GPT-2 written here', async () => {
    await patchingAgainst('gpt2', gpt2Float64(), ...IOI);
  });
  it('gpt_neo and gpt_neox: every head, MLP and residual position patched, against float64 GPT-Neo and GPT-NeoX written here', async () => {
    // Past the local layer's 8-token window, so that its band matters.
    for (const fixture of ['gpt_neo', 'gpt_neox']) await patchingAgainst(fixture, neoFloat64(fixture), ...IOI);
  });
  it('gemma3: every head, MLP and residual position patched, against a float64 Gemma 3 written here', async () => {
    await patchingAgainst('gemma3', gemmaFloat64(), 'The cat sat on the mat and the man sat on the', 'The cat sat on the mat and the cat sat on the');
  });
  // Pairs each fixture's tokenizer makes the same length: one word changed.
  for (const [fixture, word] of [['llama', 'man'], ['qwen2', 'dog'], ['qwen3', 'dog']]) {
    it(`${fixture}: every head, MLP and residual position patched, against a float64 Llama-family model written here`, async () => {
      await patchingAgainst(fixture, llamaFloat64(fixture), `The cat sat on the mat and the ${word} sat on the`, 'The cat sat on the mat and the cat sat on the');
    });
  }

  it('bad input: lengths, targets, the same prompts, an encoder, a cancel mid-way; the model keeps working', async () => {
    const model = await loadPretrained(join(FIXTURES, 'gpt2'));
    const ids = Array.from(model.tokenize('The cat sat on the mat.').ids);
    await expect(model.patch(ids, ids.slice(1), { target: 5 })).rejects.toThrow(/same number of tokens .*: \d+ and \d+/);
    await expect(model.patch(ids, ids, { target: 1e6 })).rejects.toThrow(/target must be a token id/);
    await expect(model.patch(ids, ids, { target: 5 })).rejects.toThrow(/nothing to recover/);
    await expect(model.patch(ids, ids, { target: 5, what: 'layers' })).rejects.toThrow(/what must be 'heads', 'residual' or 'mlps'/);
    const other = [...ids];
    other[2] = (other[2] + 3) % 1000;
    const controller = new AbortController();
    const cancelled = model.patch(ids, other, { target: 5, what: 'residual', signal: controller.signal, onProgress: () => controller.abort() });
    await expect(cancelled).rejects.toThrow(/abort|cancel/i);
    const again = await model.patch(ids, other, { target: 5, what: 'mlps' });
    expect(again.recovered.length).toBe(model.config.layers);
    expect(model.run(ids).n).toBe(ids.length);
    model.dispose();
    const bert = await loadPretrained(join(FIXTURES, 'bert'));
    await expect(bert.patch([2, 5, 3], [2, 6, 3], { target: 5 })).rejects.toThrow(/needs a decoder/);
    bert.dispose();
  });
});

describe('token contributions (Kobayashi et al. 2021)', () => {
  it('GPT-2: every layer against a float64 computation from the fixture\'s attentions, residual streams and weights', async () => {
    const model = await loadPretrained(join(FIXTURES, 'gpt2'));
    const c = expectedOutputs('gpt2')[1];
    const [, n, d] = c.hiddenShape, H = model.config.heads, dk = d / H, L = model.config.layers;
    const w = weightsOf('gpt2'), eps = fixtureConfig('gpt2').layer_norm_epsilon ?? 1e-5;
    const got = model.contributions(c.ids);
    expect(got.shape).toEqual([L, n, n]);
    for (let l = 0; l < L; l += 1) {
      const g = f64(w.get(`h.${l}.ln_1.weight`)), b = f64(w.get(`h.${l}.ln_1.bias`));
      const qkv = f64(w.get(`h.${l}.attn.c_attn.weight`)), qkvBias = f64(w.get(`h.${l}.attn.c_attn.bias`));
      const proj = f64(w.get(`h.${l}.attn.c_proj.weight`));  // [in][out]
      const x = (t) => Array.from(c.hidden.subarray((l * n + t) * d, (l * n + t + 1) * d));
      // v_t (d) = LN1(x_t) · W_V + b_V (c_attn's last third), then each head's slice through W_O.
      const moved = Array.from({ length: n }, (_, t) => {
        const m = x(t).reduce((s, v) => s + v, 0) / d, s = Math.sqrt(x(t).reduce((a, v) => a + (v - m) ** 2, 0) / d + eps);
        const ln = x(t).map((v, i) => ((v - m) / s) * g[i] + b[i]);
        const value = Array.from({ length: d }, (_, j) => ln.reduce((acc, li, i) => acc + li * qkv[i * 3 * d + 2 * d + j], qkvBias[2 * d + j]));
        return Array.from({ length: H }, (_, h) => Array.from({ length: d }, (_, o) => {
          let acc = 0;
          for (let k = 0; k < dk; k += 1) acc += value[h * dk + k] * proj[(h * dk + k) * d + o];
          return acc;
        }));
      });
      for (let i = 0; i < n; i += 1) {
        const norms = Array.from({ length: n }, (_, j) => {
          const part = new Float64Array(d);
          for (let h = 0; h < H; h += 1) {
            const a = c.attentions[((l * H + h) * n + i) * n + j];
            for (let o = 0; o < d; o += 1) part[o] += a * moved[j][h][o];
          }
          if (i === j) x(i).forEach((v, o) => { part[o] += v; });
          return Math.sqrt(part.reduce((s, v) => s + v * v, 0));
        });
        const total = norms.reduce((s, v) => s + v, 0);
        const row = got.contributions.subarray((l * n + i) * n, (l * n + i + 1) * n);
        for (let j = 0; j < n; j += 1) expect(Math.abs(row[j] - norms[j] / total), `layer ${l} row ${i} column ${j}`).toBeLessThan(1e-4);
      }
    }
    model.dispose();
  });

  for (const fixture of ['llama', 'gpt_neox', 'gemma3', 'roberta']) {
    it(`${fixture}: rows sum to 1, and a causal model's rows have nothing past their own token`, async () => {
      const model = await loadPretrained(join(FIXTURES, fixture));
      const c = expectedOutputs(fixture)[0], n = c.ids.length;
      const { contributions } = model.contributions(c.ids, { tokenTypeIds: c.types });
      for (let l = 0; l < model.config.layers; l += 1)
        for (let i = 0; i < n; i += 1) {
          const row = contributions.subarray((l * n + i) * n, (l * n + i + 1) * n);
          expect(row.reduce((s, v) => s + v, 0)).toBeCloseTo(1, 5);
          if (model.config.causal) for (let j = i + 1; j < n; j += 1) expect(row[j]).toBe(0);
        }
      model.dispose();
    });
  }
});
