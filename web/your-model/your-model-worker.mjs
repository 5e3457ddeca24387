// The "Your model" page's worker: it owns the loaded checkpoint, so typing never waits on a
// forward pass. Messages in (one at a time; the page sends the newest input only when the worker
// is free, so stale inputs are skipped there):
//   { type: 'load', files: File[] | Blob map, name, weightType? } → 'progress'…, then 'loaded' or 'error'
//   { type: 'view', seq, text, pair, pos, off, rollout } → 'view' (tokens, every head, predictions)
//   { type: 'roles' }                                    → 'rolesProgress'…, then 'roles'
//   { type: 'generate', seq, text, pair, options }       → 'token'…, then 'generated'
//   { type: 'stop' }                                     stops a generation between two tokens
//   { type: 'why', seq, panel, text, pair, pos, target, contrast } → 'why' (lens, attribution or contributions)
//   { type: 'patch', seq, text, corrupt, what, pos, target, contrast } → 'patchProgress'…, then 'patched'
//   { type: 'cancelPatch' }                              cancels a patching between two runs
//   { type: 'corruption', seq, text }                   → 'corruption' (a corrupted prompt of as many tokens, or why none)
// Image models (image-compute.mjs; image-view.mjs draws them):
//   { type: 'image', seq, key, image?, off, rollout }  → 'image' (the pixels read, every head, top labels)
//   { type: 'imageLens', seq, key, off }                → 'imageLens' (the classifier after each layer)
// image: a Blob or ImageBitmap, sent when the picture changes; key names it, and later requests
// with the same key reuse its pixel values.
// Encoder-decoders (encdec-compute.mjs; encdec-view.mjs draws them):
//   { type: 'encdec', seq, text, output }              → 'encdec' (both sides' tokens, the three kinds of attention)
//   { type: 'encdecGenerate', seq, text, options }     → 'encdecToken'…, then 'encdecGenerated' and an 'encdec'
//                                                        of the generated target; 'stop' aborts it (signal)
//   { type: 'encdecDrawn' }                            the page drew the last 'encdecToken': the next may come
// A patching runs in a context of its own (model.patch), beside the others: views and the why
// panels are answered between its runs, so typing does not wait for it. A load cancels it.
import { loadMultihead, loadPretrained, runtimeInfo } from '../../bindings/multihead.mjs';
import { measureHeadRoles } from './your-model-roles.mjs';
import { attribution, contributions, corruptionFor, lens, maskPositions, tokenFrom } from './why-compute.mjs';
import { clsLens, imageRun, pixelsOf, prepareImage } from './image-compute.mjs';
import { encdecGenerate, encdecRun, encodeSource, encodeTarget } from './encdec-compute.mjs';

let model = null;
let stopRequested = false;
let patching = null;  // the AbortController of the patching under way
let busy = Promise.resolve();
let picture = null;  // { key, input }: the image model's current picture, preprocessed
let generation = null;  // the AbortController of an encoder-decoder's generation under way
let drawn = null;  // resolves when the page has drawn the generation's last token (or it stops)

// Every reply carries the model number of the request it answers, so that the page can drop the
// replies meant for a model it has since replaced.
let modelNumber = 0;
const post = (message, transfer = []) => self.postMessage({ ...message, modelNumber }, transfer);

// Tokens as the page shows them: the piece of the text each one covers (byte-level pieces become
// readable text), or the token itself for special tokens.
// Offsets of the second text of a pair (token type 1) point into the pair.
function tokensOf(text, pair, enc) {
  return enc.tokens.map((token, i) => {
    const [s, e] = enc.offsets[i];
    const source = enc.tokenTypeIds[i] === 1 ? pair : text;
    const piece = enc.special[i] ? token : source.slice(s, e);
    return { token, text: piece || token, special: enc.special[i], type: enc.tokenTypeIds[i], id: enc.ids[i] };
  });
}

function softmaxTop(logits, vocab, row, k) {
  const from = row * vocab;
  let max = -Infinity;
  for (let v = 0; v < vocab; v += 1) max = Math.max(max, logits[from + v]);
  let sum = 0;
  for (let v = 0; v < vocab; v += 1) sum += Math.exp(logits[from + v] - max);
  const best = [];
  for (let v = 0; v < vocab; v += 1) {
    const logit = logits[from + v];
    if (best.length < k || logit > best[best.length - 1].logit) {
      best.push({ id: v, logit });
      best.sort((a, b) => b.logit - a.logit);
      if (best.length > k) best.pop();
    }
  }
  return best.map((b) => ({ ...b, probability: Math.exp(b.logit - max) / sum, token: label(b.id) }));
}

// A token's text for a prediction list: padding ids past the tokenizer's vocabulary have none.
function label(id) {
  if (!model.tokenizer) return `#${id}`;
  if (model.tokenizer.token(id) === undefined) return `[id ${id}: no token]`;
  return model.tokenizer.decode([id], { skipSpecialTokens: false }) || model.tokenizer.token(id);
}

function encode(text, pair) {
  if (!model.tokenizer) {
    // A checkpoint without tokenizer files: the text is token ids separated by spaces or commas.
    const ids = text.split(/[\s,]+/).filter(Boolean).map(Number);
    if (ids.some((id) => !Number.isInteger(id))) throw new Error('this checkpoint has no tokenizer files: type token ids (numbers) separated by spaces');
    return { ids: Int32Array.from(ids), tokenTypeIds: new Int32Array(ids.length), tokens: ids.map(String),
      offsets: ids.map(() => [0, 0]), special: ids.map(() => false) };
  }
  return model.tokenize(text, model.config.causal ? undefined : (pair || undefined));
}

async function view({ seq, text, pair, pos, off, rollout }) {
  const started = performance.now();
  const full = encode(text, pair);
  const limit = Math.min(model.config.maxPositions, 1024);
  const n = Math.min(full.ids.length, limit);
  const messages = [];
  if (full.ids.length > limit) {
    messages.push(`The text has ${full.ids.length} tokens; ${n === model.config.maxPositions ? 'the model reads' : 'this page shows'} at most ${limit}, so the rest is left out.`);
  }
  if (n === 0) return post({ type: 'view', seq, empty: true, messages });
  const cut = (a) => a.slice(0, n);
  const enc = { ids: cut(full.ids), tokenTypeIds: cut(full.tokenTypeIds), tokens: cut(full.tokens), offsets: cut(full.offsets), special: cut(full.special) };
  // Logits only for the rows shown: after token `at` (causal), or at each [MASK] (BERT; else `at`).
  const at = pos < 0 || pos >= n ? n - 1 : pos;
  const masks = maskPositions(model, enc);
  const rows = masks.length ? masks : [at];
  // While the user types at the end, only the tokens after the unchanged start are computed
  // (reusePrefix: causal models; the earlier rows of every head cannot change).
  const run = model.run(enc.ids, { tokenTypeIds: enc.tokenTypeIds, valueNorms: true, logits: rows, rollout: !!rollout && off.length === 0, reusePrefix: true });
  const ablated = off.length ? model.run(enc.ids, { tokenTypeIds: enc.tokenTypeIds, disabledHeads: off, logits: rows, rollout: !!rollout }) : null;
  const forwardMs = performance.now() - started;
  const vocab = model.config.vocabSize;
  const predictions = [];
  if (run.logits) {
    rows.forEach((row, i) => {  // logits row i is token `row`
      const before = softmaxTop(run.logits, vocab, i, 8);
      const entry = { row, before };
      if (ablated) {
        entry.after = softmaxTop(ablated.logits, vocab, i, 8);
        const top = before[0].id;
        entry.logitChange = ablated.logits[i * vocab + top] - run.logits[i * vocab + top];
        entry.topToken = before[0].token;
      }
      predictions.push(entry);
    });
  }
  const shown = ablated ?? run;
  const result = {
    type: 'view', seq, n, messages, forwardMs, reused: run.reusedTokens ?? 0, total: full.ids.length,
    tokens: tokensOf(text, pair, enc), attentions: shown.attentions, valueNorms: shown.valueNorms ?? run.valueNorms,
    rollout: shown.rollout ?? null, predictions, ablated: !!ablated,
  };
  post(result, [result.attentions.buffer]);
}

async function generate({ seq, text, pair, options }) {
  stopRequested = false;
  const enc = encode(text, pair);
  if (enc.ids.length === 0) throw new Error('type a prompt first');
  let count = 0;
  for await (const step of model.generate(enc.ids, options)) {
    count += 1;
    post({ type: 'token', seq, id: step.id, text: step.text, position: step.position, attentions: step.attentions, shape: step.attentionShape },
      [step.attentions.buffer]);
    if (stopRequested) break;
  }
  post({ type: 'generated', seq, count, stopped: stopRequested });
}

const pick = (object, ...keys) => Object.fromEntries(keys.map((k) => [k, object[k]]));

// The tokens of a text as the view shows them, cut at what the page reads (view() says why).
function encodeShown(text, pair) {
  const full = encode(text, pair);
  const n = Math.min(full.ids.length, Math.min(model.config.maxPositions, 1024));
  if (n === 0) throw new Error('type a text first');
  const cut = (a) => a.slice(0, n);
  return { ids: cut(full.ids), tokenTypeIds: cut(full.tokenTypeIds), tokens: cut(full.tokens), offsets: cut(full.offsets), special: cut(full.special) };
}

function why({ seq, panel, text, pair, pos, target, contrast }) {
  const enc = encodeShown(text, pair);
  const at = pos < 0 || pos >= enc.ids.length ? enc.ids.length - 1 : pos;
  const tokens = tokensOf(text, pair, enc);
  const t = tokenFrom(model, target), c = tokenFrom(model, contrast);
  const data = panel === 'lens' ? lens(model, enc, at, t, label)
    : panel === 'attribution' ? attribution(model, enc, at, t, c, label) : contributions(model, enc);
  post({ type: 'why', seq, panel, at, tokens, data });
}

async function patch({ seq, text, corrupt, what, target, contrast }) {
  const clean = encodeShown(text), bad = encodeShown(corrupt);
  if (clean.ids.length !== bad.ids.length) {
    throw new Error(`the two prompts must have the same number of tokens to be patched position by position: ${clean.ids.length} and ${bad.ids.length}`);
  }
  let t = tokenFrom(model, target);
  if (t == null) {  // the clean prompt's top prediction
    const logits = model.run(clean.ids, { attentions: false, logits: [clean.ids.length - 1] }).logits;
    t = 0;  // a loop: a 150k-word vocabulary is past a call's arguments
    for (let v = 1; v < logits.length; v += 1) if (logits[v] > logits[t]) t = v;
  }
  const controller = new AbortController();
  patching?.abort();
  patching = controller;
  const mine = modelNumber;  // replies go to this model's page, whatever loads meanwhile
  const reply = (message) => self.postMessage({ ...message, modelNumber: mine });
  try {
    const result = await model.patch(clean.ids, bad.ids, {
      target: t, contrast: tokenFrom(model, contrast), what, signal: controller.signal,
      onProgress: ({ done, total, recovered }) => reply({ type: 'patchProgress', seq, done, total, recovered: recovered.slice() }),
    });
    reply({ type: 'patched', seq, ...result, targetLabel: label(t), tokens: tokensOf(text, '', clean) });
  } catch (error) {
    reply({ type: 'error', for: 'patch', seq, message: String(error?.message ?? error) });
  } finally {
    if (patching === controller) patching = null;
  }
}

// The image view: a new picture is preprocessed once (a refused one keeps the previous picture),
// then each request runs the model over it.
async function image({ type, seq, key, image: source, off, rollout }) {
  if (source) picture = { key, input: await prepareImage(model, source) };
  if (!picture || picture.key !== key) throw new Error('pick a picture first');
  const { input } = picture;
  if (type === 'imageLens') {
    post({ type: 'imageLens', seq, key, ...clsLens(model, input, { off }) });
    return;
  }
  const started = performance.now();
  const result = imageRun(model, input, { off, rollout });
  const forwardMs = performance.now() - started;
  const pixels = pixelsOf(input.pixelValues, input.height, input.width, model.imageProcessor);
  post({ type: 'image', seq, key, forwardMs, ablated: off.length > 0, ...result, pixels }, [result.attentions.buffer, pixels.buffer]);
}

// An encoder-decoder: the teacher-forced view of a source and a target, and generation, whose
// tokens are posted as they come and whose target is then shown as a view of its own ids.
function encdecView(seq, source, target, extra = {}) {
  const started = performance.now();
  const result = encdecRun(model, source, target);
  const out = { type: 'encdec', seq, forwardMs: performance.now() - started, ...result, ...extra };
  post(out, [out.encoder.buffer, out.decoder.buffer, out.cross.buffer]);
}

async function encdecGenerateView({ seq, text, options }) {
  const source = encodeSource(model, text);
  const controller = generation = new AbortController();
  try {
    // Each token waits until the page has drawn the one before ('encdecDrawn'): a small model makes
    // tokens faster than a page draws them, and a page flooded with them answers nothing else.
    const { ids, labels, stopped } = await encdecGenerate(model, source, { ...options, signal: controller.signal,
      onToken: ({ id, label, crossAttention }) => new Promise((resolve) => {
        drawn = resolve;
        post({ type: 'encdecToken', seq, id, label, crossAttention }, [crossAttention.buffer]);
      }) });
    const output = model.tokenizer ? model.decode(ids) : ids.join(' ');
    post({ type: 'encdecGenerated', seq, count: ids.length, stopped, output });
    if (ids.length) encdecView(seq, source, { ids: Int32Array.from(ids), tokens: labels }, { generated: true, output });
  } finally {
    if (generation === controller) generation = null;
  }
}

async function handle(message) {
  modelNumber = message.modelNumber ?? 0;
  try {
    if (message.type === 'load') {
      patching?.abort();
      generation?.abort();
      model?.dispose();
      model = null;
      const started = performance.now();
      await loadMultihead({ threads: 'auto' });
      model = await loadPretrained(message.files, { weightType: message.weightType, onProgress: (p) => post({ type: 'progress', ...p }) });
      picture = null;
      if (model.config.imageSize > 0) {
        post({ type: 'loaded', config: { ...model.config }, hasTokenizer: false, special: {}, image: { patchGrid: model.patchGrid, hasProcessor: !!model.imageProcessor },
          loadMs: performance.now() - started, ...pick(await runtimeInfo(), 'threads', 'oneThreadReason') });
        return;
      }
      if (model.config.encoderDecoder) {  // a source and a target: encdec-view.mjs
        post({ type: 'loaded', config: { ...model.config }, hasTokenizer: !!model.tokenizer, special: {}, encdec: true,
          loadMs: performance.now() - started, ...pick(await runtimeInfo(), 'threads', 'oneThreadReason') });
        return;
      }
      // The mask token's text, as this tokenizer spells it: BERT's [MASK], RoBERTa's <mask>.
      const maskToken = ['[MASK]', '<mask>'].find((t) => model.tokenizer?.id(t) != null) ?? null;
      const special = { mask: maskToken && model.tokenizer.id(maskToken), maskToken };
      post({ type: 'loaded', config: { ...model.config }, hasTokenizer: !!model.tokenizer, special,
        loadMs: performance.now() - started, ...pick(await runtimeInfo(), 'threads', 'oneThreadReason') });
    } else if (!model) {
      throw new Error('no model is loaded');
    } else if (message.type === 'view') {
      await view(message);
    } else if (message.type === 'roles') {
      const heads = await measureHeadRoles(model, (done, total) => post({ type: 'rolesProgress', done, total }));
      post({ type: 'roles', heads });
    } else if (message.type === 'generate') {
      await generate(message);
    } else if (message.type === 'why') {
      why(message);
    } else if (message.type === 'corruption') {
      const { corrupt, reason } = corruptionFor(message.text, (t) => encode(t, '').ids.length);
      post({ type: 'corruption', seq: message.seq, text: message.text, corrupt, reason });
    } else if (message.type === 'patch') {
      await patch(message);
    } else if (message.type === 'image' || message.type === 'imageLens') {
      await image(message);
    } else if (message.type === 'encdec') {
      encdecView(message.seq, encodeSource(model, message.text), encodeTarget(model, message.output));
    } else if (message.type === 'encdecGenerate') {
      await encdecGenerateView(message);
    }
  } catch (error) {
    post({ type: 'error', for: message.type, seq: message.seq, message: String(error?.message ?? error) });
  }
}

self.onmessage = ({ data }) => {
  if (data.type === 'encdecDrawn') { drawn?.(); drawn = null; return; }
  // A stop, or another model, ends a generation at once (it may be waiting on the page to draw).
  if (data.type === 'stop' || data.type === 'load') { generation?.abort(); drawn?.(); drawn = null; }
  if (data.type === 'stop') { stopRequested = true; return; }
  if (data.type === 'cancelPatch') { patching?.abort(); return; }
  // A patching's request is checked and started in turn, then goes on beside the next ones.
  if (data.type === 'patch') {
    busy = busy.then(() => { handle(data); });
    return;
  }
  busy = busy.then(() => handle(data));
};
