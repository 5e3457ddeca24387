// Per-head statistics of attention weights A (h × nQ × nK, rows summing to 1 or all 0).

/** Mean entropy of a head's rows in nats, and "focus" = 1 − entropy / ln(nK) (1 = one key). */
export function headEntropy(attention, head, nQ, nK) {
  let total = 0, rows = 0;
  for (let i = 0; i < nQ; i++) {
    const row = attention.subarray((head * nQ + i) * nK, (head * nQ + i + 1) * nK);
    let h = 0, mass = 0;
    for (const a of row) { if (a > 0) h -= a * Math.log(a); mass += a; }
    if (mass > 0) { total += h; rows++; }
  }
  const entropy = rows ? total / rows : 0;
  return { entropy, focus: nK > 1 ? 1 - entropy / Math.log(nK) : 1 };
}

/** For each query, the key with the largest weight: [{ key, weight }] (key −1 if none). */
export function mostAttended(attention, head, nQ, nK) {
  const out = [];
  for (let i = 0; i < nQ; i++) {
    let best = -1, weight = 0;
    for (let j = 0; j < nK; j++) {
      const a = attention[(head * nQ + i) * nK + j];
      if (a > weight) { weight = a; best = j; }
    }
    out.push({ key: best, weight });
  }
  return out;
}

function klTerm(p, m) { return p > 0 ? p * Math.log(p / m) : 0; }

/** Mean Jensen–Shannon divergence (nats, at most ln 2) over all head pairs and query rows. */
export function meanJensenShannon(attention, heads, nQ, nK) {
  if (heads < 2) return 0;
  let total = 0, count = 0;
  for (let a = 0; a < heads; a++) for (let b = a + 1; b < heads; b++) {
    for (let i = 0; i < nQ; i++) {
      let js = 0;
      for (let j = 0; j < nK; j++) {
        const p = attention[(a * nQ + i) * nK + j], q = attention[(b * nQ + i) * nK + j];
        const m = (p + q) / 2;
        js += 0.5 * klTerm(p, m) + 0.5 * klTerm(q, m);
      }
      total += js; count++;
    }
  }
  return total / count;
}
