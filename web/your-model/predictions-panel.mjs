// "Your model"'s predictions: the next token (decoders) or the masked word (encoders), with and
// without the switched-off heads.
import { el, headName } from '../common/dom.mjs';
import { predictionBox } from '../common/predictions.mjs';

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
    // Tokens as JSON writes them inside quotes: a newline or a tab shows as \n, \t.
    const list = (items, caption) => predictionBox(items.map((p) => ({ ...p, token: JSON.stringify(p.token).slice(1, -1) })), caption);
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
