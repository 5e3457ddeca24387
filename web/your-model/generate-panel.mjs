// "Your model"'s generation panel (causal models with a language-model head): the options, the
// text as it grows, and each new token's attention row: the selected head's rows, and the latest
// row of every head. It talks to the worker through post() and hears its replies in message().
import { el, headName } from '../common/dom.mjs';
import { drawRows, drawStrip } from './your-model-draw.mjs';

export class GeneratePanel {
  #post;
  #selection;
  #text;
  #generated = [];

  /**
   * @param {{ post: (message: object) => void, selection: () => [number, number], text: () => string }} hooks
   *   post a message to the worker; the selected [layer, head]; the prompt
   */
  constructor({ post, selection, text }) {
    this.#post = post;
    this.#selection = selection;
    this.#text = text;
    const ui = this.ui = {};
    ui.max = el('input', { type: 'number', min: 1, max: 200, value: 20, id: 'mvGenMax' });
    ui.temp = el('input', { type: 'number', min: 0, max: 5, step: 0.1, value: 0, id: 'mvGenTemp' });
    ui.topK = el('input', { type: 'number', min: 0, max: 1000, value: 0, id: 'mvGenTopK' });
    ui.seed = el('input', { type: 'number', min: 0, value: 1, id: 'mvGenSeed' });
    ui.start = el('button', { type: 'button', textContent: 'Generate', id: 'mvGenerate' });
    ui.stop = el('button', { type: 'button', textContent: 'Stop', id: 'mvStop', disabled: true });
    ui.text = el('p', { className: 'mv-generated', id: 'mvGenerated' });
    ui.rows = el('canvas', { className: 'mv-gen-rows', hidden: true });
    ui.rows.setAttribute('role', 'img');
    ui.strips = el('div', { className: 'mv-strips' });
    const labelled = (label, input) => el('label', {}, `${label} `, input);
    this.section = el('section', { className: 'mv-gen', hidden: true },
      el('h3', { textContent: 'Generate' }),
      el('div', { className: 'row' }, labelled('new tokens', ui.max), labelled('temperature (0 = greedy)', ui.temp),
        labelled('top-k (0 = all)', ui.topK), labelled('seed', ui.seed), ui.start, ui.stop),
      ui.text,
      el('p', { className: 'hint', textContent: 'Each new token’s attention row, as it is produced: the selected head (rows = new tokens), then the latest row of every head (layers down, heads across).' }),
      ui.rows, ui.strips);
    ui.start.addEventListener('click', () => this.#start());
    ui.stop.addEventListener('click', () => this.#post({ type: 'stop' }));
  }

  /** A model was loaded: shown for a causal language model only. */
  setModel(config) {
    this.section.hidden = !(config.causal && config.hasLmHead);
    this.ui.strips.style.setProperty('--heads', config.heads);
  }

  #start() {
    const number = (input, fallback) => (Number.isFinite(Number(input.value)) ? Number(input.value) : fallback);
    const { max, temp, topK, seed } = this.ui;
    const options = { maxNewTokens: Math.max(1, Math.min(200, Math.round(number(max, 20)))),
      temperature: Math.max(0, number(temp, 0)), topK: Math.max(0, Math.round(number(topK, 0))),
      seed: Math.max(0, Math.round(number(seed, 1))) };
    this.#generated = [];
    this.ui.text.replaceChildren(el('span', { textContent: this.#text() }));
    this.ui.start.disabled = true;
    this.ui.stop.disabled = false;
    this.#post({ type: 'generate', text: this.#text(), pair: '', options });
  }

  #done(stopped) {
    this.ui.start.disabled = false;
    this.ui.stop.disabled = true;
    if (stopped !== undefined) this.ui.text.append(el('span', { className: 'hint', textContent: stopped ? '  [stopped]' : '' }));
  }

  #add({ text, attentions, shape }) {
    const [layers, heads, n] = shape;
    this.#generated.push({ attentions, n });
    this.ui.text.append(el('span', { className: 'new', textContent: text ?? '' }));
    this.ui.rows.hidden = false;
    const [l, h] = this.#selection();
    drawRows(this.ui.rows, this.#generated.map((g) => g.attentions.subarray((l * heads + h) * g.n, (l * heads + h + 1) * g.n)));
    this.ui.rows.setAttribute('aria-label', `Layer ${l + 1}, head ${h + 1}: the attention row of each of the ${this.#generated.length} generated tokens`);
    if (this.ui.strips.childElementCount !== layers * (heads + 1)) {
      const cells = [];
      for (let a = 0; a < layers; a += 1) {
        cells.push(el('span', { className: 'mv-label', textContent: `L${a + 1}` }));
        for (let b = 0; b < heads; b += 1) cells.push(el('canvas', { title: headName(a, b) }));
      }
      this.ui.strips.replaceChildren(...cells);
    }
    const canvases = this.ui.strips.querySelectorAll('canvas');
    for (let i = 0; i < layers * heads; i += 1) drawStrip(canvases[i], attentions.subarray(i * n, (i + 1) * n));
  }

  /** A reply from the worker; true when it was this panel's (an error is shown by the page). */
  message(data) {
    if (data.type === 'token') { this.#add(data); return true; }
    if (data.type === 'generated') { this.#done(data.stopped); return true; }
    if (data.type === 'error' && data.for === 'generate') this.#done();
    return false;
  }
}
