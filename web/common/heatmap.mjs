// One head's attention weights as a heatmap: queries down the left, keys along the top.
// Drawn as one pixel per cell into an offscreen canvas and scaled up without smoothing, so a
// 512-token head costs one putImageData, not 262,144 fillRects.
import { VIRIDIS, viridisCss } from './colormap.mjs';

const FONT = '11px system-ui, sans-serif';
const MAX_LABEL_PX = 72;
const MIN_LABEL_CELL_PX = 9;  // below this, labels are thinned so they never overlap

// Label widths and truncations, cached: typing changes one word, not the other 63.
const widthCache = new Map();
function labelWidth(ctx, text) {
  let w = widthCache.get(text);
  if (w === undefined) {
    if (widthCache.size > 5000) widthCache.clear();
    w = ctx.measureText(text).width;
    widthCache.set(text, w);
  }
  return w;
}

function truncate(ctx, text, maxWidth) {
  if (labelWidth(ctx, text) <= maxWidth) return text;
  let t = text;
  while (t.length > 1 && labelWidth(ctx, `${t}…`) > maxWidth) t = t.slice(0, -1);
  return `${t}…`;
}

/** Every how-many-th label to draw so that labels are at least MIN_LABEL_CELL_PX apart. */
export function labelStride(cellPx) {
  return cellPx >= MIN_LABEL_CELL_PX ? 1 : Math.ceil(MIN_LABEL_CELL_PX / cellPx);
}

function geometry(ctx, width, model) {
  ctx.font = FONT;
  const widest = (labels) => Math.min(MAX_LABEL_PX, labels.reduce((m, l) => Math.max(m, labelWidth(ctx, l)), 0));
  const left = Math.ceil(widest(model.rows)) + 8;
  const top = Math.ceil(widest(model.cols)) + 8;
  const cell = Math.max(0.25, (width - left - 2) / model.nK);
  return { left, top, cell, width, height: Math.ceil(top + cell * model.nQ + 2) };
}

// Colours the cells one pixel each into `target` (reused across redraws of the same size).
function pixels(model, target) {
  const { weights, nQ, nK } = model;
  const bitmap = target && target.width === nK && target.height === nQ ? target : new OffscreenCanvas(nK, nQ);
  const ctx = bitmap.getContext('2d');
  const image = bitmap._image && bitmap._image.width === nK && bitmap._image.height === nQ
    ? bitmap._image : (bitmap._image = ctx.createImageData(nK, nQ));
  const data = image.data;
  for (let i = 0; i < nQ * nK; i++) {
    const c = Math.max(0, Math.min(255, Math.round(weights[i] * 255))) * 3;
    data[4 * i] = VIRIDIS[c]; data[4 * i + 1] = VIRIDIS[c + 1]; data[4 * i + 2] = VIRIDIS[c + 2]; data[4 * i + 3] = 255;
  }
  ctx.putImageData(image, 0, 0);
  return bitmap;
}

// Labels are the expensive part (hundreds of fillText calls) and are the same for every head of a
// view, so one layer at device resolution is drawn per (labels, geometry) and shared by all heads.
let labelCache = { key: '', layer: null };
function labelLayer(model, g, dpr, ink) {
  const key = [g.width, g.height, g.left, g.top, g.cell, dpr, ink, model.rows.join('\u0000'), model.cols.join('\u0000')].join('\u0001');
  if (labelCache.key === key) return labelCache.layer;
  const layer = new OffscreenCanvas(Math.round(g.width * dpr), Math.round(g.height * dpr));
  const ctx = layer.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.font = FONT;
  ctx.fillStyle = ink;
  const stride = labelStride(g.cell);
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'right';
  for (let i = 0; i < model.nQ; i += stride) {
    ctx.fillText(truncate(ctx, model.rows[i], MAX_LABEL_PX), g.left - 4, g.top + (i + 0.5) * g.cell);
  }
  ctx.textAlign = 'left';
  for (let j = 0; j < model.nK; j += stride) {
    ctx.setTransform(0, -dpr, dpr, 0, dpr * (g.left + (j + 0.5) * g.cell), dpr * (g.top - 4));  // rotated −90°
    ctx.fillText(truncate(ctx, model.cols[j], MAX_LABEL_PX), 0, 0);
  }
  labelCache = { key, layer };
  return layer;
}

/**
 * Draws model = { weights (nQ × nK), nQ, nK, rows: query labels, cols: key labels } into canvas,
 * at the canvas's CSS width. Call again with only `highlight` changed to redraw cheaply.
 * highlight = { row, col, cell: boolean } marks a query row and key column (and the cell).
 */
export function drawHeatmap(canvas, model, highlight = null) {
  const dpr = window.devicePixelRatio || 1;
  const ctx = canvas.getContext('2d');
  const cssWidth = canvas.clientWidth || 240;
  if (canvas._model !== model || canvas._cssWidth !== cssWidth) {
    const g = geometry(ctx, cssWidth, model);
    canvas._geom = g;
    canvas._ink = getComputedStyle(canvas).color;
    canvas._labels = labelLayer(model, g, dpr, canvas._ink);
    canvas._cells = pixels(model, canvas._cells);
    canvas._model = model;
    canvas._cssWidth = cssWidth;
    const w = Math.round(cssWidth * dpr), h = Math.round(g.height * dpr);
    if (canvas.width !== w || canvas.height !== h) {
      canvas.style.height = `${g.height}px`;
      canvas.width = w;
      canvas.height = h;
    }
  }
  const g = canvas._geom;
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.drawImage(canvas._labels, 0, 0);
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(canvas._cells, g.left, g.top, g.cell * model.nK, g.cell * model.nQ);
  if (!highlight) return;
  ctx.lineWidth = 1.5;
  ctx.strokeStyle = canvas._ink;
  if (highlight.row >= 0 && highlight.row < model.nQ) {
    ctx.strokeRect(g.left, g.top + highlight.row * g.cell, g.cell * model.nK, g.cell);
  }
  if (highlight.col >= 0 && highlight.col < model.nK) {
    ctx.strokeRect(g.left + highlight.col * g.cell, g.top, g.cell, g.cell * model.nQ);
  }
  if (highlight.cell && highlight.row >= 0 && highlight.col >= 0) {
    ctx.lineWidth = 3;
    ctx.strokeStyle = '#ff2d55';
    ctx.strokeRect(g.left + highlight.col * g.cell, g.top + highlight.row * g.cell, g.cell, g.cell);
  }
}

/** Paints the colour scale, weight 0 at the left to 1 at the right, into a legend canvas. */
export function drawLegend(canvas) {
  const ctx = canvas.getContext('2d');
  const image = ctx.createImageData(canvas.width, canvas.height);
  for (let x = 0; x < image.width; x++) {
    const c = Math.round((x / (image.width - 1)) * 255) * 3;
    for (let y = 0; y < image.height; y++) image.data.set([VIRIDIS[c], VIRIDIS[c + 1], VIRIDIS[c + 2], 255], 4 * (y * image.width + x));
  }
  ctx.putImageData(image, 0, 0);
}

/** The { row, col } under a pointer event on a drawn heatmap, or null outside the cells. */
export function cellAt(canvas, clientX, clientY) {
  const g = canvas._geom, model = canvas._model;
  if (!g || !model) return null;
  const r = canvas.getBoundingClientRect();
  const col = Math.floor((clientX - r.left - g.left) / g.cell);
  const row = Math.floor((clientY - r.top - g.top) / g.cell);
  if (row < 0 || col < 0 || row >= model.nQ || col >= model.nK) return null;
  return { row, col };
}

const xml = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * An SVG document of one or more heads: heads = [{ title, model }]. Vector cells up to 96 tokens;
 * beyond that each head is embedded as a PNG image (a 512² grid of rects is too heavy to use).
 */
export function heatmapSvg(heads, { cell = 16, columns = 2 } = {}) {
  const label = 80, gap = 24, titleH = 20;
  const first = heads[0].model;
  const big = Math.max(first.nQ, first.nK) > 96;
  const cellPx = big ? Math.max(1, 480 / Math.max(first.nQ, first.nK)) : cell;
  const w = label + first.nK * cellPx, h = titleH + label + first.nQ * cellPx;
  const cols = Math.min(columns, heads.length), rowsOfHeads = Math.ceil(heads.length / cols);
  const out = [`<svg xmlns="http://www.w3.org/2000/svg" width="${cols * (w + gap)}" height="${rowsOfHeads * (h + gap)}" font-family="system-ui, sans-serif" font-size="11">`];
  heads.forEach(({ title, model }, index) => {
    const ox = (index % cols) * (w + gap), oy = Math.floor(index / cols) * (h + gap);
    out.push(`<g transform="translate(${ox},${oy})"><text x="0" y="14" font-weight="bold">${xml(title)}</text>`);
    const x0 = label, y0 = titleH + label;
    if (big) {
      const canvas = document.createElement('canvas');
      canvas.width = model.nK; canvas.height = model.nQ;
      canvas.getContext('2d').drawImage(pixels(model), 0, 0);
      out.push(`<image x="${x0}" y="${y0}" width="${model.nK * cellPx}" height="${model.nQ * cellPx}" preserveAspectRatio="none" style="image-rendering:pixelated" href="${canvas.toDataURL('image/png')}"/>`);
    } else {
      for (let i = 0; i < model.nQ; i++) for (let j = 0; j < model.nK; j++) {
        const a = model.weights[i * model.nK + j];
        out.push(`<rect x="${x0 + j * cellPx}" y="${y0 + i * cellPx}" width="${cellPx}" height="${cellPx}" fill="${viridisCss(a)}"><title>${xml(model.rows[i])} → ${xml(model.cols[j])}: ${a.toFixed(4)}</title></rect>`);
      }
      model.rows.forEach((t, i) => out.push(`<text x="${x0 - 4}" y="${y0 + (i + 0.7) * cellPx}" text-anchor="end">${xml(t)}</text>`));
      model.cols.forEach((t, j) => out.push(`<text transform="translate(${x0 + (j + 0.7) * cellPx},${y0 - 4}) rotate(-90)">${xml(t)}</text>`));
    }
    out.push('</g>');
  });
  out.push('</svg>');
  return out.join('\n');
}
