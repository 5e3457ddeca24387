// Downloads of the current view: PNG, SVG, CSV, JSON.
import { drawHeatmap, heatmapSvg } from './heatmap.mjs';

export function download(filename, blob) {
  const url = URL.createObjectURL(blob);
  const a = Object.assign(document.createElement('a'), { href: url, download: filename });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** heads = [{ title, model }] as drawn; one PNG with the heads in a grid. */
export function exportPng(heads, filename) {
  const size = 360, columns = Math.min(heads.length, 4), titleH = 22;
  const canvases = heads.map(({ model }) => {
    const c = document.createElement('canvas');
    c.style.width = `${size}px`;
    c.style.position = 'absolute';
    c.style.left = '-10000px';
    document.body.appendChild(c);
    drawHeatmap(c, model);
    return c;
  });
  const cellH = Math.max(...canvases.map((c) => c.height)) + titleH * (window.devicePixelRatio || 1);
  const cellW = canvases[0].width;
  const out = document.createElement('canvas');
  out.width = columns * cellW;
  out.height = Math.ceil(heads.length / columns) * cellH;
  const ctx = out.getContext('2d');
  ctx.fillStyle = '#ffffff';
  ctx.fillRect(0, 0, out.width, out.height);
  const dpr = window.devicePixelRatio || 1;
  canvases.forEach((c, i) => {
    const x = (i % columns) * cellW, y = Math.floor(i / columns) * cellH;
    ctx.fillStyle = '#000000';
    ctx.font = `bold ${13 * dpr}px system-ui, sans-serif`;
    ctx.fillText(heads[i].title, x + 6 * dpr, y + 16 * dpr);
    ctx.drawImage(c, x, y + titleH * dpr);
    c.remove();
  });
  out.toBlob((blob) => download(filename, blob), 'image/png');
}

export function exportSvg(heads, filename) {
  download(filename, new Blob([heatmapSvg(heads)], { type: 'image/svg+xml' }));
}

/** One CSV field (RFC 4180): quoted when it holds a quote, a comma or a line break, quotes doubled. */
export const csvField = (s) => (/[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

/** One row per (head, query, key) with the weight. */
export function exportCsv(heads, filename) {
  const lines = ['head,query_index,query_token,key_index,key_token,weight'];
  for (const { index, model } of heads) {
    for (let i = 0; i < model.nQ; i++) for (let j = 0; j < model.nK; j++) {
      lines.push([index + 1, i, csvField(model.rows[i]), j, csvField(model.cols[j]), model.weights[i * model.nK + j]].join(','));
    }
  }
  download(filename, new Blob([lines.join('\n') + '\n'], { type: 'text/csv' }));
}

export function exportJson(heads, meta, filename) {
  const data = {
    ...meta,
    heads: heads.map(({ index, model }) => ({
      head: index + 1,
      attention: Array.from({ length: model.nQ }, (_, i) => Array.from(model.weights.subarray(i * model.nK, (i + 1) * model.nK))),
    })),
  };
  download(filename, new Blob([JSON.stringify(data, null, 1)], { type: 'application/json' }));
}
