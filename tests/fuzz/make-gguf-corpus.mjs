// Writes the GGUF fuzzer's seeds, tests/fuzz/gguf-corpus/*.gguf: small valid files (under 8 KB) that
// between them hold every metadata value type, nested arrays, a non-default alignment, and tensors of
// every type the reader dequantizes plus one it only parses (Q2_K). Run: node tests/fuzz/make-gguf-corpus.mjs
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const out = join(dirname(fileURLToPath(import.meta.url)), 'gguf-corpus');

// ggml type: [id, elements per block, bytes per block]
const TYPES = {
  F32: [0, 1, 4], F16: [1, 1, 2], Q4_0: [2, 32, 18], Q4_1: [3, 32, 20], Q5_0: [6, 32, 22], Q5_1: [7, 32, 24],
  Q8_0: [8, 32, 34], Q2_K: [10, 256, 84], Q4_K: [12, 256, 144], Q5_K: [13, 256, 176], Q6_K: [14, 256, 210],
  BF16: [30, 1, 2],
};

class Writer {
  constructor() { this.bytes = []; }
  int(value, n) { let v = BigInt(value); for (let i = 0; i < n; i++) { this.bytes.push(Number(v & 0xffn)); v >>= 8n; } }
  u8(v) { this.int(v, 1); } u32(v) { this.int(v, 4); } u64(v) { this.int(v, 8); }
  f32(v) { const b = Buffer.alloc(4); b.writeFloatLE(v); this.bytes.push(...b); }
  f64(v) { const b = Buffer.alloc(8); b.writeDoubleLE(v); this.bytes.push(...b); }
  str(s) { const b = Buffer.from(s, 'utf8'); this.u64(b.length); this.bytes.push(...b); }
  pad(alignment) { while (this.bytes.length % alignment) this.bytes.push(0); }
}

// A GGUF file: kvs are [key, write(w)], tensors [name, ne, type name].
function gguf({ version = 3, alignment = 32, kvs = [], tensors = [] }) {
  const w = new Writer();
  w.bytes.push(...Buffer.from('GGUF'));
  w.u32(version);
  w.u64(tensors.length);
  const all = alignment === 32 ? kvs : [...kvs, ['general.alignment', (x) => { x.u32(4); x.u32(alignment); }]];
  w.u64(all.length);
  for (const [key, write] of all) { w.str(key); write(w); }
  let offset = 0;
  const sizes = [];
  for (const [name, ne, type] of tensors) {
    const [id, block, bytes] = TYPES[type];
    const size = ne.reduce((a, b) => a * b, 1) / block * bytes;
    w.str(name); w.u32(ne.length); for (const n of ne) w.u64(n); w.u32(id); w.u64(offset);
    sizes.push([offset, size, type]);
    offset += Math.ceil(size / alignment) * alignment;
  }
  w.pad(alignment);
  const start = w.bytes.length;
  let seed = 12345;
  const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) >> 16;
  for (const [at, size, type] of sizes) {
    while (w.bytes.length < start + at) w.u8(0);
    const [, block, bytes] = TYPES[type];
    // Float32 tensors get moderate positive values (norms, rotary divisors), the rest random bytes.
    if (type === 'F32') for (let i = 0; i < size / 4; i++) w.f32(0.5 + (random() & 0xff) / 256);
    else for (let i = 0; i < size; i++) w.u8(random() & 0xff);
    // Keep the f16 scales finite and moderate (the first 2 or 4 bytes of a block; Q6_K's last 2).
    if (block > 1) {
      for (let b = w.bytes.length - size; b < w.bytes.length; b += bytes) {
        const scales = type === 'Q6_K' ? [b + 208] : ['Q4_0', 'Q5_0', 'Q8_0'].includes(type) ? [b] : [b, b + 2];
        for (const s of scales) w.bytes[s + 1] = 0x2c | (w.bytes[s + 1] & 0x83);
      }
    }
  }
  return Buffer.from(w.bytes);
}

const s = (v) => (w) => { w.u32(8); w.str(v); };
const u32 = (v) => (w) => { w.u32(4); w.u32(v); };
const arrayOf = (type, items, write) => (w) => { w.u32(9); w.u32(type); w.u64(items.length); for (const x of items) write(w, x); };
const vocab = ['<unk>', '<s>', '</s>', '▁the', 'he', '<0x0A>'];

// A whole llama model, tiny: d 32, 1 layer, 2 heads of 16 (1 key/value head), FFN 32, 8 tokens.
const f32 = (v) => (w) => { w.u32(6); w.f32(v); };
const tinyLlama = gguf({
  kvs: [
    ['general.architecture', s('llama')], ['llama.block_count', u32(1)], ['llama.context_length', u32(64)],
    ['llama.embedding_length', u32(32)], ['llama.feed_forward_length', u32(32)], ['llama.attention.head_count', u32(2)],
    ['llama.attention.head_count_kv', u32(1)], ['llama.attention.layer_norm_rms_epsilon', f32(1e-5)],
    ['llama.rope.freq_base', f32(10000)], ['llama.rope.dimension_count', u32(16)],
  ],
  tensors: [
    ['token_embd.weight', [32, 8], 'Q4_0'], ['blk.0.attn_norm.weight', [32], 'F32'], ['blk.0.attn_q.weight', [32, 32], 'Q4_0'],
    ['blk.0.attn_k.weight', [32, 16], 'Q8_0'], ['blk.0.attn_v.weight', [32, 16], 'Q4_0'], ['blk.0.attn_output.weight', [32, 32], 'Q4_0'],
    ['blk.0.ffn_norm.weight', [32], 'F32'], ['blk.0.ffn_gate.weight', [32, 32], 'Q4_0'], ['blk.0.ffn_up.weight', [32, 32], 'Q4_0'],
    ['blk.0.ffn_down.weight', [32, 32], 'Q4_0'], ['output_norm.weight', [32], 'F32'], ['rope_freqs.weight', [8], 'F32'],
  ],
});

const files = {
  'tiny-llama.gguf': tinyLlama,
  'empty.gguf': gguf({}),
  'metadata-v2.gguf': gguf({
    version: 2,
    kvs: [
      ['u8', (w) => { w.u32(0); w.u8(200); }], ['i8', (w) => { w.u32(1); w.u8(0xfb); }],
      ['u16', (w) => { w.u32(2); w.int(60000, 2); }], ['i16', (w) => { w.u32(3); w.int(0x8ad0, 2); }],
      ['u32', u32(4000000000)], ['i32', (w) => { w.u32(5); w.u32(0x88ca6c00); }],
      ['f32', (w) => { w.u32(6); w.f32(0.1); }], ['bool', (w) => { w.u32(7); w.u8(1); }],
      ['general.name', s('tiny')], ['u64', (w) => { w.u32(10); w.u64(2n ** 63n + 1n); }],
      ['i64', (w) => { w.u32(11); w.u64(2n ** 64n - 5n); }], ['f64', (w) => { w.u32(12); w.f64(1e300); }],
      ['tokenizer.ggml.tokens', arrayOf(8, vocab, (w, x) => w.str(x))],
      ['tokenizer.ggml.scores', arrayOf(6, vocab.map((_, i) => -i), (w, x) => w.f32(x))],
      ['tokenizer.ggml.token_type', arrayOf(5, vocab.map((_, i) => (i < 3 ? 3 : 1)), (w, x) => w.u32(x))],
      ['a.bool', arrayOf(7, [0, 1, 1], (w, x) => w.u8(x))], ['a.u64', arrayOf(10, [1, 2], (w, x) => w.u64(x))],
      ['a.f64', arrayOf(12, [0.5, -2], (w, x) => w.f64(x))],
      ['a.a.string', arrayOf(9, [['a', 'b'], ['c']], (w, x) => { w.u32(8); w.u64(x.length); for (const y of x) w.str(y); })],
    ],
  }),
  'floats.gguf': gguf({
    kvs: [['general.architecture', s('llama')], ['llama.block_count', u32(1)]],
    tensors: [['token_embd.weight', [8, 4], 'F16'], ['blk.0.attn_norm.weight', [8], 'F32'], ['output.weight', [8, 4], 'BF16']],
  }),
  'legacy-quants.gguf': gguf({
    kvs: [['general.architecture', s('qwen2')]],
    tensors: [['a', [32], 'Q4_0'], ['b', [32], 'Q4_1'], ['c', [32], 'Q5_0'], ['d', [32], 'Q5_1'], ['e', [32, 2], 'Q8_0']],
  }),
  'k-quants.gguf': gguf({
    kvs: [['general.architecture', s('llama')], ['general.file_type', u32(15)]],
    tensors: [['blk.0.attn_q.weight', [256], 'Q4_K'], ['blk.0.attn_k.weight', [256], 'Q5_K'], ['output.weight', [256], 'Q6_K']],
  }),
  'align64-q2_k.gguf': gguf({
    alignment: 64,
    kvs: [['general.architecture', s('gpt2')]],
    tensors: [['x', [3, 5], 'F32'], ['blk.0.ffn_down.weight', [256], 'Q2_K']],
  }),
};

mkdirSync(out, { recursive: true });
for (const [name, bytes] of Object.entries(files)) {
  if (bytes.length > 8192) throw new Error(`${name} is ${bytes.length} bytes, over 8 KB`);
  writeFileSync(join(out, name), bytes);
  console.log(`${name}: ${bytes.length} bytes`);
}
