// The benchmark's weights, the same in Node (bench/run.mjs, bench/gpt2.mjs) and in the browser
// (bench/browser/threads-page.mjs). A layer's: a seeded LCG, uniform in ±1/√d (biases ±0.1).
export function randomWeights(d, seed) {
  let a = seed;
  const r = (count, scale) => Float32Array.from({ length: count }, () => {
    a = (a * 1103515245 + 12345) >>> 0;
    return ((a / 2 ** 32) * 2 - 1) * scale;
  });
  const s = 1 / Math.sqrt(d);
  return { wq: r(d * d, s), wk: r(d * d, s), wv: r(d * d, s), wo: r(d * d, s), bq: r(d, 0.1), bk: r(d, 0.1), bv: r(d, 0.1), bo: r(d, 0.1) };
}

// The external data of a GPT-2 peer graph (bench/peers/gpt2-small/<name>.external.json): random
// N(0, 0.02)-sized values, ones for the layer norms' scales. Timing does not depend on them.
export function gpt2PeerWeights(external) {
  const data = new Uint8Array(external.size);
  const floats = new Float32Array(data.buffer);
  for (const init of external.initializers) {
    const first = init.offset / 4, count = init.length / 4, ones = /ln_\d\.weight|ln_f\.weight/.test(init.name);
    for (let i = 0; i < count; i += 1) floats[first + i] = ones ? 1 : (Math.random() - 0.5) * 0.07;
  }
  return data;
}
