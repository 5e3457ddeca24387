// Writes a GPT-2-small-shaped checkpoint with random weights in the hub's layout (12 layers × 12
// heads, d_model 768, vocabulary 50257, 1024 positions; F32 like the hub's gpt2, plus a BF16 copy
// with --bf16), for measuring the page and the benchmark with a real model's size; --size medium or
// large writes GPT-2 medium's (24 × 16, d_model 1024) or large's (36 × 20, 1280) shape instead, for
// finding the largest checkpoint the page loads (bench/largest-checkpoint.mjs). The tokenizer is
// the GPT-2 fixture's (its ids are all within the vocabulary). Usage:
//   node scripts/make-random-checkpoint.mjs [out-dir] [--bf16] [--size small|medium|large]
//   (default build/gpt2-small-random)
import { copyFileSync, mkdirSync, openSync, writeSync, closeSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const out = process.argv[2] && !process.argv[2].startsWith('--') ? process.argv[2] : 'build/gpt2-small-random';
const bf16 = process.argv.includes('--bf16');
const sizes = { small: [768, 12, 12], medium: [1024, 24, 16], large: [1280, 36, 20] };
const sizeArg = process.argv.indexOf('--size');
const size = sizeArg > 0 ? process.argv[sizeArg + 1] : 'small';
if (!sizes[size]) throw new Error(`--size must be one of ${Object.keys(sizes).join(', ')}`);
const [d, L, heads] = sizes[size];
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
writeFileSync(join(out, 'config.json'), JSON.stringify({ model_type: 'gpt2', architectures: ['GPT2LMHeadModel'], n_layer: L, n_head: heads,
  n_embd: d, n_positions: P, vocab_size: V, layer_norm_epsilon: 1e-5, activation_function: 'gelu_new', tie_word_embeddings: true }, null, 2));
for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join('tests/fixtures/hf/gpt2', f), join(out, f));
console.log(`${out}: GPT-2 ${size} shape, ${bf16 ? 'BF16' : 'F32'}, ${(at / 1e6).toFixed(0)} MB of weights`);
