// "Why this prediction" in the page's worker (your-model-worker.mjs): the logit lens, head
// attribution, token contributions and activation patching of the loaded model, as messages the
// view (why-view.mjs) draws. Labels are the tokens' text, so the page needs no tokenizer of its own.

// A token id from what the user typed: an id (a number, "#123"), a vocabulary entry as it is
// spelt, or a text the tokenizer makes one token of (with a leading space first, as a word inside a
// sentence is). Anything else is refused with what it is, never replaced by a token of it.
export function tokenFrom(model, text) {
  const t = String(text ?? '').trim() === '' ? '' : String(text);
  if (!t) return null;
  const vocab = model.config.vocabSize;
  if (/^#?\d+$/.test(t.trim())) {
    const id = Number(t.trim().replace('#', ''));
    if (id < vocab && (!model.tokenizer || model.tokenizer.token(id) !== undefined)) return id;
    if (!model.tokenizer) throw new Error(`token id ${id} is past the vocabulary (0 … ${vocab - 1})`);
  }
  if (!model.tokenizer) throw new Error('this checkpoint has no tokenizer: give the target as a token id (a number)');
  const exact = model.tokenizer.id(t);
  if (exact != null && exact < vocab) return exact;
  let shortest = null;
  for (const candidate of [` ${t.trim()}`, t.trim()]) {
    const enc = model.tokenizer.encode(candidate, undefined, { addSpecialTokens: false });
    if (enc.ids.length === 1 && enc.ids[0] < vocab) return enc.ids[0];
    if (!shortest || enc.ids.length < shortest.ids.length) shortest = enc;
  }
  if (/^#?\d+$/.test(t.trim())) throw new Error(`token id ${t.trim().replace('#', '')} is past the vocabulary (0 … ${vocab - 1})`);
  const pieces = Array.from(shortest.ids, (id, i) => `“${model.tokenizer.decode([id], { skipSpecialTokens: false }) || shortest.tokens[i]}”`);
  throw new Error(`“${t.trim()}” is ${shortest.ids.length} tokens for this model (${pieces.join(' + ')}), not one: give a word that is one token, a vocabulary entry or a token id`);
}

// The lens grid's width: the last positions up to the one shown, as many as fit a screen (24) and
// a budget of the output head's work, streams × positions × vocabulary × d multiply-adds (what it
// costs: docs/performance.md): GPT-2 small gets 24 positions, a 150k-word vocabulary over 24 layers 4. An
// encoder's lens reads its masked positions, where its MLM head predicts, when the text has some.
const LENS_POSITIONS = 24, LENS_BUDGET = 1.5e10;

/** An encoder's [MASK] / <mask> positions in the text (none for a decoder). */
export function maskPositions(model, enc) {
  return model.config.causal ? [] : enc.tokens.map((t, i) => (/mask/i.test(t) && !enc.special[i] ? i : -1)).filter((i) => i >= 0);
}

/** The lens grid (streams × the last positions up to `at`), top 5 in each cell, the target's rank. */
export function lens(model, enc, at, target, label) {
  const { layers, vocabSize, dModel } = model.config;
  const width = Math.max(1, Math.min(LENS_POSITIONS, Math.floor(LENS_BUDGET / ((layers + 1) * vocabSize * dModel))));
  const first = Math.max(0, at - width + 1);
  const masks = maskPositions(model, enc);
  const positions = masks.length ? masks.slice(0, width) : Array.from({ length: at - first + 1 }, (_, i) => first + i);
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

// Names to put in place of a repeated one when the text's own names change its token count.
const NAMES = ['John', 'Mary', 'Tom', 'Anna', 'James', 'Sarah', 'Paul', 'Emma', 'Mark', 'Lucy', 'David', 'Alice', 'Bob', 'Kate'];
const TITLES = new Set(['Mr', 'Mrs', 'Ms', 'Miss', 'Dr', 'Sir', 'Lady', 'Lord']);

/**
 * IOI-style corruptions of a text, most natural first: the last occurrence of its repeated
 * capitalised word (a name: not the text's first word or a title; else its last such word) becomes
 * another name of the text, then a common name.
 */
export function corruptionCandidates(text) {
  const words = [...text.matchAll(/\b[A-Z][a-z]+\b/g)].filter((m) => m.index > 0 && !TITLES.has(m[0])).map((m) => m[0]);
  const name = words.find((w, i) => words.indexOf(w) !== i) ?? words.at(-1);
  if (!name) return [];
  const at = text.lastIndexOf(name);
  const others = [...new Set([...words, ...NAMES])].filter((w) => w !== name);
  return others.map((other) => text.slice(0, at) + other + text.slice(at + name.length));
}

/**
 * The first corruption of text with as many tokens as the text itself (countTokens: the loaded
 * tokenizer's), as patching position by position needs: { corrupt } or { corrupt: null, reason }.
 */
export function corruptionFor(text, countTokens) {
  const candidates = corruptionCandidates(text);
  if (!candidates.length) return { corrupt: null, reason: 'the text has no name to swap (a capitalised word after the first): type a corrupted prompt' };
  const n = countTokens(text);
  const corrupt = candidates.find((c) => countTokens(c) === n);
  if (corrupt) return { corrupt };
  return { corrupt: null, reason: `no name swap keeps the text's ${n} tokens for this tokenizer (${candidates.length} tried): type a corrupted prompt with as many tokens` };
}
