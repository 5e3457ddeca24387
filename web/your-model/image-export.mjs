// Downloads of the image view (image-view.mjs): the figure as PNG (the picture with the overlay
// at its opacity) and SVG (the picture embedded, one rectangle a patch), every head as JSON.
import { download } from '../common/export.mjs';
import { levelOf, rowMax } from './image-draw.mjs';
import { viridisCss } from '../common/colormap.mjs';

const SIDE = 448;  // the figure's longer side in the downloads, in pixels

/** The picture with the overlay (one pixel a patch, scaled up without smoothing) over it. */
export function exportImagePng(picture, overlay, opacity, filename) {
  const scale = SIDE / Math.max(picture.width, picture.height);
  const out = Object.assign(document.createElement('canvas'), { width: Math.round(picture.width * scale), height: Math.round(picture.height * scale) });
  const ctx = out.getContext('2d');
  ctx.drawImage(picture, 0, 0, out.width, out.height);
  ctx.imageSmoothingEnabled = false;
  ctx.globalAlpha = opacity;
  ctx.drawImage(overlay, 0, 0, out.width, out.height);
  out.toBlob((blob) => download(filename, blob), 'image/png');
}

/** The same as SVG: the picture as an embedded PNG, each patch a rectangle with its weight in a title. */
export function exportImageSvg(picture, row, { rows, cols }, opacity, title, filename) {
  const scale = SIDE / Math.max(picture.width, picture.height), w = picture.width * scale, h = picture.height * scale;
  const pw = w / cols, ph = h / rows, max = rowMax(row);
  const rects = [];
  for (let r = 0; r < rows; r += 1) {
    for (let c = 0; c < cols; c += 1) {
      const v = row[r * cols + c];
      rects.push(`<rect x="${(c * pw).toFixed(2)}" y="${(r * ph).toFixed(2)}" width="${pw.toFixed(2)}" height="${ph.toFixed(2)}" fill="${viridisCss(levelOf(v, max) / 255)}"><title>row ${r + 1}, column ${c + 1}: ${v}</title></rect>`);
    }
  }
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h + 20}" viewBox="0 -20 ${w} ${h + 20}">
<text x="2" y="-6" font-family="system-ui, sans-serif" font-size="13">${title.replace(/[<&]/g, (ch) => (ch === '<' ? '&lt;' : '&amp;'))}</text>
<image href="${picture.toDataURL('image/png')}" width="${w}" height="${h}" style="image-rendering: auto"/>
<g opacity="${opacity}">${rects.join('')}</g>
</svg>`;
  download(filename, new Blob([svg], { type: 'image/svg+xml' }));
}

export function exportImageJson(data, filename) {
  download(filename, new Blob([JSON.stringify(data, null, 1)], { type: 'application/json' }));
}
