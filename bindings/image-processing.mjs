// Image preprocessing as transformers' ViTImageProcessor and BitImageProcessor do it, from a
// checkpoint's preprocessor_config.json: resize with PIL's filters (PIL computes an antialiased
// convolution on 8-bit values, horizontal pass first, each pass rounded to 8 bits; so do we, with
// its fixed-point weights, so the bytes match), center crop, rescale, normalize. Written from the
// two libraries' documented behaviour; no code of theirs.
import { describe, fail } from './checks.mjs';

// PIL's resampling filters by transformers' `resample` number (PIL.Image.Resampling): support
// (half-width at scale 1) and kernel.
const sinc = (x) => (x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x));
const FILTERS = {
  1: { name: 'lanczos', support: 3, kernel: (x) => (x > -3 && x < 3 ? sinc(x) * sinc(x / 3) : 0) },
  2: { name: 'bilinear', support: 1, kernel: (x) => Math.max(0, 1 - Math.abs(x)) },
  3: {
    name: 'bicubic', support: 2, kernel: (x) => {  // Keys' kernel with a = −0.5, as PIL's
      const a = -0.5, t = Math.abs(x);
      if (t < 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
      return t < 2 ? (((t - 5) * t + 8) * t - 4) * a : 0;
    },
  },
  4: { name: 'box', support: 0.5, kernel: (x) => (x > -0.5 && x <= 0.5 ? 1 : 0) },
  5: {
    name: 'hamming', support: 1, kernel: (x) => {
      const t = Math.abs(x);
      return t === 0 ? 1 : t >= 1 ? 0 : (Math.sin(Math.PI * t) / (Math.PI * t)) * (0.54 + 0.46 * Math.cos(Math.PI * t));
    },
  },
};
const PRECISION_BITS = 22;  // PIL's 8-bit passes: weights in 2^22ths, sums in 32-bit integers

// The weights of one axis from inSize to outSize samples: for output i, its first source index
// and integer weights (PIL's precompute_coeffs then normalize_coeffs_8bpc).
function axisWeights(inSize, outSize, filter) {
  const scale = inSize / outSize, stretch = Math.max(scale, 1);  // widened when shrinking: antialiasing
  const support = filter.support * stretch, shrink = 1 / stretch;  // × 1/stretch, as PIL (not ÷: the last bits)
  const taps = [];
  for (let i = 0; i < outSize; i += 1) {
    const center = (i + 0.5) * scale;
    const first = Math.max(0, Math.trunc(center - support + 0.5));
    const end = Math.min(inSize, Math.trunc(center + support + 0.5));
    const w = [];
    let total = 0;
    for (let x = first; x < end; x += 1) {
      const v = filter.kernel((x - center + 0.5) * shrink);
      w.push(v);
      total += v;
    }
    const fixed = w.map((v) => {
      const f = total === 0 ? v : v / total;
      return Math.trunc(f < 0 ? -0.5 + f * 2 ** PRECISION_BITS : 0.5 + f * 2 ** PRECISION_BITS);
    });
    taps.push({ first, weights: fixed });
  }
  return taps;
}

// A fixed-point sum back to a byte, rounded (the ½ was added first) and clamped.
const toByte = (sum) => (sum <= 0 ? 0 : Math.min(255, Math.floor(sum / 2 ** PRECISION_BITS)));

// rgb (h × w × 3 bytes) → (h × outW × 3): one pass along x.
function resizeRows(rgb, w, h, outW, filter) {
  const taps = axisWeights(w, outW, filter), out = new Uint8Array(outW * h * 3);
  for (let y = 0; y < h; y += 1) {
    for (let x = 0; x < outW; x += 1) {
      const { first, weights } = taps[x];
      for (let c = 0; c < 3; c += 1) {
        let sum = 2 ** (PRECISION_BITS - 1);
        for (let k = 0; k < weights.length; k += 1) sum += rgb[(y * w + first + k) * 3 + c] * weights[k];
        out[(y * outW + x) * 3 + c] = toByte(sum);
      }
    }
  }
  return out;
}

// rgb (h × w × 3 bytes) → (outH × w × 3): one pass along y.
function resizeColumns(rgb, w, h, outH, filter) {
  const taps = axisWeights(h, outH, filter), out = new Uint8Array(w * outH * 3);
  for (let y = 0; y < outH; y += 1) {
    const { first, weights } = taps[y];
    for (let i = 0; i < w * 3; i += 1) {
      let sum = 2 ** (PRECISION_BITS - 1);
      for (let k = 0; k < weights.length; k += 1) sum += rgb[(first + k) * w * 3 + i] * weights[k];
      out[y * w * 3 + i] = toByte(sum);
    }
  }
  return out;
}

/**
 * rgb (height × width × 3 bytes) resized to outWidth × outHeight as PIL's Image.resize does with
 * the filter `resample` (1 lanczos, 2 bilinear, 3 bicubic, 4 box, 5 hamming): a pass along x,
 * rounded to bytes, then a pass along y; a side that keeps its size is not resampled.
 */
export function resizeRgb(rgb, width, height, outWidth, outHeight, resample) {
  const filter = FILTERS[resample];
  if (!filter) fail(`resample ${describe(resample)} is not supported (1 lanczos, 2 bilinear, 3 bicubic, 4 box, 5 hamming)`);
  let out = rgb;
  if (outWidth !== width) out = resizeRows(out, width, height, outWidth, filter);
  if (outHeight !== height) out = resizeColumns(out, outWidth, height, outHeight, filter);
  return out;
}

/**
 * The outHeight × outWidth window at the centre of rgb (height × width × 3 bytes), its top-left
 * corner at ⌊(height − outHeight) / 2⌋, ⌊(width − outWidth) / 2⌋; where the image is smaller
 * than the window, it is centred in zeros (as transformers' center_crop pads).
 */
export function centerCrop(rgb, width, height, outWidth, outHeight) {
  const top = Math.floor((height - outHeight) / 2), left = Math.floor((width - outWidth) / 2);
  const out = new Uint8Array(outWidth * outHeight * 3);
  for (let y = 0; y < outHeight; y += 1) {
    const sy = y + top;
    if (sy < 0 || sy >= height) continue;
    for (let x = 0; x < outWidth; x += 1) {
      const sx = x + left;
      if (sx < 0 || sx >= width) continue;
      for (let c = 0; c < 3; c += 1) out[(y * outWidth + x) * 3 + c] = rgb[(sy * width + sx) * 3 + c];
    }
  }
  return out;
}

const KINDS = {  // transformers' defaults where the file leaves a field out
  vit: { size: { height: 224, width: 224 }, resample: 2, crop: null, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5] },
  bit: { size: { shortestEdge: 224 }, resample: 3, crop: { height: 224, width: 224 },
    mean: [0.48145466, 0.4578275, 0.40821073], std: [0.26862954, 0.26130258, 0.27577711] },
};

// { height, width } | { shortestEdge } from a size field (a number means a square for ViT, the
// shortest edge for BiT, as transformers' get_size_dict reads it).
function sizeOf(value, squareFromNumber, what) {
  const whole = (v) => Number.isInteger(v) && v >= 1 && v <= 16384;
  if (whole(value)) return squareFromNumber ? { height: value, width: value } : { shortestEdge: value };
  if (value && typeof value === 'object') {
    const keys = Object.keys(value).sort().join(',');
    if (keys === 'height,width' && whole(value.height) && whole(value.width)) return { height: value.height, width: value.width };
    if (keys === 'shortest_edge' && whole(value.shortest_edge)) return { shortestEdge: value.shortest_edge };
  }
  fail(`preprocessor_config.json's ${what} ${JSON.stringify(value)} is not supported: { height, width } or { shortest_edge } (whole numbers)`);
}

/**
 * What preprocess() does, from preprocessor_config.json's text (modelType: the checkpoint's, for
 * a file that names no processor): { kind, resize (null or
 * { height, width } or { shortestEdge }), resample, crop (null or { height, width }), rescale
 * (null or the factor), mean and std (null or three numbers) }.
 */
export function readImageProcessor(text, modelType = 'vit') {
  let c;
  try { c = JSON.parse(text); } catch (error) { fail(`preprocessor_config.json is not valid JSON (${error.message})`); }
  if (!c || typeof c !== 'object' || Array.isArray(c)) fail('preprocessor_config.json is not a JSON object');
  // Older files name a feature extractor (google/vit-base-patch16-224: ViTFeatureExtractor); a file
  // naming neither gets the model type's own processor.
  const type = String(c.image_processor_type ?? c.feature_extractor_type ?? (modelType === 'dinov2' ? 'BitImageProcessor' : 'ViTImageProcessor'));
  const kind = /^(ViT|DeiT)(ImageProcessor(Fast)?|FeatureExtractor)$/.test(type) ? 'vit'
    : /^Bit(ImageProcessor(Fast)?|FeatureExtractor)$/.test(type) ? 'bit' : null;
  if (!kind) fail(`image_processor_type "${type}" is not supported (ViTImageProcessor, BitImageProcessor)`);
  const d = KINDS[kind];
  const on = (key, fallback) => (typeof c[key] === 'boolean' ? c[key] : fallback);
  const resample = c.resample ?? d.resample;
  if (!FILTERS[resample]) fail(`preprocessor_config.json's resample ${describe(resample)} is not supported (1 lanczos, 2 bilinear, 3 bicubic, 4 box, 5 hamming)`);
  const triple = (key, fallback) => {
    const v = c[key] ?? fallback;
    const list = typeof v === 'number' ? [v, v, v] : v;
    if (!Array.isArray(list) || list.length !== 3 || list.some((x) => !Number.isFinite(x)) || (key === 'image_std' && list.some((x) => x === 0))) {
      fail(`preprocessor_config.json's ${key} must be three numbers${key === 'image_std' ? ' (none 0)' : ''}, got ${JSON.stringify(v)}`);
    }
    return list;
  };
  const factor = c.rescale_factor ?? 1 / 255;
  if (!Number.isFinite(factor)) fail(`preprocessor_config.json's rescale_factor must be a number, got ${JSON.stringify(factor)}`);
  const crop = on('do_center_crop', d.crop !== null) ? sizeOf(c.crop_size ?? d.crop, true, 'crop_size') : null;
  if (crop && !('height' in crop)) fail('preprocessor_config.json\'s crop_size must be { height, width }');
  return {
    kind,
    resize: on('do_resize', true) ? sizeOf(c.size ?? d.size, kind === 'vit', 'size') : null,
    resample,
    crop,
    rescale: on('do_rescale', true) ? factor : null,
    mean: on('do_normalize', true) ? triple('image_mean', d.mean) : null,
    std: on('do_normalize', true) ? triple('image_std', d.std) : null,
  };
}

/** The height × width that resize makes of an image (transformers' get_resize_output_image_size). */
export function resizedSize(resize, width, height) {
  if (!resize) return { width, height };
  if ('height' in resize) return { width: resize.width, height: resize.height };
  // The shorter side becomes shortestEdge, the longer keeps the aspect ratio (truncated).
  const short = Math.min(width, height), long = Math.max(width, height);
  const other = Math.trunc((resize.shortestEdge * long) / short);
  return width <= height ? { width: resize.shortestEdge, height: other } : { width: other, height: resize.shortestEdge };
}

/** The size preprocess() gives every image, or null where it depends on the image (no crop, shortest edge). */
export function outputSize(processor) {
  if (processor.crop) return { ...processor.crop };
  return processor.resize && 'height' in processor.resize ? { height: processor.resize.height, width: processor.resize.width } : null;
}

/**
 * An image as ImageData has it ({ data: RGBA bytes, width, height }) → { pixelValues: Float32Array
 * (3 × height × width, channel-major), height, width } as the processor makes it.
 */
export function preprocessImageData(image, processor) {
  const { width, height, data } = checkImageData(image);
  let rgb = new Uint8Array(width * height * 3);
  for (let i = 0, j = 0; i < width * height * 4; i += 4, j += 3) {  // alpha dropped, as PIL's convert('RGB')
    rgb[j] = data[i]; rgb[j + 1] = data[i + 1]; rgb[j + 2] = data[i + 2];
  }
  let w = width, h = height;
  if (processor.resize) {
    const size = resizedSize(processor.resize, w, h);
    if (size.width * size.height > 2 ** 26) {  // a very long, thin image kept at its aspect ratio
      fail(`resizing a ${width} × ${height} image to a shortest edge of ${processor.resize.shortestEdge} makes ${size.width} × ${size.height} pixels, more than 2^26: crop it first`);
    }
    rgb = resizeRgb(rgb, w, h, size.width, size.height, processor.resample);
    w = size.width; h = size.height;
  }
  if (processor.crop) {
    rgb = centerCrop(rgb, w, h, processor.crop.width, processor.crop.height);
    w = processor.crop.width; h = processor.crop.height;
  }
  // float32 at each step, as numpy computes it: v · factor, then (v − mean) / std.
  const f = Math.fround, pixelValues = new Float32Array(3 * w * h);
  for (let c = 0; c < 3; c += 1) {
    const mean = processor.mean ? f(processor.mean[c]) : 0, std = processor.std ? f(processor.std[c]) : 1;
    for (let i = 0; i < w * h; i += 1) {
      const v = processor.rescale === null ? rgb[i * 3 + c] : f(rgb[i * 3 + c] * processor.rescale);
      pixelValues[c * w * h + i] = processor.mean ? f(f(v - mean) / std) : v;
    }
  }
  return { pixelValues, height: h, width: w };
}

function checkImageData(image) {
  const { width, height, data } = image;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width * height > 2 ** 26) {
    fail(`an image needs a whole width and height ≥ 1 (at most 2^26 pixels), got ${describe(width)} × ${describe(height)}`);
  }
  if (!(data instanceof Uint8ClampedArray || data instanceof Uint8Array) || data.length !== width * height * 4) {
    fail(`an image's data must be its RGBA bytes (Uint8ClampedArray or Uint8Array of width × height × 4 = ${width * height * 4}), got ${describe(data)}${data?.length !== undefined ? ` of length ${data.length}` : ''}`);
  }
  return { width, height, data };
}

const isImageData = (x) => x !== null && typeof x === 'object' && 'data' in x && 'width' in x && 'height' in x;

/**
 * Any image a page has → { data: RGBA bytes, width, height }: ImageData-shaped objects as they
 * are; ImageBitmap, HTMLImageElement, canvases and video frames drawn on an OffscreenCanvas; Blob
 * and File decoded by createImageBitmap first. Node has neither: pass ImageData-shaped objects.
 */
export async function imageDataOf(image) {
  if (isImageData(image)) return checkImageData(image);
  const isBlob = typeof Blob !== 'undefined' && image instanceof Blob;
  if (typeof createImageBitmap !== 'function' || typeof OffscreenCanvas !== 'function') {
    fail(`this environment cannot decode ${isBlob ? 'a Blob or File' : describe(image)} (no createImageBitmap / OffscreenCanvas, as in Node): ` +
      'pass { data: RGBA bytes, width, height } (ImageData\'s shape), decoded with a library of your choice');
  }
  let bitmap;
  try {
    bitmap = await createImageBitmap(image);
  } catch (error) {
    fail(`could not decode the image (${error?.message ?? error}): pass an image file the browser reads (PNG, JPEG, WebP…), an ImageBitmap, an <img>, or { data, width, height }`);
  }
  try {
    const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
    const context = canvas.getContext('2d');
    context.drawImage(bitmap, 0, 0);
    return context.getImageData(0, 0, bitmap.width, bitmap.height);
  } finally {
    if (bitmap !== image) bitmap.close?.();
  }
}
