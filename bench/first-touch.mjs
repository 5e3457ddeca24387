// The machine's first-touch rate, for bench/gguf-load.mjs in Node and in its page: fill `mb` MB of
// fresh memory twice, a grown WebAssembly.Memory (shared, as the threaded build's is, and not) and an
// ArrayBuffer. The first fill pays the page faults, the second does not; faultNsPerByte is the
// difference, what each fresh byte a load writes costs on top of the write itself.
export function firstTouch(mb = 256) {
  const time = (view) => {
    let t = performance.now();
    view.fill(1);
    const first = performance.now() - t;
    t = performance.now();
    view.fill(2);
    const second = performance.now() - t;
    return { firstMBps: mb / (first / 1000), againMBps: mb / (second / 1000), faultNsPerByte: ((first - second) * 1e6) / (mb * 1e6) };
  };
  const out = {};
  for (const shared of [false, true]) {
    const memory = new WebAssembly.Memory({ initial: 1, maximum: 65536, shared });
    memory.grow(mb * 16);  // 64 KiB pages
    out[shared ? 'sharedWasmMemory' : 'wasmMemory'] = time(new Uint8Array(memory.buffer, 65536, mb << 20));
  }
  out.arrayBuffer = time(new Uint8Array(mb << 20));
  return out;
}
