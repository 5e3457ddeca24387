// Drawing helpers of the image view (image-view.mjs): a head's attention over the picture's patches
// as one pixel a patch (scaled up without smoothing, so each patch is a flat block whose colour is
// its weight), and the layers × heads grid of such overlays on one canvas.
import { VIRIDIS } from '../common/colormap.mjs';

/** How opaque the attention is over the picture in the grid (the figure has a slider). */
export const GRID_ALPHA = 0.7;
export const GRID_GAP = 3;
const LABEL_LEFT = 26, LABEL_TOP = 14;

/** Row `query` of an n × n weight matrix over the patches only (the tokens after `prefix`). */
export function patchRow(weights, n, prefix, query) {
  return weights.subarray(query * n + prefix, (query + 1) * n);
}

/** The largest value of a row (0 for an empty or all-zero row): the overlay's top colour. */
export const rowMax = (row) => row.reduce((m, v) => (v > m ? v : m), 0);

/** The colour level (0 … 255) of value v where max is the top of the scale. */
export const levelOf = (v, max) => (max > 0 && v > 0 ? Math.min(255, Math.round((v / max) * 255)) : 0);

// Row-major patches (rows × cols) into RGBA bytes at (x0, y0) of an image `stride` pixels wide.
function fillPatches(data, stride, x0, y0, row, rows, cols) {
  const max = rowMax(row);
  for (let r = 0; r < rows; r += 1) {
    for (let c = 0; c < cols; c += 1) {
      const level = levelOf(row[r * cols + c], max), at = ((y0 + r) * stride + x0 + c) * 4;
      data[at] = VIRIDIS[3 * level]; data[at + 1] = VIRIDIS[3 * level + 1]; data[at + 2] = VIRIDIS[3 * level + 2]; data[at + 3] = 255;
    }
  }
}

/** One attention row over the patches into `canvas` (cols × rows pixels), scaled to its largest weight. */
export function drawOverlay(canvas, row, rows, cols) {
  if (canvas.width !== cols) canvas.width = cols;
  if (canvas.height !== rows) canvas.height = rows;
  const ctx = canvas.getContext('2d');
  const image = ctx.createImageData(cols, rows);
  fillPatches(image.data, cols, 0, 0, row, rows, cols);
  ctx.putImageData(image, 0, 0);
}

/** The picture the model reads (RGBA bytes, width × height) into `canvas`. */
export function drawPicture(canvas, pixels, width, height) {
  canvas.width = width;
  canvas.height = height;
  canvas.getContext('2d').putImageData(new ImageData(new Uint8ClampedArray(pixels), width, height), 0, 0);
}

/**
 * The grid's layout for a box `width` CSS pixels wide: tiles as wide as fit (16 … 96 pixels),
 * as tall as the picture's aspect makes them. → { left, top, tileW, tileH, width, height }.
 */
export function gridLayout(width, layers, heads, aspect) {
  const tileW = Math.max(16, Math.min(96, Math.floor((width - LABEL_LEFT) / heads) - GRID_GAP));
  const tileH = Math.max(8, Math.round(tileW * aspect));
  return { left: LABEL_LEFT, top: LABEL_TOP, tileW, tileH,
    width: LABEL_LEFT + heads * (tileW + GRID_GAP), height: LABEL_TOP + layers * (tileH + GRID_GAP) };
}

/** The head under CSS point (x, y) of a grid laid out as `layout`, or null. */
export function headAt(layout, x, y, layers, heads) {
  const h = Math.floor((x - layout.left) / (layout.tileW + GRID_GAP)), l = Math.floor((y - layout.top) / (layout.tileH + GRID_GAP));
  return h >= 0 && h < heads && l >= 0 && l < layers ? [l, h] : null;
}

/**
 * Every head's overlay on one canvas: the picture, and over it (GRID_ALPHA) rowOf(l, h) as
 * patches, each head scaled to its own largest weight. One canvas and one sprite of all the
 * overlays (one putImageData), as the text grid does (docs/performance.md). sel: the chosen head,
 * outlined; off: switched-off heads, greyed.
 */
export function drawImageGrid(canvas, { picture, rowOf, layers, heads, rows, cols, layout, sel, off, sprite }) {
  const dpr = Math.min(window.devicePixelRatio || 1, 3);
  canvas.style.width = `${layout.width}px`;
  canvas.style.height = `${layout.height}px`;
  canvas.width = Math.round(layout.width * dpr);
  canvas.height = Math.round(layout.height * dpr);
  sprite.width = heads * cols;
  sprite.height = layers * rows;
  const sctx = sprite.getContext('2d');
  const image = sctx.createImageData(sprite.width, sprite.height);
  for (let l = 0; l < layers; l += 1) for (let h = 0; h < heads; h += 1) fillPatches(image.data, sprite.width, h * cols, l * rows, rowOf(l, h), rows, cols);
  sctx.putImageData(image, 0, 0);
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, layout.width, layout.height);
  ctx.font = '10px system-ui, sans-serif';
  ctx.fillStyle = getComputedStyle(canvas).color || '#666';
  ctx.textAlign = 'center';
  for (let h = 0; h < heads; h += 1) ctx.fillText(`H${h + 1}`, layout.left + h * (layout.tileW + GRID_GAP) + layout.tileW / 2, 10);
  ctx.textAlign = 'left';
  for (let l = 0; l < layers; l += 1) {
    const y = layout.top + l * (layout.tileH + GRID_GAP);
    ctx.fillText(`L${l + 1}`, 2, y + layout.tileH / 2 + 3);
    for (let h = 0; h < heads; h += 1) {
      const x = layout.left + h * (layout.tileW + GRID_GAP);
      ctx.imageSmoothingEnabled = true;
      ctx.globalAlpha = 1;
      ctx.drawImage(picture, x, y, layout.tileW, layout.tileH);
      ctx.imageSmoothingEnabled = false;
      ctx.globalAlpha = GRID_ALPHA;
      ctx.drawImage(sprite, h * cols, l * rows, cols, rows, x, y, layout.tileW, layout.tileH);
      ctx.globalAlpha = 1;
      if (off.some(([a, b]) => a === l && b === h)) {
        ctx.fillStyle = 'rgba(128, 128, 128, 0.75)';
        ctx.fillRect(x, y, layout.tileW, layout.tileH);
        ctx.fillStyle = getComputedStyle(canvas).color || '#666';
      }
      if (l === sel[0] && h === sel[1]) {
        ctx.strokeStyle = getComputedStyle(canvas).getPropertyValue('--accent') || '#1a5fb4';
        ctx.lineWidth = 2;
        ctx.strokeRect(x - 1, y - 1, layout.tileW + 2, layout.tileH + 2);
      }
    }
  }
}
