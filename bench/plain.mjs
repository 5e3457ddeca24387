// The floor: multi-head self-attention in plain JavaScript over Float32Arrays, written the way a
// careful JS developer would (row-major loops, k-inner products, no allocation per element).

function project(out, x, n, d, w, b, dOut) {
  for (let r = 0; r < n; r++) {
    const o = r * dOut;
    for (let c = 0; c < dOut; c++) out[o + c] = b ? b[c] : 0;
    for (let i = 0; i < d; i++) {
      const xi = x[r * d + i], wr = i * dOut;
      for (let c = 0; c < dOut; c++) out[o + c] += xi * w[wr + c];
    }
  }
}

export function plainAttention(x, n, d, h, W, { causal = false, attention = null } = {}) {
  const dk = d / h, scale = 1 / Math.sqrt(dk);
  const q = new Float32Array(n * d), k = new Float32Array(n * d), v = new Float32Array(n * d);
  project(q, x, n, d, W.wq, W.bq, d); project(k, x, n, d, W.wk, W.bk, d); project(v, x, n, d, W.wv, W.bv, d);
  const concat = new Float32Array(n * d), row = new Float32Array(n);
  for (let head = 0; head < h; head++) {
    const off = head * dk;
    for (let i = 0; i < n; i++) {
      const last = causal ? i : n - 1;
      let max = -Infinity;
      for (let j = 0; j <= last; j++) {
        let s = 0;
        for (let c = 0; c < dk; c++) s += q[i * d + off + c] * k[j * d + off + c];
        row[j] = s * scale;
        if (row[j] > max) max = row[j];
      }
      let sum = 0;
      for (let j = 0; j <= last; j++) { row[j] = Math.exp(row[j] - max); sum += row[j]; }
      const o = i * d + off;
      for (let j = 0; j <= last; j++) {
        const a = row[j] / sum;
        if (attention) attention[(head * n + i) * n + j] = a;
        for (let c = 0; c < dk; c++) concat[o + c] += a * v[j * d + off + c];
      }
      if (attention) for (let j = last + 1; j < n; j++) attention[(head * n + i) * n + j] = 0;
    }
  }
  const y = new Float32Array(n * d);
  project(y, concat, n, d, W.wo, W.bo, d);
  return y;
}
