// Rewrites clang 14's pre-standard relaxed-SIMD fused multiply-add (0xfd 0xaf 0x01) into the
// standard f32x4.relaxed_madd (0xfd 0x85 0x02) in a linked .wasm, in place; and f64x2's
// pre-standard relaxed_min (0xfd 0xd4 0x01) and fused multiply-add (0xfd 0xcf 0x01), which stand in
// for the int8 dots clang 14 has no builtins for (src/core/relaxed_dots.h), into
// i16x8.relaxed_dot_i8x16_i7x16_s (0xfd 0x92 0x02) and i32x4.relaxed_dot_i8x16_i7x16_add_s (0xfd 0x93 0x02).
//
// Why: Emscripten 3.1.6's clang accepts -mrelaxed-simd and __builtin_wasm_fma_f32x4 but encodes it
// with an opcode from before the proposal was finished, which every shipping engine rejects, and
// its binaryen cannot read the standard one — so the rewrite is the last step, after linking
// (docs/performance.md, "Relaxed SIMD"). Both encodings are 3 bytes, so no size or offset changes. The code
// section is walked instruction by instruction: a byte search would also hit immediates (a
// v128.const, a memory offset) that happen to contain the same bytes.
//
// Usage: node scripts/relax-wasm.mjs file.wasm   (prints how many were rewritten; exits 1 on an
// instruction it does not know, leaving the file unchanged)
import { readFileSync, writeFileSync } from 'node:fs';

// Pre-standard opcode (its LEB128 is 2 bytes) → the standard one's 2 bytes.
const REWRITES = new Map([
  [0xaf, [0x85, 0x02]], // f32x4 fma (175) → f32x4.relaxed_madd (261)
  [0xd4, [0x92, 0x02]], // f64x2 relaxed_min (212) → i16x8.relaxed_dot_i8x16_i7x16_s (274)
  [0xcf, [0x93, 0x02]], // f64x2 fma (207) → i32x4.relaxed_dot_i8x16_i7x16_add_s (275)
]);

export function relaxWasm(bytes) {
  let pos = 0;
  const u32 = () => {
    let result = 0, shift = 0, byte;
    do {
      byte = bytes[pos++];
      result += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return result;
  };
  const skipLeb = () => { while (bytes[pos++] & 0x80); };
  const memarg = () => { skipLeb(); skipLeb(); };
  const blockType = () => {
    const b = bytes[pos];
    if (b === 0x40 || (b >= 0x6f && b <= 0x7f)) pos++;
    else skipLeb(); // a type index (s33)
  };
  if (bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) throw new Error('not a wasm module');
  pos = 8;
  let rewritten = 0;
  while (pos < bytes.length) {
    const id = bytes[pos++];
    const size = u32();
    const end = pos + size;
    if (id !== 10) { pos = end; continue; }
    const functions = u32();
    for (let f = 0; f < functions; f++) {
      const bodySize = u32();
      const bodyEnd = pos + bodySize;
      const groups = u32();
      for (let g = 0; g < groups; g++) { skipLeb(); pos++; }
      while (pos < bodyEnd) {
        const op = bytes[pos++];
        if (op === 0xfd) {
          const at = pos;
          const sub = u32();
          const standard = REWRITES.get(sub);
          if (standard) {
            if (pos - at !== 2) throw new Error(`relaxed opcode ${sub} with a ${pos - at}-byte encoding at ${at}`);
            bytes[at] = standard[0];
            bytes[at + 1] = standard[1];
            rewritten++;
          } else if (sub <= 11 || sub === 92 || sub === 93) memarg(); // loads, store, load_zero
          else if (sub === 12 || sub === 13) pos += 16; // v128.const, i8x16.shuffle
          else if (sub >= 21 && sub <= 34) pos += 1; // extract/replace lane
          else if (sub >= 84 && sub <= 91) { memarg(); pos += 1; } // load/store lane
        } else if (op === 0xfc) {
          const sub = u32();
          if (sub === 8) { skipLeb(); pos++; } // memory.init
          else if (sub === 9 || sub === 13 || (sub >= 15 && sub <= 17)) skipLeb();
          else if (sub === 10) pos += 2; // memory.copy
          else if (sub === 11) pos += 1; // memory.fill
          else if (sub === 12 || sub === 14) { skipLeb(); skipLeb(); }
          else if (sub > 17) throw new Error(`unknown 0xfc ${sub} at ${pos}`);
        } else if (op === 0xfe) {
          const sub = u32();
          if (sub === 3) pos += 1; // atomic.fence
          else memarg();
        } else if (op === 0x02 || op === 0x03 || op === 0x04 || op === 0x06) blockType();
        else if (op === 0x0c || op === 0x0d || op === 0x10 || op === 0x12 || (op >= 0x20 && op <= 0x26) ||
                 op === 0xd2 || op === 0x07 || op === 0x08 || op === 0x09 || op === 0x18) skipLeb();
        else if (op === 0x0e) { const n = u32(); for (let i = 0; i <= n; i++) skipLeb(); }
        else if (op === 0x11 || op === 0x13) { skipLeb(); skipLeb(); }
        else if (op === 0x1c) { const n = u32(); pos += n; }
        else if (op >= 0x28 && op <= 0x3e) memarg();
        else if (op === 0x3f || op === 0x40) pos += 1;
        else if (op === 0x41 || op === 0x42) skipLeb();
        else if (op === 0x43) pos += 4;
        else if (op === 0x44) pos += 8;
        else if (op === 0xd0) pos += 1;
        else if (!((op <= 0x01) || op === 0x05 || op === 0x0b || op === 0x0f || op === 0x19 || op === 0x1a ||
                   op === 0x1b || (op >= 0x45 && op <= 0xc4) || op === 0xd1)) {
          throw new Error(`unknown opcode 0x${op.toString(16)} at ${pos - 1}`);
        }
      }
      if (pos !== bodyEnd) throw new Error(`function ${f} decoded past its end`);
    }
    pos = end;
  }
  return rewritten;
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  const file = process.argv[2];
  const bytes = new Uint8Array(readFileSync(file));
  const count = relaxWasm(bytes);
  writeFileSync(file, bytes);
  console.log(`${file}: ${count} pre-standard relaxed instructions rewritten (relaxed_madd, relaxed_dot)`);
}
