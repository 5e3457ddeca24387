// A list of predicted tokens with their probabilities (the trained-model page, "Your model", the
// widget), and its styles: they travel with the list, so a widget's shadow root (which has no page
// style sheet) lays word, bar and percentage out in three columns at any width.
import { el, pct } from './dom.mjs';

export const predictionsCss = `
.predictions { display: flex; flex-wrap: wrap; gap: 12px; }
.prediction { background: var(--bg, transparent); border: 1px solid var(--border, #ccc); border-radius: 6px; padding: 6px 10px; min-width: min(240px, 100%); box-sizing: border-box; }
.prediction h3 { font-size: 0.9rem; margin: 0 0 4px; }
.prediction ol { margin: 0; padding-left: 1.4em; }
.prediction li { display: grid; grid-template-columns: minmax(0, 7em) minmax(8px, 1fr) 3.5em; gap: 6px; align-items: center; }
.prediction .word { font-family: ui-monospace, monospace; overflow: hidden; text-overflow: ellipsis; white-space: pre; }
.prediction .bar { height: 8px; background: var(--accent, #1a5fb4); width: calc(var(--p) * 100%); min-width: 1px; border-radius: 2px; }
.prediction .num { text-align: right; font-variant-numeric: tabular-nums; }
.prediction .actual { margin: 4px 0 0; color: var(--muted, #666); font-size: 0.85rem; }`;

/** A box titled `caption` listing items ({ token, probability }, most likely first). */
export function predictionBox(items, caption) {
  return el('div', { className: 'prediction' }, el('h3', { textContent: caption }),
    el('ol', {}, ...items.map(({ token, probability }) => {
      const bar = el('span', { className: 'bar' });
      bar.style.setProperty('--p', String(probability));
      return el('li', {}, el('span', { className: 'word', textContent: token }), bar, el('span', { className: 'num', textContent: pct(probability) }));
    })));
}
