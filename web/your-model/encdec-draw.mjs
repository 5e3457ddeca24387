// Drawing helpers of the encoder-decoder view (encdec-view.mjs): every layer × head of one kind of
// attention (rows × cols each: cross-attention is target tokens down, source tokens across) on
// one canvas, with a column of each layer's mean over heads and a tile of the mean over every
// layer and head; one pixel a cell (max-pooled past TILE_PX), scaled up without smoothing, in
// viridis on the weights' own scale (0 … 1), as the large matrix (common/heatmap.mjs) draws them.
import { VIRIDIS } from '../common/colormap.mjs';

export const TILE_PX = 64;
export const GRID_GAP = 3;
const LABEL_LEFT = 26, LABEL_TOP = 14;

/** The colour level (0 … 255) of a weight, as common/heatmap.mjs colours its cells. */
export const levelOf = (v) => Math.max(0, Math.min(255, Math.round(v * 255))) || 0;

/**
 * The grid's layout for a box `width` CSS pixels wide: heads + 1 columns (the last: the layer's
 * mean), layers + 1 rows (the last: the mean over all, in the last column), tiles as wide as fit
 * (16 … 96 pixels) and as tall as rows / cols makes them (8 … 160).
 */
export function alignLayout(width, layers, heads, rows, cols) {
  const tileW = Math.max(16, Math.min(96, Math.floor((width - LABEL_LEFT) / (heads + 1)) - GRID_GAP));
  const tileH = Math.max(8, Math.min(160, Math.round((tileW * rows) / cols)));
  return { left: LABEL_LEFT, top: LABEL_TOP, tileW, tileH, layers, heads,
    width: LABEL_LEFT + (heads + 1) * (tileW + GRID_GAP), height: LABEL_TOP + (layers + 1) * (tileH + GRID_GAP) };
}

/** Where tile (l, h) sits: h = heads is the layer's mean, l = layers the mean over all (h = heads). */
export const tileAt = (layout, l, h) => ({ x: layout.left + h * (layout.tileW + GRID_GAP), y: layout.top + l * (layout.tileH + GRID_GAP) });

/** The tile under CSS point (x, y) as [layer, head] (head = heads: a mean; layer = layers: over all), or null. */
export function tileUnder(layout, x, y) {
  const h = Math.floor((x - layout.left) / (layout.tileW + GRID_GAP)), l = Math.floor((y - layout.top) / (layout.tileH + GRID_GAP));
  if (h < 0 || h > layout.heads || l < 0 || l > layout.layers) return null;
  if (l === layout.layers && h !== layout.heads) return null;
  return [l, h];
}

// A rows × cols matrix into RGBA bytes at (x0, y0) of an image `stride` pixels wide, h × w pixels
// (each pixel the largest weight of the cells it covers).
function fillTile(data, stride, x0, y0, weights, rows, cols, h, w) {
  for (let y = 0; y < h; y += 1) {
    const r0 = Math.floor((y * rows) / h), r1 = Math.max(r0 + 1, Math.floor(((y + 1) * rows) / h));
    for (let x = 0; x < w; x += 1) {
      const c0 = Math.floor((x * cols) / w), c1 = Math.max(c0 + 1, Math.floor(((x + 1) * cols) / w));
      let max = 0;
      for (let r = r0; r < r1; r += 1) for (let c = c0; c < c1; c += 1) max = Math.max(max, weights[r * cols + c]);
      const level = 3 * levelOf(max), at = ((y0 + y) * stride + x0 + x) * 4;
      data[at] = VIRIDIS[level]; data[at + 1] = VIRIDIS[level + 1]; data[at + 2] = VIRIDIS[level + 2]; data[at + 3] = 255;
    }
  }
}

/**
 * Every tile on one canvas: weightsOf(l, h) gives a rows × cols matrix for each head, each layer's
 * mean (h = heads) and the mean over all (l = layers, h = heads). One sprite for all the tiles
 * (one putImageData), as the other grids do (docs/performance.md). chosen: [l, h], outlined.
 */
export function drawAlignGrid(canvas, { weightsOf, rows, cols, layout, chosen, sprite }) {
  const { layers, heads } = layout;
  const th = Math.min(rows, TILE_PX), tw = Math.min(cols, TILE_PX);
  const dpr = Math.min(window.devicePixelRatio || 1, 3);
  canvas.style.width = `${layout.width}px`;
  canvas.style.height = `${layout.height}px`;
  canvas.width = Math.round(layout.width * dpr);
  canvas.height = Math.round(layout.height * dpr);
  sprite.width = (heads + 1) * tw;
  sprite.height = (layers + 1) * th;
  const sctx = sprite.getContext('2d');
  const image = sctx.createImageData(sprite.width, sprite.height);
  const tiles = [];
  for (let l = 0; l < layers; l += 1) for (let h = 0; h <= heads; h += 1) tiles.push([l, h]);
  tiles.push([layers, heads]);
  for (const [l, h] of tiles) fillTile(image.data, sprite.width, h * tw, l * th, weightsOf(l, h), rows, cols, th, tw);
  sctx.putImageData(image, 0, 0);
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, layout.width, layout.height);
  const ink = getComputedStyle(canvas).color || '#666';
  ctx.font = '10px system-ui, sans-serif';
  ctx.fillStyle = ink;
  ctx.textAlign = 'center';
  for (let h = 0; h <= heads; h += 1) ctx.fillText(h === heads ? 'mean' : `H${h + 1}`, tileAt(layout, 0, h).x + layout.tileW / 2, 10);
  ctx.textAlign = 'left';
  for (let l = 0; l <= layers; l += 1) ctx.fillText(l === layers ? 'all' : `L${l + 1}`, 2, tileAt(layout, l, 0).y + layout.tileH / 2 + 3);
  ctx.imageSmoothingEnabled = false;
  for (const [l, h] of tiles) {
    const { x, y } = tileAt(layout, l, h);
    ctx.drawImage(sprite, h * tw, l * th, tw, th, x, y, layout.tileW, layout.tileH);
  }
  const { x, y } = tileAt(layout, chosen[0], chosen[1]);
  ctx.strokeStyle = getComputedStyle(canvas).getPropertyValue('--accent').trim() || '#1a5fb4';
  ctx.lineWidth = 2;
  ctx.strokeRect(x - 1.5, y - 1.5, layout.tileW + 3, layout.tileH + 3);
}
