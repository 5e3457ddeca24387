// "Your model"'s predictions: the next token (decoders) or the masked word (encoders), with and
// without the switched-off heads.
import { el, headName, pct } from '../common/dom.mjs';

// Its own styles, so that the widget's shadow root (which has no page style sheet) lays it out:
// word, bar and percentage in three columns at any width.
export const predictionsCss = `
.predictions { display: flex; flex-wrap: wrap; gap: 12px; }
.prediction { border: 1px solid var(--border, #ccc); border-radius: 6px; padding: 6px 10px; min-width: min(240px, 100%); box-sizing: border-box; }
.prediction h3 { font-size: 0.9rem; margin: 0 0 4px; }
.prediction ol { margin: 0; padding-left: 1.4em; }
.prediction li { display: grid; grid-template-columns: minmax(0, 7em) minmax(8px, 1fr) 3.5em; gap: 6px; align-items: center; }
.prediction .word { font-family: ui-monospace, monospace; overflow: hidden; text-overflow: ellipsis; white-space: pre; }
.prediction .bar { height: 8px; background: var(--accent, #1a5fb4); width: calc(var(--p) * 100%); min-width: 1px; border-radius: 2px; }
.prediction .num { text-align: right; font-variant-numeric: tabular-nums; }
.prediction .actual { margin: 4px 0 0; color: var(--muted, #666); font-size: 0.85rem; }`;

export class PredictionsPanel {
  constructor() {
    this.title = el('h3');
    this.off = el('p', { className: 'hint' });
    this.list = el('div', { className: 'predictions' });
    this.section = el('section', {}, this.title, this.off, this.list);
  }

  clear() { this.list.replaceChildren(); }

  /**
   * One view's predictions. labels: each token's text; tokens: the view's tokens; off: the
   * switched-off [layer, head] pairs; maskToken: how this tokenizer spells the mask.
   */
  render(data, { config, labels, tokens, off, maskToken }) {
    this.off.textContent = off.length
      ? `Switched off: ${off.map(([l, h]) => headName(l, h)).join(', ')} (their output is removed from W_O).` : '';
    if (!config.hasLmHead) {
      this.title.textContent = 'No predictions: this checkpoint has no language-model head (a BertModel encoder).';
      this.list.replaceChildren();
      return;
    }
    const label = (row) => `“${labels[row]}” (token ${row})`;
    this.title.textContent = config.causal ? `What comes next after ${label(data.predictions[0]?.row ?? 0)}?`
      : `What the model fills in at ${data.predictions.map((p) => label(p.row)).join(', ')}${data.predictions.length && /mask/i.test(tokens[data.predictions[0].row].token) ? '' : ` (type ${maskToken} to ask for a word)`}`;
    const list = (items, caption) => el('div', { className: 'prediction' }, el('h3', { textContent: caption }),
      el('ol', {}, ...items.map(({ token, probability }) => {
        const bar = el('span', { className: 'bar' });
        bar.style.setProperty('--p', String(probability));
        return el('li', {}, el('span', { className: 'word', textContent: JSON.stringify(token).slice(1, -1) }), bar, el('span', { className: 'num', textContent: pct(probability) }));
      })));
    const boxes = [];
    for (const p of data.predictions) {
      boxes.push(list(p.before, data.ablated ? `every head on · ${label(p.row)}` : label(p.row)));
      if (p.after) {
        const box = list(p.after, `without ${off.map(([l, h]) => headName(l, h)).join(', ')}`);
        box.append(el('p', { className: 'actual', textContent: `logit of “${p.topToken}” changes by ${p.logitChange >= 0 ? '+' : ''}${p.logitChange.toFixed(3)}` }));
        boxes.push(box);
      }
    }
    this.list.replaceChildren(...boxes);
  }
}
