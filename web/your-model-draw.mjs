// Drawing helpers of the "Your model" view: thumbnails that stay cheap from 2 × 4 up to 24 × 16
// heads (at most 64 × 64 pixels each, max-pooled, so a 512-token head is as cheap as a short one;
// all of them in one sprite),
// value-weighted attention, and the rows a generation adds.
import { VIRIDIS } from './colormap.mjs';

export const THUMB_PX = 64;

function paint(canvas, width, height, value) {
  if (canvas.width !== width) canvas.width = width;
  if (canvas.height !== height) canvas.height = height;
  const ctx = canvas.getContext('2d');
  const image = ctx.createImageData(width, height);
  const data = image.data;
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const c = Math.max(0, Math.min(255, Math.round(value(y, x) * 255))) * 3, p = 4 * (y * width + x);
      data[p] = VIRIDIS[c]; data[p + 1] = VIRIDIS[c + 1]; data[p + 2] = VIRIDIS[c + 2]; data[p + 3] = 255;
    }
  }
  ctx.putImageData(image, 0, 0);
}

/** Pixels a side of one head's thumbnail: one per token up to THUMB_PX. */
export const thumbnailSize = (n) => Math.min(n, THUMB_PX);

/**
 * Every head's thumbnail (n × n weights each: one pixel per cell up to THUMB_PX, max-pooled above)
 * into one sprite canvas, head h of layer l at (h, l) · thumbnailSize(n). One canvas for all, not
 * one each: every canvas in a page is a layer of its own that each frame commits, and 144 of them
 * cost the page's main thread and compositor ~25 ms a frame (GPT-2 small, 2 cores).
 */
export function drawThumbnails(sprite, weightsOf, layers, heads, n) {
  const size = thumbnailSize(n), block = n / size, width = heads * size;
  const image = new ImageData(width, layers * size);
  const data = image.data;
  for (let l = 0; l < layers; l += 1) {
    for (let h = 0; h < heads; h += 1) {
      const weights = weightsOf(l, h);
      for (let y = 0; y < size; y += 1) {
        for (let x = 0; x < size; x += 1) {
          let value = 0;
          if (block === 1) value = weights[y * n + x];
          else {
            for (let i = Math.floor(y * block); i < Math.ceil((y + 1) * block); i += 1) {
              for (let j = Math.floor(x * block); j < Math.ceil((x + 1) * block); j += 1) value = Math.max(value, weights[i * n + j]);
            }
          }
          const c = Math.max(0, Math.min(255, Math.round(value * 255))) * 3, p = 4 * ((l * size + y) * width + h * size + x);
          data[p] = VIRIDIS[c]; data[p + 1] = VIRIDIS[c + 1]; data[p + 2] = VIRIDIS[c + 2]; data[p + 3] = 255;
        }
      }
    }
  }
  if (sprite.width !== width) sprite.width = width;
  if (sprite.height !== layers * size) sprite.height = layers * size;
  sprite.getContext('2d').putImageData(image, 0, 0);
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
