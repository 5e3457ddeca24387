// Writes a checkpoint with random weights in the hub's layout, for measuring the page and the
// benchmarks with a real model's size: GPT-2 small's shape by default (12 layers × 12 heads,
// d_model 768, vocabulary 50257, 1024 positions; F32 like the hub's gpt2, plus a BF16 copy with
// --bf16); --size medium or large for GPT-2 medium's (24 × 16, d_model 1024) or large's (36 × 20,
// 1280) shape, or qwen2-0.5b for Qwen2.5-0.5B's (24 layers, 14 query and 2 key/value heads,
// d_model 896, MLP 4864, vocabulary 151936; BF16 like the hub's), for finding the largest
// checkpoint the page loads (bench/largest-checkpoint.mjs), or llama-3.2-1b for Llama 3.2 1B's
// (16 layers, 32 query and 8 key/value heads, d_model 2048, MLP 8192, vocabulary 128256, tied,
// llama3 rope scaling; BF16, 2.47 GB, for the 4 GB heap), or vit-base for ViT-B/16's (12 layers ×
// 12 heads, d_model 768, MLP 3072, 224-pixel images in 16-pixel patches, 1000 labels; F32, with
// its preprocessor_config.json: bench/vit.mjs). The tokenizer is the family's fixture's (its ids
// are all within the vocabulary). Usage:
//   node scripts/make-random-checkpoint.mjs [out-dir] [--bf16] [--size small|medium|large|qwen2-0.5b|llama-3.2-1b|vit-base]
//   (default build/gpt2-small-random)
import { copyFileSync, existsSync, mkdirSync, openSync, writeSync, closeSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const out = process.argv[2] && !process.argv[2].startsWith('--') ? process.argv[2] : 'build/gpt2-small-random';
const sizeArg = process.argv.indexOf('--size');
const size = sizeArg > 0 ? process.argv[sizeArg + 1] : 'small';

// Each family: its tensors as [name, shape, σ of the uniform values or 'one'], its config.json, and
// the fixture whose tokenizer it takes.
function gpt2([d, L, heads]) {
  const V = 50257, P = 1024, ff = 4 * d;
  const shapes = [['wte.weight', [V, d], 0.02], ['wpe.weight', [P, d], 0.01]];
  for (let l = 0; l < L; l += 1) {
    const h = `h.${l}.`;
    shapes.push([`${h}ln_1.weight`, [d], 'one'], [`${h}ln_1.bias`, [d], 0], [`${h}attn.c_attn.weight`, [d, 3 * d], 0.02],
      [`${h}attn.c_attn.bias`, [3 * d], 0], [`${h}attn.c_proj.weight`, [d, d], 0.02], [`${h}attn.c_proj.bias`, [d], 0],
      [`${h}ln_2.weight`, [d], 'one'], [`${h}ln_2.bias`, [d], 0], [`${h}mlp.c_fc.weight`, [d, ff], 0.02], [`${h}mlp.c_fc.bias`, [ff], 0],
      [`${h}mlp.c_proj.weight`, [ff, d], 0.02], [`${h}mlp.c_proj.bias`, [d], 0]);
  }
  shapes.push(['ln_f.weight', [d], 'one'], ['ln_f.bias', [d], 0]);
  const config = { model_type: 'gpt2', architectures: ['GPT2LMHeadModel'], n_layer: L, n_head: heads, n_embd: d, n_positions: P,
    vocab_size: V, layer_norm_epsilon: 1e-5, activation_function: 'gelu_new', tie_word_embeddings: true };
  return { shapes, config, fixture: 'gpt2' };
}
function llama([d, L, heads, kvHeads, ff, V]) {
  const dKv = (d / heads) * kvHeads;
  const shapes = [['model.embed_tokens.weight', [V, d], 0.02]];
  for (let l = 0; l < L; l += 1) {
    const h = `model.layers.${l}.`;
    shapes.push([`${h}input_layernorm.weight`, [d], 'one'], [`${h}self_attn.q_proj.weight`, [d, d], 0.02],
      [`${h}self_attn.k_proj.weight`, [dKv, d], 0.02], [`${h}self_attn.v_proj.weight`, [dKv, d], 0.02],
      [`${h}self_attn.o_proj.weight`, [d, d], 0.02], [`${h}post_attention_layernorm.weight`, [d], 'one'],
      [`${h}mlp.gate_proj.weight`, [ff, d], 0.02], [`${h}mlp.up_proj.weight`, [ff, d], 0.02], [`${h}mlp.down_proj.weight`, [d, ff], 0.02]);
  }
  shapes.push(['model.norm.weight', [d], 'one']);
  const config = { model_type: 'llama', architectures: ['LlamaForCausalLM'], num_hidden_layers: L, num_attention_heads: heads,
    num_key_value_heads: kvHeads, head_dim: d / heads, hidden_size: d, intermediate_size: ff, vocab_size: V,
    max_position_embeddings: 131072, rms_norm_eps: 1e-5, rope_theta: 500000.0, hidden_act: 'silu', tie_word_embeddings: true,
    rope_scaling: { rope_type: 'llama3', factor: 32.0, low_freq_factor: 1.0, high_freq_factor: 4.0, original_max_position_embeddings: 8192 },
    torch_dtype: 'bfloat16' };
  return { shapes, config, fixture: 'llama' };
}
function qwen2([d, L, heads, kvHeads, ff, V]) {
  const dKv = (d / heads) * kvHeads;
  const shapes = [['model.embed_tokens.weight', [V, d], 0.02]];
  for (let l = 0; l < L; l += 1) {
    const h = `model.layers.${l}.`;
    shapes.push([`${h}input_layernorm.weight`, [d], 'one'], [`${h}self_attn.q_proj.weight`, [d, d], 0.02], [`${h}self_attn.q_proj.bias`, [d], 0],
      [`${h}self_attn.k_proj.weight`, [dKv, d], 0.02], [`${h}self_attn.k_proj.bias`, [dKv], 0], [`${h}self_attn.v_proj.weight`, [dKv, d], 0.02],
      [`${h}self_attn.v_proj.bias`, [dKv], 0], [`${h}self_attn.o_proj.weight`, [d, d], 0.02], [`${h}post_attention_layernorm.weight`, [d], 'one'],
      [`${h}mlp.gate_proj.weight`, [ff, d], 0.02], [`${h}mlp.up_proj.weight`, [ff, d], 0.02], [`${h}mlp.down_proj.weight`, [d, ff], 0.02]);
  }
  shapes.push(['model.norm.weight', [d], 'one']);
  const config = { model_type: 'qwen2', architectures: ['Qwen2ForCausalLM'], num_hidden_layers: L, num_attention_heads: heads,
    num_key_value_heads: kvHeads, hidden_size: d, intermediate_size: ff, vocab_size: V, max_position_embeddings: 32768,
    rms_norm_eps: 1e-6, rope_theta: 1000000.0, hidden_act: 'silu', tie_word_embeddings: true };
  return { shapes, config, fixture: 'qwen2' };
}
function vit([d, L, heads, ff, side, patch, labels]) {
  const grid = side / patch;
  const e = 'vit.embeddings.';
  const shapes = [[`${e}cls_token`, [1, 1, d], 0.02], [`${e}position_embeddings`, [1, grid * grid + 1, d], 0.02],
    [`${e}patch_embeddings.projection.weight`, [d, 3, patch, patch], 0.02], [`${e}patch_embeddings.projection.bias`, [d], 0]];
  for (let l = 0; l < L; l += 1) {
    const h = `vit.encoder.layer.${l}.`;
    shapes.push([`${h}layernorm_before.weight`, [d], 'one'], [`${h}layernorm_before.bias`, [d], 0]);
    for (const m of ['query', 'key', 'value']) shapes.push([`${h}attention.attention.${m}.weight`, [d, d], 0.02], [`${h}attention.attention.${m}.bias`, [d], 0]);
    shapes.push([`${h}attention.output.dense.weight`, [d, d], 0.02], [`${h}attention.output.dense.bias`, [d], 0],
      [`${h}layernorm_after.weight`, [d], 'one'], [`${h}layernorm_after.bias`, [d], 0],
      [`${h}intermediate.dense.weight`, [ff, d], 0.02], [`${h}intermediate.dense.bias`, [ff], 0],
      [`${h}output.dense.weight`, [d, ff], 0.02], [`${h}output.dense.bias`, [d], 0]);
  }
  shapes.push(['vit.layernorm.weight', [d], 'one'], ['vit.layernorm.bias', [d], 0], ['classifier.weight', [labels, d], 0.02], ['classifier.bias', [labels], 0]);
  const config = { model_type: 'vit', architectures: ['ViTForImageClassification'], num_hidden_layers: L, num_attention_heads: heads,
    hidden_size: d, intermediate_size: ff, image_size: side, patch_size: patch, num_channels: 3, qkv_bias: true, hidden_act: 'gelu',
    layer_norm_eps: 1e-12, id2label: Object.fromEntries(Array.from({ length: labels }, (_, i) => [String(i), `label ${i}`])) };
  const processor = { image_processor_type: 'ViTImageProcessor', do_resize: true, size: { height: side, width: side }, resample: 2,
    do_rescale: true, rescale_factor: 1 / 255, do_normalize: true, image_mean: [0.5, 0.5, 0.5], image_std: [0.5, 0.5, 0.5] };
  return { shapes, config, fixture: 'vit', extra: { 'preprocessor_config.json': processor } };
}
const families = {
  small: () => gpt2([768, 12, 12]), medium: () => gpt2([1024, 24, 16]), large: () => gpt2([1280, 36, 20]),
  'qwen2-0.5b': () => qwen2([896, 24, 14, 2, 4864, 151936]),
  'llama-3.2-1b': () => llama([2048, 16, 32, 8, 8192, 128256]),
  'vit-base': () => vit([768, 12, 12, 3072, 224, 16, 1000]),
};
if (!families[size]) throw new Error(`--size must be one of ${Object.keys(families).join(', ')}`);
const { shapes, config, fixture, extra = {} } = families[size]();
const bf16 = process.argv.includes('--bf16') || !['gpt2', 'vit'].includes(config.model_type);
const bytesPer = bf16 ? 2 : 4;
const header = {};
let at = 0;
for (const [name, shape] of shapes) {
  const size = shape.reduce((a, b) => a * b, 1) * bytesPer;
  header[name] = { dtype: bf16 ? 'BF16' : 'F32', shape, data_offsets: [at, at + size] };
  at += size;
}
mkdirSync(out, { recursive: true });
let json = JSON.stringify(header);
json += ' '.repeat((8 - ((json.length + 8) % 8)) % 8);
const fd = openSync(join(out, 'model.safetensors'), 'w');
const length = Buffer.alloc(8);
length.writeBigUInt64LE(BigInt(json.length));
writeSync(fd, length);
writeSync(fd, Buffer.from(json));
let seed = 12345;
const uniform = () => { seed = (seed * 1664525 + 1013904223) >>> 0; return seed / 2 ** 32 - 0.5; };
for (const [, shape, scale] of shapes) {
  const count = shape.reduce((a, b) => a * b, 1);
  const values = new Float32Array(count);
  for (let i = 0; i < count; i += 1) values[i] = scale === 'one' ? 1 : scale * 3.46 * uniform();  // uniform with σ = scale
  if (bf16) {
    const words = new Uint32Array(values.buffer), half = new Uint16Array(count);
    for (let i = 0; i < count; i += 1) half[i] = words[i] >>> 16;
    writeSync(fd, new Uint8Array(half.buffer));
  } else {
    writeSync(fd, new Uint8Array(values.buffer));
  }
}
closeSync(fd);
writeFileSync(join(out, 'config.json'), JSON.stringify(config, null, 2));
for (const [name, value] of Object.entries(extra)) writeFileSync(join(out, name), JSON.stringify(value, null, 2));
for (const f of ['tokenizer.json', 'tokenizer_config.json', 'vocab.json', 'merges.txt'])
  if (existsSync(join('tests/fixtures/hf', fixture, f))) copyFileSync(join('tests/fixtures/hf', fixture, f), join(out, f));
console.log(`${out}: ${config.model_type} ${size} shape, ${bf16 ? 'BF16' : 'F32'}, ${(at / 1e6).toFixed(0)} MB of weights`);
