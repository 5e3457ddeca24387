// Head roles, measured on the loaded model (not assumed): each head's mean attention on random
// tokens from the model's own vocabulary, repeated once (r₁ … r_T r₁ … r_T), the standard probe
// for induction heads (Olsson et al. 2022):
//   previous token   query i → key i − 1
//   first / BOS      query i → key 0 (the BOS / [CLS] token where the tokenizer adds one)
//   duplicate token  query in the second copy → the same token in the first copy
//   induction        query in the second copy → the token after its first occurrence
// A head gets the role whose score is highest when that score reaches ROLE_THRESHOLD.
export const ROLES = ['previous token', 'first / BOS', 'duplicate token', 'induction'];
export const ROLE_THRESHOLD = 0.3;
const SEQUENCES = 4;

// SplitMix32-style generator: the same probe tokens for the same model on every visit.
function random(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 2 ** 32;
  };
}

/** Scores and roles of every head: [{ layer, head, scores: { [role]: mean weight }, role }]. */
export async function measureHeadRoles(model, onProgress = () => {}) {
  const { layers, heads, vocabSize, maxPositions } = model.config;
  const special = new Set();
  let prefix = [];
  if (model.tokenizer) {
    const enc = model.tokenizer.encode('a');
    enc.ids.forEach((id, i) => { if (enc.special[i]) special.add(id); });
    if (enc.special[0]) prefix = [enc.ids[0]];  // BOS / [CLS]
    for (let id = 0; id < vocabSize; id += 1) if (model.tokenizer.special.has(id)) special.add(id);
  }
  const T = Math.max(2, Math.min(24, Math.floor((maxPositions - prefix.length) / 2)));
  const rng = random(vocabSize * 31 + layers);
  const sums = Array.from({ length: layers * heads }, () => [0, 0, 0, 0]);
  for (let s = 0; s < SEQUENCES; s += 1) {
    const first = [];
    while (first.length < T) {
      const id = Math.floor(rng() * vocabSize);
      if (!special.has(id) && !first.includes(id)) first.push(id);
    }
    const ids = Int32Array.from([...prefix, ...first, ...first]);
    const n = ids.length, p = prefix.length;
    const { attentions } = model.run(ids, { logits: false });
    for (let h = 0; h < layers * heads; h += 1) {
      const a = (i, j) => attentions[(h * n + i) * n + j];
      let previous = 0, bos = 0, duplicate = 0, induction = 0;
      for (let i = 1; i < n; i += 1) { previous += a(i, i - 1); bos += a(i, 0); }
      for (let k = 0; k < T - 1; k += 1) {
        const i = p + T + k;  // the second copy of token k
        duplicate += a(i, p + k);
        induction += a(i, p + k + 1);
      }
      const sum = sums[h];
      sum[0] += previous / (n - 1);
      sum[1] += bos / (n - 1);
      sum[2] += duplicate / (T - 1);
      sum[3] += induction / (T - 1);
    }
    onProgress(s + 1, SEQUENCES);
    await new Promise((resolve) => setTimeout(resolve, 0));  // let the page's messages through
  }
  return sums.map((sum, h) => {
    const scores = Object.fromEntries(ROLES.map((role, r) => [role, sum[r] / SEQUENCES]));
    const best = ROLES.reduce((a, b) => (scores[b] > scores[a] ? b : a));
    return { layer: Math.floor(h / heads), head: h % heads, scores, role: scores[best] >= ROLE_THRESHOLD ? best : 'no clear role' };
  });
}
