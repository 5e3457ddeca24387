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
  const size = thumbnailSize(n), block = n / size;
  const weights = Array.from({ length: layers * heads }, (_, i) => weightsOf(Math.floor(i / heads), i % heads));
  paint(sprite, heads * size, layers * size, (y, x) => {
    const w = weights[Math.floor(y / size) * heads + Math.floor(x / size)], ty = y % size, tx = x % size;
    if (block === 1) return w[ty * n + tx];
    let max = 0;
    for (let i = Math.floor(ty * block); i < Math.ceil((ty + 1) * block); i += 1) {
      for (let j = Math.floor(tx * block); j < Math.ceil((tx + 1) * block); j += 1) max = Math.max(max, w[i * n + j]);
    }
    return max;
  });
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
