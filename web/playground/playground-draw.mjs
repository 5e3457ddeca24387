// Small DOM and drawing helpers shared by the playground's views (playground-view.mjs and
// playground-compare.mjs).
import { drawHeatmap } from '../common/heatmap.mjs';

export const h = (tag, attrs = {}, ...children) => {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v);
  }
  el.append(...children);
  return el;
};
export const option = (value, label = String(value)) => h('option', { value: String(value), text: label });
export const percent = (v) => `${(100 * v).toFixed(1)}%`;

export function argmax(row) {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

// Per-layer × head heatmaps of a report's sample, one row per layer, into `container` (figures
// reused across reports, so a redraw is just the canvases).
export function drawHeads(container, report, labels) {
  const { layers, heads, seq } = report.config;
  if (container.dataset.shape !== `${layers}x${heads}`) {
    container.dataset.shape = `${layers}x${heads}`;
    container.replaceChildren(...Array.from({ length: layers }, (_, l) => h('div', { class: 'pg-layer' },
      ...Array.from({ length: heads }, (_, hd) => h('figure', { 'data-head': `${l + 1}.${hd + 1}` },
        h('figcaption', { text: `Layer ${l + 1} · head ${hd + 1}` }),
        h('canvas', { role: 'img', 'aria-label': `Attention of layer ${l + 1}, head ${hd + 1} on the sample` }))))));
  }
  const nn = seq * seq;
  container.querySelectorAll('canvas').forEach((canvas, lh) => {
    const weights = report.sample.attentions.subarray(lh * nn, (lh + 1) * nn);
    drawHeatmap(canvas, { weights, nQ: seq, nK: seq, rows: labels, cols: labels });
  });
}

// Token labels for the heatmaps: balanced-key keys carry their two criteria.
export function tokenLabels(report) {
  const { tokens, features } = report.sample;
  if (!report.config.features) return tokens;
  return tokens.map((t, i) => (t === '?' ? t : `${t} ${features[2 * i].toFixed(2)}/${features[2 * i + 1].toFixed(2)}`));
}
