// The protobuf wire format, read field by field: just enough for SentencePiece's model files.
// Every length is checked against the bytes left before anything is read or allocated, so a
// truncated or corrupted file ends in our Error, never a RangeError or a hang.

export class ProtobufReader {
  /** @param {Uint8Array} bytes @param {(message: string) => never} fail */
  constructor(bytes, fail, from = 0, to = bytes.length, view = null) {
    this.bytes = bytes;
    this.view = view ?? new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.fail = fail;
    this.at = from;
    this.end = to;
  }

  get done() { return this.at >= this.end; }

  // A varint's low 32 bits as an unsigned number (int32 fields: `| 0` gives the signed value;
  // negative ones are written as 10-byte varints).
  varint() {
    const { bytes, end } = this;
    let value = 0;
    for (let k = 0; k < 10; k += 1) {
      if (this.at >= end) this.fail('a number runs past the end of its message (the file is truncated or corrupted)');
      const byte = bytes[this.at];
      this.at += 1;
      if (k < 5) value += (byte & 0x7F) * 2 ** (7 * k);
      if (byte < 0x80) return value % 2 ** 32;
    }
    return this.fail('a number is longer than ten bytes (the file is corrupted)');
  }

  /** The next field's number and wire type, as { field, wire }. */
  key() {
    const key = this.varint();
    return { field: Math.floor(key / 8), wire: key & 7 };
  }

  /** The bytes of a length-delimited field, as a subarray (no copy). */
  lengthDelimited() {
    const length = this.varint();
    if (length > this.end - this.at) this.fail(`a field of ${length} bytes runs past the end of its message (the file is truncated or corrupted)`);
    const from = this.at;
    this.at += length;
    return this.bytes.subarray(from, this.at);
  }

  /** A reader over the next length-delimited field (an embedded message). */
  message() {
    const length = this.varint();
    if (length > this.end - this.at) this.fail(`a message of ${length} bytes runs past the end of the one holding it (the file is truncated or corrupted)`);
    const inner = new ProtobufReader(this.bytes, this.fail, this.at, this.at + length, this.view);
    this.at += length;
    return inner;
  }

  float32() {
    if (this.end - this.at < 4) this.fail('a float runs past the end of its message (the file is truncated or corrupted)');
    const value = this.view.getFloat32(this.at, true);
    this.at += 4;
    return value;
  }

  /** Skips a field of the given wire type (fields this reader has no use for). */
  skip(wire) {
    if (wire === 0) this.varint();
    else if (wire === 1 || wire === 5) {
      const size = wire === 1 ? 8 : 4;
      if (this.end - this.at < size) this.fail('a field runs past the end of its message (the file is truncated or corrupted)');
      this.at += size;
    } else if (wire === 2) this.lengthDelimited();
    else this.fail(`wire type ${wire} is not one a SentencePiece model uses (the file is corrupted, or not a SentencePiece model)`);
  }
}
