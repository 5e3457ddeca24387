// Independent float64 multi-head attention, written from the definition with plain loops.
// It shares no code with the core; the tests compare the wasm module against it.
import { mulberry32 } from '../../web/attention/tokens.mjs';

export function randomNormal(count, rng, stddev = 1) {
  const out = new Float64Array(count);
  for (let i = 0; i < count; i += 2) {
    const u = 1 - rng(), v = rng();
    const r = Math.sqrt(-2 * Math.log(u)) * stddev;
    out[i] = r * Math.cos(2 * Math.PI * v);
    if (i + 1 < count) out[i + 1] = r * Math.sin(2 * Math.PI * v);
  }
  return Float32Array.from(out);  // float-representable, so both sides see the same numbers
}

// Test data comes from the page's seeded generator (mulberry32).
export { mulberry32 as seededRandom };

function project(x, n, dIn, w, b, dOut) {
  const out = new Float64Array(n * dOut);
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < dOut; c++) {
      let s = b ? b[c] : 0;
      for (let i = 0; i < dIn; i++) s += x[r * dIn + i] * w[i * dOut + c];
      out[r * dOut + c] = s;
    }
  }
  return out;
}

/**
 * layer: { dModel, heads, kvHeads, scale?, weights: { wq, wk, wv, wo, bq?, bk?, bv?, bo? } }
 * mask: { causal, keyPaddingMask (nK, truthy = blocked), blocked (nQ×nK), additive (nQ×nK) }
 * Returns { output: Float64Array nQ×d, attention: Float64Array h×nQ×nK }.
 */
export function referenceAttention(layer, xq, xkv, nQ, nK, mask = {}) {
  const { dModel: d, heads: h, weights: W } = layer;
  const hKv = layer.kvHeads ?? h;
  const dK = d / h, dKv = hKv * dK, group = h / hKv;
  const scale = layer.scale || 1 / ((layer.temperature ?? 1) * Math.sqrt(dK));
  const q = project(xq, nQ, d, W.wq, W.bq, d);
  const k = project(xkv, nK, d, W.wk, W.bk, dKv);
  const v = project(xkv, nK, d, W.wv, W.bv, dKv);
  const concat = new Float64Array(nQ * d);
  const attention = new Float64Array(h * nQ * nK);
  for (let head = 0; head < h; head++) {
    const g = Math.floor(head / group);
    for (let i = 0; i < nQ; i++) {
      const s = new Float64Array(nK);
      const allowed = new Array(nK).fill(true);
      for (let j = 0; j < nK; j++) {
        let dot = 0;
        for (let c = 0; c < dK; c++) dot += q[i * d + head * dK + c] * k[j * dKv + g * dK + c];
        s[j] = dot * scale + (mask.additive ? mask.additive[i * nK + j] : 0);
        if ((mask.causal && j > i) || (mask.keyPaddingMask && mask.keyPaddingMask[j]) ||
            (mask.blocked && mask.blocked[i * nK + j]) || s[j] === -Infinity) allowed[j] = false;
      }
      let max = -Infinity;
      for (let j = 0; j < nK; j++) if (allowed[j]) max = Math.max(max, s[j]);
      let sum = 0;
      for (let j = 0; j < nK; j++) if (allowed[j]) sum += Math.exp(s[j] - max);
      for (let j = 0; j < nK; j++) {
        const a = allowed[j] ? Math.exp(s[j] - max) / sum : 0;
        attention[(head * nQ + i) * nK + j] = a;
        for (let c = 0; c < dK; c++) concat[i * d + head * dK + c] += a * v[j * dKv + g * dK + c];
      }
    }
  }
  return { output: project(concat, nQ, d, W.wo, W.bo, d), attention };
}

export function maxAbsDiff(a, b) {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}
