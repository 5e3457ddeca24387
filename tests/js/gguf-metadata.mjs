// A small GGUF metadata reader for the tests, written from the format alone: an independent
// cross-check of the project's reader, and what the tokenizer tests read the fixtures with.
// Header: "GGUF", u32 version, u64 tensor count, u64 key/value count; then each key (u64 length +
// UTF-8 bytes), u32 value type, value. Arrays: u32 element type, u64 count, elements.

const utf8 = new TextDecoder('utf-8', { fatal: true });

const SCALARS = {
  0: [1, (v, at) => v.getUint8(at)],
  1: [1, (v, at) => v.getInt8(at)],
  2: [2, (v, at) => v.getUint16(at, true)],
  3: [2, (v, at) => v.getInt16(at, true)],
  4: [4, (v, at) => v.getUint32(at, true)],
  5: [4, (v, at) => v.getInt32(at, true)],
  6: [4, (v, at) => v.getFloat32(at, true)],
  7: [1, (v, at) => v.getUint8(at) !== 0],
  10: [8, (v, at) => Number(v.getBigUint64(at, true))],
  11: [8, (v, at) => Number(v.getBigInt64(at, true))],
  12: [8, (v, at) => v.getFloat64(at, true)],
};
const STRING = 8, ARRAY = 9;

class Cursor {
  constructor(bytes) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.at = 0;
  }

  need(n) {
    if (this.at + n > this.bytes.length) throw new Error(`GGUF: truncated at byte ${this.at} (needs ${n} more)`);
  }

  u32() { this.need(4); const v = this.view.getUint32(this.at, true); this.at += 4; return v; }

  u64() {
    this.need(8);
    const v = this.view.getBigUint64(this.at, true);
    this.at += 8;
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`GGUF: count ${v} is absurd`);
    return Number(v);
  }

  string() {
    const length = this.u64();
    this.need(length);
    const text = utf8.decode(this.bytes.subarray(this.at, this.at + length));
    this.at += length;
    return text;
  }

  value(type) {
    if (type === STRING) return this.string();
    if (type === ARRAY) {
      const elementType = this.u32(), count = this.u64();
      if (elementType === ARRAY) throw new Error('GGUF: arrays of arrays are not read here');
      const out = new Array(count);
      for (let k = 0; k < count; k += 1) out[k] = this.value(elementType);
      return out;
    }
    const scalar = SCALARS[type];
    if (!scalar) throw new Error(`GGUF: unknown value type ${type}`);
    this.need(scalar[0]);
    const v = scalar[1](this.view, this.at);
    this.at += scalar[0];
    return v;
  }
}

/** GGUF bytes → { key: value } of its metadata (u64/i64 as Numbers, arrays as plain arrays). */
export function readGgufMetadataForTests(bytes) {
  const cursor = new Cursor(bytes);
  cursor.need(4);
  if (utf8.decode(bytes.subarray(0, 4)) !== 'GGUF') throw new Error('GGUF: no magic');
  cursor.at = 4;
  const version = cursor.u32();
  if (version !== 2 && version !== 3) throw new Error(`GGUF: version ${version}`);
  cursor.u64();  // tensor count
  const count = cursor.u64();
  const metadata = {};
  for (let k = 0; k < count; k += 1) {
    const key = cursor.string();
    metadata[key] = cursor.value(cursor.u32());
  }
  return metadata;
}
