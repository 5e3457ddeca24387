// "Why this prediction" in the page's worker (your-model-worker.mjs): the logit lens, head
// attribution, token contributions and activation patching of the loaded model, as messages the
// view (why-view.mjs) draws. Labels are the tokens' text, so the page needs no tokenizer of its own.

// A token id from what the user typed: a vocabulary entry as it is spelt, else the first token
// of the text (with and without a leading space, as a word inside a sentence is), else a number.
export function tokenFrom(model, text) {
  const t = String(text ?? '').trim() === '' ? '' : String(text);
  if (!t) return null;
  if (/^#?\d+$/.test(t.trim())) {
    const id = Number(t.trim().replace('#', ''));
    if (id < model.config.vocabSize) return id;
  }
  if (!model.tokenizer) throw new Error('this checkpoint has no tokenizer: give the target as a token id (a number)');
  const exact = model.tokenizer.id(t);
  if (exact != null) return exact;
  for (const candidate of [` ${t.trim()}`, t.trim()]) {
    const enc = model.tokenizer.encode(candidate);
    const first = enc.ids.find((_, i) => !enc.special[i]);
    if (first !== undefined) return first;
  }
  throw new Error(`“${t}” is no token of this model`);
}

const LENS_POSITIONS = 24;  // the last positions up to the one shown: a grid that fits a screen

/** The lens grid (streams × the last positions up to `at`), top 5 in each cell, the target's rank. */
export function lens(model, enc, at, target, label) {
  const first = Math.max(0, at - LENS_POSITIONS + 1);
  const positions = Array.from({ length: at - first + 1 }, (_, i) => first + i);
  const r = model.logitLens(enc.ids, { topK: 5, positions, targets: target == null ? [] : [target], tokenTypeIds: enc.tokenTypeIds });
  return {
    shape: r.shape, positions, labels: Array.from(r.ids, label), probabilities: r.probabilities,
    target: target == null ? null : { id: target, label: label(target), probabilities: r.targets.probabilities, ranks: r.targets.ranks },
  };
}

/** Head attribution at `at` for target (default: the top prediction) against contrast. */
export function attribution(model, enc, at, target, contrast, label) {
  const a = model.attribute(enc.ids, { position: at, target: target ?? undefined, contrast });
  return { ...a, targetLabel: label(a.target), contrastLabel: contrast == null ? null : label(contrast) };
}

/** Token contributions, every layer (n × n each). */
export function contributions(model, enc) {
  return model.contributions(enc.ids, { tokenTypeIds: enc.tokenTypeIds });
}
