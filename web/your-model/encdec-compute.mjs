// The encoder-decoder view's work in the page's worker (your-model-worker.mjs): a source and a
// target text in, the teacher-forced run's three kinds of attention out (encoder self-, decoder
// self- and cross-attention), and greedy generation's tokens with each one's cross-attention row.
// Plain functions of a loaded EncoderDecoderModel (T5, BART, Marian), so the tests can run them
// in Node as the worker does. encdec-view.mjs draws what they give.

/** The three views of an encoder-decoder, as the page's URL names them. */
export const ENCDEC_KINDS = ['cross', 'encoder', 'decoder'];
/** The most new tokens one generation on the page makes. */
export const MAX_NEW_TOKENS = 500;

const looksSpecial = (token) => /^<[^<>\s]+>$|^\[[A-Z]+\]$/.test(token);

// One side's tokens as the page shows them: the piece of the text each covers, else the token.
function tokensOf(text, enc) {
  return Array.from(enc.ids, (id, i) => {
    const token = enc.tokens[i], [s, e] = enc.offsets[i] ?? [0, 0];
    const special = s === e && looksSpecial(token);
    return { id, token, text: special ? token : text.slice(s, e) || token, special };
  });
}

// A checkpoint without tokenizer files: the text is token ids separated by spaces or commas.
function idsTyped(text) {
  const ids = text.split(/[\s,]+/).filter(Boolean).map(Number);
  if (ids.some((id) => !Number.isInteger(id))) throw new Error('this checkpoint has no tokenizer files: type token ids (numbers) separated by spaces');
  return { ids: Int32Array.from(ids), tokens: ids.map(String), offsets: ids.map(() => [0, 0]) };
}

/** The source text → { ids, tokens (as tokensOf shows them) }. */
export function encodeSource(model, text) {
  const enc = model.tokenizer ? model.tokenize(text) : idsTyped(text);
  if (enc.ids.length === 0) throw new Error('type a source text first');
  return { ids: enc.ids, tokens: tokensOf(text, enc) };
}

/** The target text → { ids, tokens }: the tokens the decoder is taught to produce (</s> appended). */
export function encodeTarget(model, text) {
  const enc = model.tokenizer ? model.tokenizeTarget(text) : idsTyped(text);
  return { ids: enc.ids, tokens: tokensOf(text, enc) };
}

/** A target token id's label: its text as the target tokenizer decodes it, else its token. */
export function targetLabel(model, id, text = null) {
  const tokenizer = model.tokenizer?.target ?? model.tokenizer;
  const token = tokenizer?.token?.(id) ?? `#${id}`;
  const special = looksSpecial(token) || (model.config.eosTokenIds.includes(id) && !text);
  return { id, token, text: special ? token : text || token, special };
}

/**
 * The teacher-forced run: the decoder reads the target shifted right behind the decoder start
 * token, so row i of the decoder's attentions is the step that produces target token i.
 * → { n, m, source (tokens), target (tokens: the rows), inputs (the decoder's input tokens),
 *     encoder (layers × heads × n × n), decoder (decoderLayers × heads × m × m),
 *     cross (decoderLayers × heads × m × n) }.
 */
export function encdecRun(model, source, target) {
  if (target.ids.length === 0) throw new Error('the target has no tokens: type a target, or press Generate');
  const start = model.config.decoderStartTokenId ?? 0;
  const decoderInputIds = Int32Array.from([start, ...Array.from(target.ids).slice(0, -1)]);
  const run = model.run(source.ids, { decoderInputIds });
  const inputs = [targetLabel(model, start), ...target.tokens.slice(0, -1)];
  return { n: source.ids.length, m: target.ids.length, source: source.tokens, target: target.tokens, inputs,
    encoder: run.encoderAttentions, decoder: run.decoderAttentions, cross: run.crossAttentions };
}

/**
 * Greedy generation from the source: onToken({ id, label, crossAttention }) for each new token as
 * it comes (crossAttention: decoderLayers × heads × n), awaited before the next (the page's worker
 * waits there until the page has drawn it). Aborting `signal` stops it between two tokens
 * (→ stopped: true). → { ids, labels, stopped }.
 */
export async function encdecGenerate(model, source, { maxNewTokens, minNewTokens, signal, onToken }) {
  const ids = [], labels = [];
  let stopped = false;
  try {
    for await (const step of model.generate(source.ids, { maxNewTokens, minNewTokens, signal })) {
      const label = targetLabel(model, step.id, step.text);
      ids.push(step.id);
      labels.push(label);
      await onToken({ id: step.id, label, crossAttention: step.crossAttention });
    }
  } catch (error) {
    if (error?.name !== 'AbortError') throw error;
    stopped = true;
  }
  return { ids, labels, stopped };
}

/** The mean over heads (of one layer, or of every layer: layer = -1) of attentions layers × heads × rows × cols. */
export function meanOverHeads(attentions, layers, heads, size, layer) {
  const from = layer < 0 ? 0 : layer, to = layer < 0 ? layers : layer + 1, count = (to - from) * heads;
  const out = new Float32Array(size);
  for (let l = from; l < to; l += 1) {
    for (let h = 0; h < heads; h += 1) {
      const at = (l * heads + h) * size;
      for (let i = 0; i < size; i += 1) out[i] += attentions[at + i];
    }
  }
  for (let i = 0; i < size; i += 1) out[i] /= count;
  return out;
}

/** Each row's largest column: [{ col, weight }] per row of a rows × cols matrix. */
export function rowArgmax(weights, rows, cols) {
  return Array.from({ length: rows }, (_, i) => {
    let col = 0;
    for (let j = 1; j < cols; j += 1) if (weights[i * cols + j] > weights[i * cols + col]) col = j;
    return { col, weight: weights[i * cols + col] };
  });
}
