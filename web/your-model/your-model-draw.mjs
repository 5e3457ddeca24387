// Drawing helpers of the "Your model" view: thumbnails that stay cheap from 2 × 4 up to 24 × 16
// heads (at most 64 × 64 pixels each, max-pooled, so a 512-token head is as cheap as a short one;
// all of them in one sprite),
// value-weighted attention, and the rows a generation adds.
import { VIRIDIS } from '../common/colormap.mjs';

export const THUMB_PX = 64;

// Each weight level (0 … 255) as one RGBA pixel (opaque), in the byte order of the platform's
// Uint32Array, so that a pixel is one store.
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const PALETTE = Uint32Array.from({ length: 256 }, (_, level) => {
  const [r, g, b] = [VIRIDIS[3 * level], VIRIDIS[3 * level + 1], VIRIDIS[3 * level + 2]];
  return (LITTLE_ENDIAN ? (255 << 24) | (b << 16) | (g << 8) | r : (r << 24) | (g << 16) | (b << 8) | 255) >>> 0;
});
const pixel = (v) => PALETTE[v > 0 ? Math.min(255, Math.round(v * 255)) : 0];  // NaN: the lowest colour

// canvas (width × height) = the image fill(pixels) writes, one Uint32 (RGBA) per pixel, row-major.
function paintWith(canvas, width, height, fill) {
  if (canvas.width !== width) canvas.width = width;
  if (canvas.height !== height) canvas.height = height;
  const ctx = canvas.getContext('2d');
  const image = ctx.createImageData(width, height);
  fill(new Uint32Array(image.data.buffer));
  ctx.putImageData(image, 0, 0);
}

// Pixel (y, x) in the colour of value(y, x).
function paint(canvas, width, height, value) {
  paintWith(canvas, width, height, (pixels) => {
    for (let y = 0; y < height; y += 1) {
      for (let x = 0; x < width; x += 1) pixels[y * width + x] = pixel(value(y, x));
    }
  });
}

/** Pixels a side of one head's thumbnail: one per token up to THUMB_PX. */
export const thumbnailSize = (n) => Math.min(n, THUMB_PX);

/**
 * Every head's thumbnail (n × n weights each: one pixel per cell up to THUMB_PX, max-pooled above)
 * into one sprite canvas, head h of layer l at (h, l) · thumbnailSize(n). One canvas for all, not
 * one each: every canvas in a page is a layer of its own that each frame commits (docs/performance.md,
 * "Decisions in the pages", has what 144 of them cost).
 */
export function drawThumbnails(sprite, weightsOf, layers, heads, n) {
  const size = thumbnailSize(n), block = n / size, width = heads * size;
  // Each head's tile written in one loop of its own, not through paint(): paint's value(y, x) is
  // called per pixel, and with the strips' and rows' callbacks too, that call stays un-inlined in
  // the page; here one 32-bit store a pixel (docs/performance.md, "Decisions in the pages").
  paintWith(sprite, width, layers * size, (pixels) => {
    for (let i = 0; i < layers * heads; i += 1) {
      const w = weightsOf(Math.floor(i / heads), i % heads);
      const x0 = (i % heads) * size, y0 = Math.floor(i / heads) * size;
      for (let y = 0; y < size; y += 1) {
        const row = (y0 + y) * width + x0;
        for (let x = 0; x < size; x += 1) pixels[row + x] = pixel(block === 1 ? w[y * n + x] : pooledMax(w, n, block, y, x));
      }
    }
  });
}

// The largest of the weights (n × n) that thumbnail pixel (y, x) covers, block × block of them.
function pooledMax(w, n, block, y, x) {
  let max = 0;
  for (let i = Math.floor(y * block); i < Math.ceil((y + 1) * block); i += 1) {
    for (let j = Math.floor(x * block); j < Math.ceil((x + 1) * block); j += 1) max = Math.max(max, w[i * n + j]);
  }
  return max;
}

/** One row of weights (length n) as a 1-pixel-high strip. */
export function drawStrip(canvas, row) {
  paint(canvas, Math.max(1, row.length), 1, (_, x) => row[x]);
}

/** Rows of different lengths (each generated token's attention), left-aligned, padded with 0. */
export function drawRows(canvas, rows) {
  const width = Math.max(1, ...rows.map((r) => r.length));
  paint(canvas, width, Math.max(1, rows.length), (y, x) => rows[y]?.[x] ?? 0);
}

/**
 * Value-weighted attention (Kobayashi et al. 2020): α_ij · ‖v_j W_Oʰ‖, each row renormalised to
 * sum 1, for head h of layer l. attentions: layers × heads × n × n; norms: layers × heads × n.
 */
export function valueWeighted(attentions, norms, layer, head, heads, n) {
  const offset = (layer * heads + head) * n * n, normOffset = (layer * heads + head) * n;
  const out = new Float32Array(n * n);
  for (let i = 0; i < n; i += 1) {
    let sum = 0;
    for (let j = 0; j < n; j += 1) sum += out[i * n + j] = attentions[offset + i * n + j] * norms[normOffset + j];
    if (sum > 0) for (let j = 0; j < n; j += 1) out[i * n + j] /= sum;
  }
  return out;
}

/**
 * Head h of layer l of a view's attentions (layers × heads × n × n) as the mode shows it: the
 * weights themselves, or value-weighted ('value', from the view's valueNorms).
 */
export function headWeights({ n, attentions, valueNorms }, mode, layer, head, heads) {
  if (mode === 'value') return valueWeighted(attentions, valueNorms, layer, head, heads, n);
  const offset = (layer * heads + head) * n * n;
  return attentions.subarray(offset, offset + n * n);
}
