// The image view's work in the page's worker (your-model-worker.mjs): an image in, the model's
// view of it (the pixels it reads, every head over the patches, rollout, the classifier's top
// labels with and without switched-off heads) and the lens on the CLS stream out. Plain functions
// of a loaded model, so the tests run them in Node as the worker does.

/** Images the page refuses before the model sees them: fewer pixels a side than this. */
export const MIN_IMAGE_SIDE = 2;
/** …and more pixels than this (the library's limit: 2^26, 256 MB of RGBA), or a file larger than MAX_FILE_BYTES. */
export const MAX_IMAGE_PIXELS = 2 ** 26;
export const MAX_FILE_BYTES = 100e6;

/** The k largest logits as labels with softmax probabilities (over every label). */
export function topLabels(logits, labels, k = 5, from = 0, count = logits.length - from) {
  let max = -Infinity;
  for (let i = 0; i < count; i += 1) max = Math.max(max, logits[from + i]);
  let sum = 0;
  for (let i = 0; i < count; i += 1) sum += Math.exp(logits[from + i] - max);
  const order = Array.from({ length: count }, (_, i) => i).sort((a, b) => logits[from + b] - logits[from + a]).slice(0, k);
  return order.map((id) => ({ id, label: labels?.[id] ?? `LABEL_${id}`, logit: logits[from + id], probability: Math.exp(logits[from + id] - max) / sum }));
}

/**
 * The picture the model reads, as RGBA bytes (height × width × 4): its pixel values (3 × height ×
 * width) taken back through the processor's normalisation and rescaling.
 */
export function pixelsOf(pixelValues, height, width, processor) {
  const out = new Uint8ClampedArray(height * width * 4), plane = height * width;
  for (let c = 0; c < 3; c += 1) {
    const mean = processor?.mean?.[c] ?? 0, std = processor?.std?.[c] ?? 1, scale = processor?.rescale ?? 1;
    for (let i = 0; i < plane; i += 1) out[i * 4 + c] = Math.round((pixelValues[c * plane + i] * std + mean) / scale);
  }
  for (let i = 0; i < plane; i += 1) out[i * 4 + 3] = 255;
  return out;
}

/**
 * An image (a Blob, an ImageBitmap or ImageData's shape) → the model's input, or an Error whose
 * message says what is wrong with the picture (not an image, too small).
 */
export async function prepareImage(model, image) {
  let source = image;
  if (typeof Blob !== 'undefined' && image instanceof Blob) {
    if (image.size > MAX_FILE_BYTES) throw new Error(`“${image.name ?? 'this file'}” is ${(image.size / 1e6).toFixed(0)} MB: too large a picture for this page (at most ${MAX_FILE_BYTES / 1e6} MB)`);
    if (image.type && !image.type.startsWith('image/')) throw new Error(`“${image.name ?? 'this file'}” is not an image (${image.type}): pick a PNG, JPEG, WebP or GIF picture`);
    try {
      source = await createImageBitmap(image);
    } catch {
      throw new Error(`“${image.name ?? 'this file'}” could not be read as a picture: pick a PNG, JPEG, WebP or GIF file`);
    }
  }
  const { width, height } = source;
  if (width < MIN_IMAGE_SIDE || height < MIN_IMAGE_SIDE) {
    source.close?.();
    throw new Error(`the picture is ${width} × ${height} pixels: too small to show anything (at least ${MIN_IMAGE_SIDE} × ${MIN_IMAGE_SIDE}); pick a larger one`);
  }
  if (width * height > MAX_IMAGE_PIXELS) {
    source.close?.();
    throw new Error(`the picture is ${width} × ${height} pixels: more than ${MAX_IMAGE_PIXELS / 2 ** 20} million, too large to read here; make it smaller first`);
  }
  try {
    return await model.preprocess(source);
  } finally {
    if (source !== image) source.close?.();
  }
}

/**
 * One view of an image: { n, rows, cols, prefix (tokens before the patches: CLS…), attentions,
 * valueNorms, rollout, top (the classifier's top 5), after (top 5 with the heads in `off`
 * switched off), logitChange (of the top label when heads are off), pixels }.
 * The attentions shown are the run's with the heads switched off, when some are.
 */
export function imageRun(model, input, { off = [], rollout = false } = {}) {
  const { pixelValues, height, width } = input;
  const run = model.run(pixelValues, { height, width, valueNorms: true, rollout: rollout && off.length === 0 });
  const ablated = off.length ? model.run(pixelValues, { height, width, valueNorms: true, disabledHeads: off, rollout }) : null;
  const { rows, cols } = run.patchGrid;
  const labels = model.config.labels;
  const shown = ablated ?? run;
  const top = run.logits ? topLabels(run.logits, labels) : null;
  return {
    n: run.n ?? 1 + rows * cols, rows, cols, prefix: (run.n ?? 1 + rows * cols) - rows * cols, height, width,
    attentions: shown.attentions, valueNorms: shown.valueNorms, rollout: shown.rollout ?? null,
    top, after: ablated?.logits ? topLabels(ablated.logits, labels) : null,
    logitChange: ablated?.logits ? ablated.logits[top[0].id] - run.logits[top[0].id] : null,
  };
}

/**
 * The lens on the CLS stream: the classifier (with the final norm before it) applied to the CLS
 * token's stream after the embeddings and after each layer. Each stream goes in through the last
 * layer's output (blocks.{L−1}.hook_resid_post), which the final norm reads, so one run a layer.
 * DeiT with its teacher's head reads the distillation row too: both rows go in together.
 * → { streams: [{ top (5 labels), final (the probability of the model's own top label) }] }.
 */
export function clsLens(model, input, { off = [] } = {}) {
  const { pixelValues, height, width } = input;
  const { layers, dModel, labels, distillationHead } = model.config;
  const rows = distillationHead ? 2 : 1;
  const base = { height, width, attentions: false, disabledHeads: off };
  const full = model.run(pixelValues, { ...base, hiddenStates: true });
  const best = topLabels(full.logits, labels, 1)[0].id;
  const n = full.hiddenStates.length / ((layers + 1) * dModel);
  const last = `blocks.${layers - 1}.hook_resid_post`;
  const streams = [];
  for (let l = 0; l <= layers; l += 1) {
    const logits = l === layers ? full.logits : model.run(pixelValues, { ...base, intervene: {
      [last]: { positions: rows === 2 ? [0, 1] : [0], values: full.hiddenStates.subarray(l * n * dModel, l * n * dModel + rows * dModel) } } }).logits;
    streams.push({ top: topLabels(logits, labels), final: topLabels(logits, labels, labels?.length ?? logits.length).find((t) => t.id === best).probability });
  }
  return { streams, best: { id: best, label: labels?.[best] ?? `LABEL_${best}` } };
}
