// The benchmark's layer weights: a seeded LCG, uniform in ±1/√d (biases ±0.1), the same in Node
// (bench/run.mjs) and in the browser (bench/browser/threads-page.mjs).
export function randomWeights(d, seed) {
  let a = seed;
  const r = (count, scale) => Float32Array.from({ length: count }, () => {
    a = (a * 1103515245 + 12345) >>> 0;
    return ((a / 2 ** 32) * 2 - 1) * scale;
  });
  const s = 1 / Math.sqrt(d);
  return { wq: r(d * d, s), wk: r(d * d, s), wv: r(d * d, s), wo: r(d * d, s), bq: r(d, 0.1), bk: r(d, 0.1), bv: r(d, 0.1), bo: r(d, 0.1) };
}
