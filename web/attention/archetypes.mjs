// Hand-built weights whose heads do recognisable jobs, for comparison with random ones.
//
// Layout: in this mode X = [token embedding (d/2 columns) | positional encoding (d/2 columns)],
// so a head can read position without token noise. The sinusoidal encoding has pairs
// (sin pω, cos pω); a rotation by ω turns position p into p − 1, which is all a
// previous-token head needs: q_p · k_j = Σ_ω cos((p − 1 − j)ω), largest at j = p − 1.

export const ROLES = ['previous token', 'first token', 'local window', 'same word'];

/** The role of head `head` in archetype mode. */
export function roleOf(head) { return ROLES[head % ROLES.length]; }

/** X for archetype mode: embeddings e (n × d/2) and positions pe (n × d/2) side by side. */
export function archetypeInput(embeddings, pe, n, d) {
  const half = d / 2, x = new Float32Array(n * d);
  for (let r = 0; r < n; r++) {
    x.set(embeddings.subarray(r * half, (r + 1) * half), r * d);
    x.set(pe.subarray(r * half, (r + 1) * half), r * d + half);
  }
  return x;
}

/** Weights (X·W layout, kvHeads = heads, with biases) for d_model d and h heads. */
export function archetypeWeights(d, h) {
  const dk = d / h, half = d / 2;
  const wq = new Float32Array(d * d), wk = new Float32Array(d * d), wv = new Float32Array(d * d);
  const wo = new Float32Array(d * d), bq = new Float32Array(d), bk = new Float32Array(d);
  const set = (w, row, col, value) => { w[row * d + col] = value; };
  const pairs = Math.max(1, Math.min(Math.floor(dk / 2), half / 2));
  const omega = (i) => 10000 ** (-(2 * i) / half);
  const sharp = Math.sqrt(dk);  // undoes the 1/√d_k score scale, so amplitudes below are logits

  for (let head = 0; head < h; head++) {
    const col = head * dk;
    const role = roleOf(head);
    for (let i = 0; i < pairs && 2 * i + 1 < dk; i++) {
      const s = half + 2 * i, c = s + 1;          // X columns of sin(pω_i), cos(pω_i)
      const qs = col + 2 * i, qc = qs + 1;        // this head's Q/K columns for the pair
      set(wk, s, qs, 1); set(wk, c, qc, 1);       // k_j = (sin jω, cos jω)
      if (role === 'previous token' || role === 'local window') {
        const shift = role === 'previous token' ? 1 : 0;
        const amp = (role === 'previous token' ? 12 : 2.5) / pairs * sharp;
        const cw = Math.cos(shift * omega(i)), sw = Math.sin(shift * omega(i));
        // q_p = amp · (sin((p − shift)ω), cos((p − shift)ω))
        set(wq, s, qs, amp * cw); set(wq, c, qs, -amp * sw);
        set(wq, s, qc, amp * sw); set(wq, c, qc, amp * cw);
      } else if (role === 'first token') {
        bq[qc] = (12 / pairs) * sharp;             // q = constant: Σ cos(jω) is largest at j = 0
      }
    }
    if (role === 'same word') {
      for (let k = 0; k < Math.min(dk, half); k++) {
        set(wq, k, col + k, 1.5 / Math.sqrt(dk) * sharp);  // q · k ≈ 1.5·|e|²/d_k for equal words
        set(wk, k, col + k, 1);
      }
    }
    // Every head passes the first d_k embedding columns through as its value.
    for (let k = 0; k < Math.min(dk, half); k++) set(wv, k, col + k, 1);
  }
  for (let k = 0; k < d; k++) set(wo, k, k, 1);
  return { wq, wk, wv, wo, bq, bk, bv: new Float32Array(d), bo: new Float32Array(d) };
}
