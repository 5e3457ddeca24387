// Test helpers for Hugging Face checkpoints: read and write safetensors files (independently of the
// project's C++ reader), and make hub variants of the fixtures by transformations that keep the
// model's function (renamed keys, another prefix, widened dtypes, split shards, untied heads), so
// transformers' own numbers in expected.safetensors still apply to them.
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

export const FIXTURES = join(process.cwd(), 'tests/fixtures/hf');
export const MODELS = ['gpt2', 'bert', 'llama', 'qwen2', 'gpt_neox', 'gpt_neo', 'qwen3', 'gemma3', 'distilbert', 'roberta'];

const DTYPE_BYTES = { F32: 4, F16: 2, BF16: 2, I32: 4, I64: 8 };

/** Parses a safetensors file into Map name → { dtype, shape, bytes }, in file order. */
export function readSafetensors(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(view.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  const out = new Map();
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [a, b] = t.data_offsets;
    out.set(name, { dtype: t.dtype, shape: t.shape, bytes: bytes.slice(8 + n + a, 8 + n + b) });
  }
  return out;
}

/** Writes Map name → { dtype, shape, bytes } as a safetensors file. */
export function writeSafetensors(tensors) {
  const header = { __metadata__: { format: 'pt' } };
  let at = 0;
  for (const [name, t] of tensors) {
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [at, at + t.bytes.length] };
    at += t.bytes.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((json.length + 8) % 8)) % 8);  // as the reference writer pads
  const text = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + text.length + at);
  new DataView(out.buffer).setBigUint64(0, BigInt(text.length), true);
  out.set(text, 8);
  let offset = 8 + text.length;
  for (const t of tensors.values()) { out.set(t.bytes, offset); offset += t.bytes.length; }
  return out;
}

/** A fixture's files as Map name → Uint8Array. */
export function fixtureFiles(model) {
  const names = ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'vocab.json', 'merges.txt', 'vocab.txt',
    'preprocessor_config.json', 'generation_config.json', 'source.spm', 'target.spm'];
  const files = new Map();
  for (const name of names) {
    const path = join(FIXTURES, model, name);
    if (existsSync(path)) files.set(name, new Uint8Array(readFileSync(path)));
  }
  return files;
}

export const fixtureConfig = (model) => JSON.parse(readFileSync(join(FIXTURES, model, 'config.json'), 'utf8'));
export const expectedJson = (model) => JSON.parse(readFileSync(join(FIXTURES, model, 'expected.json'), 'utf8'));

/** transformers' numbers for a fixture: case → { ids, types, attentions, hidden, logits } as typed arrays. */
export function expectedOutputs(model) {
  const tensors = readSafetensors(new Uint8Array(readFileSync(join(FIXTURES, model, 'expected.safetensors'))));
  const f32 = (t) => t && new Float32Array(t.bytes.buffer.slice(t.bytes.byteOffset, t.bytes.byteOffset + t.bytes.length));
  const i32 = (t) => t && new Int32Array(t.bytes.buffer.slice(t.bytes.byteOffset, t.bytes.byteOffset + t.bytes.length));
  return expectedJson(model).cases.map((c) => ({
    ...c,
    ids: i32(tensors.get(`${c.key}.input_ids`)),
    types: i32(tensors.get(`${c.key}.token_type_ids`)),
    attentions: f32(tensors.get(`${c.key}.attentions`)),
    hidden: f32(tensors.get(`${c.key}.hidden_states`)),
    hiddenShape: tensors.get(`${c.key}.hidden_states`).shape,
    logits: f32(tensors.get(`${c.key}.logits`)),
  }));
}

// ---- dtype conversions (exact where they widen) ----
function halfToFloat(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}
/** A tensor widened to F32 (exact for F16 and BF16). */
export function toF32(t) {
  if (t.dtype === 'F32') return t;
  const src = new Uint16Array(t.bytes.buffer.slice(t.bytes.byteOffset, t.bytes.byteOffset + t.bytes.length));
  const out = new Float32Array(src.length);
  const word = new Uint32Array(out.buffer);
  for (let i = 0; i < src.length; i += 1) {
    if (t.dtype === 'BF16') word[i] = src[i] << 16;
    else out[i] = halfToFloat(src[i]);
  }
  return { dtype: 'F32', shape: t.shape, bytes: new Uint8Array(out.buffer) };
}

/** Renames every tensor with fn(name) (null drops it), keeping order. */
export function renameTensors(tensors, fn) {
  const out = new Map();
  for (const [name, t] of tensors) {
    const renamed = fn(name);
    if (renamed !== null) out.set(renamed, t);
  }
  return out;
}

/** Splits tensors into `count` shards plus the index transformers writes. */
export function shard(tensors, count) {
  const names = [...tensors.keys()];
  const per = Math.ceil(names.length / count);
  const files = new Map(), weightMap = {};
  for (let k = 0; k < count; k += 1) {
    const file = `model-${String(k + 1).padStart(5, '0')}-of-${String(count).padStart(5, '0')}.safetensors`;
    const part = new Map(names.slice(k * per, (k + 1) * per).map((n) => [n, tensors.get(n)]));
    for (const n of part.keys()) weightMap[n] = file;
    files.set(file, writeSafetensors(part));
  }
  files.set('model.safetensors.index.json', new TextEncoder().encode(JSON.stringify({ metadata: {}, weight_map: weightMap })));
  return files;
}

export const encodeJson = (value) => new TextEncoder().encode(JSON.stringify(value));

export function maxAbsDiff(a, b) {
  let m = 0;
  for (let i = 0; i < a.length; i += 1) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}
export const maxAbs = (a) => a.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
