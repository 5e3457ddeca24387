// The model view for a real checkpoint: a layers × heads grid of thumbnails, one head enlarged
// with its tokens, value-weighted attention and rollout, head roles measured on the model, head
// ablation with the prediction before and after, next-token or [MASK] predictions, generation
// with each new token's attention row per head, and exports. All computation happens in
// your-model-worker.mjs; this class only draws. It renders into any container (the page, or the
// <multihead-attention view="model"> widget's shadow root) and reports its state through onState.
import { cellAt, drawHeatmap, drawLegend } from '../common/heatmap.mjs';
import { exportCsv, exportJson, exportPng, exportSvg } from '../common/export.mjs';
import { NewestWins } from '../common/newest-wins.mjs';
import { el, headName } from '../common/dom.mjs';
import { drawThumbnails, headWeights, thumbnailSize } from './your-model-draw.mjs';
import { GeneratePanel } from './generate-panel.mjs';
import { PredictionsPanel } from './predictions-panel.mjs';
import { predictionsCss } from '../common/predictions.mjs';
import { RolesPanel } from './roles-panel.mjs';
import { WhyView, whyCss } from './why-view.mjs';
import { ImageView, imageViewCss } from './image-view.mjs';
import { EncDecView, encdecViewCss } from './encdec-view.mjs';

// How config.weightType reads in the model's description.
const MATRIX_TYPES = { f32: 'f32', f16: 'f16', bf16: 'bf16', q8: '8-bit (GGUF blocks)', q6: '6-bit (GGUF blocks)', q5: '5-bit (GGUF blocks)',
  q4: '4-bit (GGUF blocks)' };

export const MODES = ['attention', 'value', 'rollout'];

export const modelViewCss = `
[hidden] { display: none !important; }
.mv-grid-wrap { overflow-x: auto; }
#mvMode { max-width: min(16em, 70vw); }
.mv-grid { position: relative; display: grid; gap: 3px; grid-template-columns: 2.2em repeat(var(--heads, 4), minmax(14px, 1fr)); align-items: center; max-width: min(100%, calc(var(--heads, 4) * 72px + 3em)); }
.mv-grid .mv-label { font-size: 0.72rem; color: var(--muted, #666); text-align: center; }
.mv-grid-canvas { position: absolute; left: 0; top: 0; width: 100%; height: 100%; pointer-events: none; image-rendering: pixelated; }
.mv-thumb { position: relative; aspect-ratio: 1; padding: 0; border: 2px solid transparent; border-radius: 3px; background: none; cursor: pointer; line-height: 0; min-width: 0; }
.mv-thumb[aria-pressed="true"] { border-color: var(--accent, #1a5fb4); }
.mv-body { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1.3fr); gap: 14px; align-items: start; }
.mv-head { margin: 0; min-width: 0; }
.mv-head canvas { width: 100%; display: block; cursor: crosshair; touch-action: none; }
.mv-head figcaption { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; justify-content: space-between; font-size: 0.9rem; }
.mv-tokens { display: flex; flex-wrap: wrap; gap: 3px; }
.mv-tokens button { font: 0.8rem ui-monospace, monospace; padding: 1px 4px; border: 1px solid var(--border, #ccc); border-radius: 3px; background: none; color: inherit; cursor: pointer; white-space: pre; }
.mv-tokens button.special { color: var(--muted, #666); font-style: italic; }
.mv-tokens button.type1 { border-color: #c061cb; }
.mv-tokens button.lit { outline: 2px solid var(--accent, #1a5fb4); }
.mv-strips { display: grid; gap: 2px; grid-template-columns: 2.2em repeat(var(--heads, 4), minmax(10px, 1fr)); max-width: min(100%, calc(var(--heads, 4) * 72px + 3em)); }
.mv-strips canvas { width: 100%; height: 10px; image-rendering: pixelated; display: block; }
.mv-gen-rows { width: 100%; max-width: 520px; image-rendering: pixelated; display: block; }
.mv-generated { font-family: ui-monospace, monospace; white-space: pre-wrap; }
.mv-generated .new { background: color-mix(in srgb, var(--accent, #1a5fb4) 20%, transparent); }
.mv-roles th button { font: inherit; background: none; border: none; color: inherit; cursor: pointer; padding: 0; text-decoration: underline dotted; }
.mv-roles td:first-child { white-space: nowrap; }
@media (max-width: 720px) { .mv-body { grid-template-columns: minmax(0, 1fr); } }
/* A phone: the roles table in the screen's width (it still scrolls sideways if a role is long). */
@media (max-width: 480px) { .mv-roles { font-size: 0.66rem; } .mv-roles th, .mv-roles td { padding: 3px 2px; } .mv-roles :is(th, td):first-child { padding-left: 0; } }
${predictionsCss}
${whyCss}
${imageViewCss}
${encdecViewCss}`;


export class ModelView {
  #thumbShown = new WeakMap();  // button → the label state last written to it (#renderGrid)
  /**
   * @param {HTMLElement} root where to render
   * @param {{ onState?: (state) => void, onReady?: (ready: boolean) => void, workerUrl?: URL, acceptPaste?: boolean }} options
   * acceptPaste: an image model takes a picture pasted anywhere on the page (false: only inside the view).
   */
  constructor(root, { onState = () => {}, onReady = () => {}, workerUrl, acceptPaste = true } = {}) {
    this.root = root;
    this.onState = onState;
    this.onReady = onReady;
    this.worker = new Worker(workerUrl ?? new URL('./your-model-worker.mjs', import.meta.url), { type: 'module' });
    this.worker.onmessage = ({ data }) => this.#message(data);
    this.worker.onerror = (e) => this.#showError(`the worker failed: ${e.message}`);
    this.state = { text: '', pair: '', pos: -1, off: [], sel: [0, 0], mode: 'attention' };
    this.config = null;
    this.modelNumber = 0;  // which model the page shows: replies for an earlier one are dropped
    this.shown = null;
    this.views = new NewestWins();
    this.seq = 0;
    this.highlight = null;
    // The panels around the grid and the head, each with its part of the worker's protocol.
    const post = (message) => this.worker.postMessage({ seq: ++this.seq, ...message, modelNumber: this.modelNumber });
    this.generation = new GeneratePanel({ post, selection: () => this.state.sel, text: () => this.state.text });
    this.predictions = new PredictionsPanel();
    this.roles = new RolesPanel();
    this.why = new WhyView({
      post: (message) => this.worker.postMessage({ ...message, modelNumber: this.modelNumber }),
      onState: (why) => { this.state = { ...this.state, ...why }; this.onState(this.state); },
      onSelectHead: (layer, head) => this.#select(layer, head, true),
    });
    // Image models (vit, dinov2) get their own view in place of the text's.
    this.imageModel = false;
    this.imageView = new ImageView({
      post, acceptPaste, onReady: (ready) => this.onReady(ready),
      onState: (partial) => { this.state = { ...this.state, ...partial }; this.onState(this.state); },
    });
    // Encoder-decoders (t5, bart, marian): a source and a target, and three kinds of attention.
    this.encdecModel = false;
    this.encdecView = new EncDecView({
      post, onReady: (ready) => this.onReady(ready),
      onState: (partial) => { this.state = { ...this.state, ...partial }; this.onState(this.state); },
    });
    this.#build();
  }

  #build() {
    const ui = this.ui = {};
    ui.info = el('p', { className: 'mv-info' });
    ui.text = el('textarea', { rows: 2, spellcheck: false, id: 'mvText' });
    ui.text.setAttribute('aria-label', 'Text for the model');
    ui.pair = el('textarea', { rows: 1, spellcheck: false, id: 'mvPair' });
    ui.pair.setAttribute('aria-label', 'Second sentence of a pair (token type 1)');
    ui.pairBox = el('label', { className: 'mv-pair', hidden: true }, 'Second sentence (token type 1) ', ui.pair);
    ui.tokens = el('p', { className: 'mv-tokens' });
    ui.tokens.setAttribute('aria-label', 'The tokens the model sees');
    ui.messages = el('p', { className: 'messages' });
    ui.messages.setAttribute('role', 'status');
    ui.mode = el('select', { id: 'mvMode' },
      el('option', { value: 'attention', textContent: 'attention weights' }),
      el('option', { value: 'value', textContent: 'value-weighted attention (α·‖v W_O‖)' }),
      el('option', { value: 'rollout', textContent: 'attention rollout across layers' }));
    ui.legend = el('canvas', { width: 120, height: 10 });
    ui.legend.setAttribute('aria-hidden', 'true');
    ui.exports = el('div', { className: 'exports' });
    for (const [label, what, kind] of [['PNG', 'grid', 'png'], ['SVG', 'grid', 'svg'], ['CSV', 'grid', 'csv'], ['JSON', 'grid', 'json'],
      ['head PNG', 'head', 'png'], ['head SVG', 'head', 'svg'], ['head CSV', 'head', 'csv'], ['head JSON', 'head', 'json']]) {
      const b = el('button', { type: 'button', textContent: label });
      b.dataset.export = `${what}-${kind}`;
      b.addEventListener('click', () => this.#export(what, kind));
      ui.exports.append(b);
    }
    ui.grid = el('div', { className: 'mv-grid', id: 'mvGrid' });
    ui.grid.setAttribute('role', 'group');
    ui.grid.setAttribute('aria-label', 'Every layer × head; arrow keys move, Enter or click enlarges');
    ui.headCanvas = el('canvas', { tabIndex: 0 });
    ui.headCanvas.setAttribute('role', 'img');
    ui.headTitle = el('strong');
    ui.headRole = el('span', { className: 'mv-role' });
    ui.toggle = el('button', { type: 'button', className: 'switch', id: 'mvToggle' });
    ui.readout = el('p', { className: 'readout', textContent: '\u00a0' });
    ui.readout.setAttribute('aria-live', 'polite');
    ui.head = el('figure', { className: 'mv-head' }, el('figcaption', {}, el('span', {}, ui.headTitle, ' ', ui.headRole), ui.toggle), ui.headCanvas);
    ui.timing = el('p', { className: 'timing' });
    // Until a model is loaded there is nothing to type into or draw: only the info and messages show.
    ui.modelOnly = [
      el('div', { hidden: true }, el('div', { className: 'mv-input' }, el('label', { htmlFor: 'mvText', textContent: 'Text' }), ui.text, ui.pairBox),
        ui.tokens),
      el('div', { hidden: true }, el('div', { className: 'row' }, el('label', {}, 'show ', ui.mode),
        el('span', { className: 'legend' }, el('span', { textContent: '0' }), ui.legend, el('span', { textContent: '1' }))),
      el('div', { className: 'mv-body' }, el('div', { className: 'mv-grid-wrap' }, ui.grid), el('div', {}, ui.head, ui.readout)),
      ui.timing, ui.exports,
      this.predictions.section,
      this.why.section,
      this.generation.section,
      this.roles.section)];
    this.root.append(ui.info, ui.modelOnly[0], ui.messages, ui.modelOnly[1], this.imageView.section, this.encdecView.section);
    drawLegend(ui.legend);
    ui.text.addEventListener('input', () => this.setState({ text: ui.text.value, pos: -1 }));
    ui.pair.addEventListener('input', () => this.setState({ pair: ui.pair.value }));
    ui.mode.addEventListener('change', () => this.setState({ mode: ui.mode.value }));
    ui.toggle.addEventListener('click', () => this.#toggleHead(...this.state.sel));
    this.#wireHead();
    this.#wireGrid();
  }

  /** Loads a checkpoint from File objects / a name → Blob map (weightType: loadPretrained's). Resolves to its config. */
  open(files, label, weightType) {
    this.label = label;
    this.modelNumber += 1;
    this.why.reset();
    this.config = null;
    this.imageModel = false;
    this.imageView.close();
    this.encdecModel = false;
    this.state.encdec = false;
    this.encdecView.close();
    this.roles.reset(0);
    this.shown = null;
    this.onReady(false);
    this.ui.info.textContent = `Loading ${label}…`;
    return new Promise((resolve, reject) => {
      this.loading = { resolve, reject };
      this.worker.postMessage({ type: 'load', files, name: label, weightType, modelNumber: this.modelNumber });
    });
  }

  setState(partial) {
    const whyKeys = ['why', 'target', 'contrast', 'corrupt', 'patch'].filter((k) => k in partial);
    if (whyKeys.length) this.why.setState(Object.fromEntries(whyKeys.map((k) => [k, partial[k]])), false);
    const next = { ...this.state, ...partial };
    if (next.off) next.off = next.off.filter(([l, h]) => !this.config || (l < this.config.layers && h < this.config.heads));
    this.state = next;
    if (this.imageModel) {
      const { image, sel, mode, off } = next;
      this.imageView.setState({ image, sel, mode, off });
      this.onState(this.state);
      return;
    }
    if (this.encdecModel) {
      const { text, output = '', view = 'cross', sel, avg = '' } = next;
      this.encdecView.setState({ text, output, view, sel, avg });
      this.onState(this.state);
      return;
    }
    if (this.ui.text.value !== next.text) this.ui.text.value = next.text;
    if (this.ui.pair.value !== next.pair) this.ui.pair.value = next.pair;
    this.ui.mode.value = next.mode;
    this.onState(this.state);
    this.#request();
  }

  // Sends the newest input when the worker is free; inputs typed meanwhile replace each other.
  #request() {
    if (!this.config) return;
    this.onReady(false);
    this.views.request(() => {
      const { text, pair, pos, off, mode } = this.state;
      this.requested = performance.now();
      this.worker.postMessage({ type: 'view', seq: ++this.seq, text, pair, pos, off, rollout: mode === 'rollout', modelNumber: this.modelNumber });
    });
  }

  #message(data) {
    if (data.modelNumber !== this.modelNumber) {
      // For a model since replaced: nothing to draw, but the worker is free again.
      if (data.type === 'view' || (data.type === 'error' && data.for === 'view')) this.views.free();
      this.imageView.stale(data);
      this.encdecView.stale(data);
      return;
    }
    if (this.imageModel && this.imageView.message(data)) return;
    if (this.encdecModel && this.encdecView.message(data)) return;
    if (this.why.message(data) || this.generation.message(data)) return;
    if (this.roles.message(data)) {
      if (data.type === 'roles' && this.shown) this.#renderGrid();  // the grid labels heads by role
      return;
    }
    if (data.type === 'progress') {
      this.ui.info.textContent = `Loading ${this.label}: ${(data.loaded / 1e6).toFixed(1)} of ${(data.total / 1e6).toFixed(1)} MB into memory…`;
    } else if (data.type === 'loaded' && data.image) {
      this.#openImageModel(data);
    } else if (data.type === 'loaded' && data.encdec) {
      this.#openEncDec(data);
    } else if (data.type === 'loaded') {
      for (const part of this.ui.modelOnly) part.hidden = false;
      this.state.image = '';  // a text model shows no picture
      this.config = data.config;
      this.hasTokenizer = data.hasTokenizer;
      this.maskToken = data.special?.maskToken ?? '[MASK]';
      this.#describe(data);
      this.loading?.resolve(data.config);
      this.loading = null;
      this.ui.pairBox.hidden = data.config.causal;
      this.generation.setModel(data.config);
      this.roles.reset(data.config.heads);
      this.ui.grid.style.setProperty('--heads', data.config.heads);
      this.worker.postMessage({ type: 'roles', modelNumber: this.modelNumber });
      this.setState({ sel: [Math.min(this.state.sel[0], data.config.layers - 1), Math.min(this.state.sel[1], data.config.heads - 1)] });
    } else if (data.type === 'view') {
      if (this.views.answered()) { this.#request(); return; }  // a newer input is waiting: skip drawing this one
      this.#render(data);
    } else if (data.type === 'error') {
      if (data.for === 'load') {
        this.loading?.reject(new Error(data.message));
        this.loading = null;
        this.ui.info.textContent = '';
        return;
      }
      const newer = data.for === 'view' && this.views.answered();
      this.#showError(data.message);
      if (newer) this.#request();
      else this.onReady(true);
    }
  }

  // An image model: the text's parts hidden, the image view (image-view.mjs) in their place.
  #openImageModel(data) {
    const c = this.config = data.config;
    this.imageModel = true;
    for (const part of this.ui.modelOnly) part.hidden = true;
    const { rows, cols } = data.image.patchGrid ?? { rows: 0, cols: 0 };
    const runsOn = data.threads > 1 ? `${data.threads} threads` : `one thread${data.oneThreadReason ? ` (${data.oneThreadReason})` : ''}`;
    this.ui.info.textContent = `${this.label}: ${c.modelType} image model, ${c.layers} layers × ${c.heads} heads, d_model ${c.dModel}, ` +
      `${(c.parameterCount / 1e6).toFixed(c.parameterCount < 1e7 ? 2 : 0)}M parameters (${(c.weightBytes / 1e6).toFixed(1)} MB in memory), ` +
      `${c.patchSize}-pixel patches${rows ? ` (${rows} × ${cols} of them in the pictures its processor makes)` : ''}, ` +
      `${c.labels ? `a classifier over ${c.labels.length.toLocaleString('en')} labels` : 'no classifier'}. ` +
      `Loaded in ${(data.loadMs / 1000).toFixed(2)} s; runs in a worker on ${runsOn}.`;
    this.loading?.resolve(c);
    this.loading = null;
    this.imageView.label = this.label;
    const { image, sel, mode, off } = this.state;
    this.imageView.setState({ image, sel, mode, off });
    this.imageView.open(c, data.image);
  }

  // An encoder-decoder: the text's parts hidden, the source-and-target view (encdec-view.mjs) in their place.
  #openEncDec(data) {
    const c = this.config = data.config;
    this.encdecModel = true;
    for (const part of this.ui.modelOnly) part.hidden = true;
    const runsOn = data.threads > 1 ? `${data.threads} threads` : `one thread${data.oneThreadReason ? ` (${data.oneThreadReason})` : ''}`;
    this.ui.info.textContent = `${this.label}: ${c.modelType} encoder-decoder, ${c.layers} encoder + ${c.decoderLayers} decoder layers × ${c.heads} heads, d_model ${c.dModel}, ` +
      `${(c.parameterCount / 1e6).toFixed(c.parameterCount < 1e7 ? 2 : 0)}M parameters (${(c.weightBytes / 1e6).toFixed(1)} MB in memory, ${MATRIX_TYPES[c.weightType] ?? c.weightType} matrices), ` +
      `vocabulary ${c.vocabSize.toLocaleString('en')}. Loaded in ${(data.loadMs / 1000).toFixed(2)} s; runs in a worker on ${runsOn}.` +
      (data.hasTokenizer ? '' : ' No tokenizer files came with it: type token ids separated by spaces.');
    this.loading?.resolve(c);
    this.loading = null;
    this.state.image = '';
    this.state.encdec = true;
    this.encdecView.label = this.label;
    const { text, output = '', view = 'cross', sel, avg = '' } = this.state;
    this.encdecView.setState({ text, output, view, sel, avg });
    this.encdecView.open(c);
  }

  #describe({ config: c, loadMs, threads, oneThreadReason }) {
    // Which layers see only a window of the text (their heatmaps are a band along the diagonal).
    const localLayers = ({ slidingLayers: local = [], slidingWindow: w, layers }) => !local.length ? ''
      : local.length === layers ? `Every layer is local: each token sees itself and the ${w - 1} before it. `
        : `Local layers (each token sees itself and the ${w - 1} before it): ${local.map((l) => l + 1).join(', ')}; the others see the whole text. `;
    const kv = c.kvHeads !== c.heads ? ` (${c.kvHeads} key/value heads)` : '';
    this.ui.info.textContent = `${this.label}: ${c.modelType}, ${c.layers} layers × ${c.heads} heads${kv}, d_model ${c.dModel}, ` +
      `${(c.parameterCount / 1e6).toFixed(c.parameterCount < 1e7 ? 2 : 0)}M parameters (${(c.weightBytes / 1e6).toFixed(1)} MB in memory, ${MATRIX_TYPES[c.weightType] ?? c.weightType} matrices), ` +
      `vocabulary ${c.vocabSize.toLocaleString('en')}, up to ${c.maxPositions.toLocaleString('en')} tokens` +
      `${c.causal ? '' : ', bidirectional'}${c.hasLmHead ? '' : ', no language-model head'}. ` +
      localLayers(c) +
      `Loaded in ${(loadMs / 1000).toFixed(2)} s; runs in a worker on ${threads > 1 ? `${threads} threads` : `one thread${oneThreadReason ? ` (${oneThreadReason})` : ''}`}.` +
      (this.hasTokenizer ? '' : ' No tokenizer files came with it: type token ids separated by spaces.');
  }

  #showError(message) {
    this.ui.messages.textContent = message;
  }

  // ---- one view ----

  #weightsOf(layer, head) {
    return headWeights(this.shown, this.state.mode, layer, head, this.config.heads);
  }

  #render(data) {
    const drawStart = performance.now();
    if (data.empty) {
      this.shown = null;
      this.ui.grid.replaceChildren();
      this.thumbs = null;
      this.ui.tokens.replaceChildren();
      this.predictions.clear();
      this.ui.messages.textContent = [...data.messages, 'Type some text to see every head at work.'].join('\n');
      this.onReady(true);
      return;
    }
    this.shown = data;
    this.labels = data.tokens.map((t) => t.text);
    const messages = [...data.messages];
    if (this.state.mode === 'rollout' && data.ablated) messages.push('The rollout is of the model with the switched-off heads removed.');
    this.ui.messages.textContent = messages.join('\n');
    this.#renderTokens();
    this.#renderGrid();
    this.#renderHead();
    this.predictions.render(data, { config: this.config, labels: this.labels, tokens: this.shown.tokens, off: this.state.off, maskToken: this.maskToken });
    const drawMs = performance.now() - drawStart;
    const { layers, heads } = this.config;
    this.ui.timing.textContent = `${data.n} tokens · ${layers} × ${heads} = ${layers * heads} heads · forward ${data.forwardMs.toFixed(1)} ms in the worker${data.reused ? ` (the first ${data.reused} tokens unchanged: ${data.n - data.reused} computed)` : ''}${data.ablated ? ' (twice: with and without the switched-off heads)' : ''} · drawing ${drawMs.toFixed(1)} ms · ${(performance.now() - this.requested).toFixed(0)} ms from input to picture`;
    this.ui.timing.dataset.forwardMs = data.forwardMs.toFixed(2);
    this.ui.timing.dataset.reused = String(data.reused ?? 0);
    this.ui.timing.dataset.drawMs = drawMs.toFixed(2);
    this.ui.timing.dataset.totalMs = (performance.now() - this.requested).toFixed(2);
    const { text, pair, pos } = this.state;
    this.why.setContext({ config: this.config, text, pair, pos });
    this.onReady(true);
  }

  #renderTokens() {
    const at = this.state.pos < 0 ? this.shown.n - 1 : this.state.pos;
    this.ui.tokens.replaceChildren(...this.shown.tokens.map((t, i) => {
      const b = el('button', { type: 'button', textContent: t.text.replace(/\n/g, '⏎').replace(/\t/g, '⇥') || '·' });
      b.className = `${t.special ? 'special' : ''}${t.type === 1 ? ' type1' : ''}${i === at ? ' lit' : ''}`;
      b.title = `token ${i}: id ${t.id}, “${t.token}”${t.type ? `, token type ${t.type}` : ''}`;
      b.addEventListener('click', () => this.setState({ pos: i === this.shown.n - 1 ? -1 : i }));
      return b;
    }));
  }

  #roleOf(layer, head) {
    return this.roles.roleOf(layer, head);
  }

  // The grid's buttons are made once per model shape; a new input only redraws the thumbnails and
  // updates the labels (a 24 × 16 model would otherwise rebuild 384 buttons on every keystroke).
  // The buttons are transparent: the thumbnails are drawn under them on one canvas (see
  // drawThumbnails), redrawn from the sprite when the grid changes size.
  #buildGrid() {
    const { layers, heads } = this.config;
    this.ui.gridCanvas = el('canvas', { className: 'mv-grid-canvas' });
    this.ui.gridCanvas.setAttribute('aria-hidden', 'true');
    this.sprite ??= document.createElement('canvas');
    this.gridResize ??= new ResizeObserver(() => { if (this.shown) this.#paintGrid(); });
    this.gridResize.observe(this.ui.grid);
    const cells = [this.ui.gridCanvas, el('span', {})];
    for (let h = 0; h < heads; h += 1) cells.push(el('span', { className: 'mv-label', textContent: `H${h + 1}` }));
    this.thumbs = [];
    for (let l = 0; l < layers; l += 1) {
      cells.push(el('span', { className: 'mv-label', textContent: `L${l + 1}` }));
      for (let h = 0; h < heads; h += 1) {
        const button = el('button', { type: 'button', className: 'mv-thumb' });
        button.dataset.layer = l;
        button.dataset.head = h;
        this.thumbs.push(button);
        cells.push(button);
      }
    }
    this.ui.grid.replaceChildren(...cells);
  }

  #renderGrid() {
    const { layers, heads } = this.config;
    if (this.thumbs?.length !== layers * heads || !this.ui.grid.contains(this.thumbs[0])) this.#buildGrid();
    const [sl, sh] = this.state.sel;
    for (const button of this.thumbs) {
      const l = Number(button.dataset.layer), h = Number(button.dataset.head);
      const role = this.#roleOf(l, h);
      const off = this.state.off.some(([a, b]) => a === l && b === h);
      // A keystroke changes none of these: skipping the same values' writes saves a sixth of the
      // drawing of a keystroke over 144 buttons (docs/performance.md, "Decisions in the pages").
      const shown = `${role}|${off}|${l === sl && h === sh}`;
      if (this.#thumbShown.get(button) === shown) continue;
      this.#thumbShown.set(button, shown);
      button.classList.toggle('off', off);
      button.tabIndex = l === sl && h === sh ? 0 : -1;
      button.setAttribute('aria-label', `Layer ${l + 1}, head ${h + 1}${role ? `: ${role}` : ''}${off ? ' (switched off)' : ''}`);
      button.setAttribute('aria-pressed', String(l === sl && h === sh));
      button.title = `${headName(l, h)}${role ? ` · ${role}` : ''}`;
    }
    drawThumbnails(this.sprite, (l, h) => this.#weightsOf(l, h), layers, heads, this.shown.n);
    this.#paintGrid();
  }

  // Each head's tile of the sprite, scaled without smoothing into its button's box (inside the
  // border); a switched-off head faded.
  #paintGrid() {
    const { gridCanvas: canvas, grid } = this.ui;
    // Device pixels, up to 4 million in all (a 24 × 16 grid on a 3× screen would be 30 MB).
    const area = Math.max(1, grid.clientWidth * grid.clientHeight);
    const scale = Math.min(window.devicePixelRatio || 1, Math.sqrt(4e6 / area));
    const width = Math.round(grid.clientWidth * scale), height = Math.round(grid.clientHeight * scale);
    if (canvas.width !== width) canvas.width = width;
    if (canvas.height !== height) canvas.height = height;
    const ctx = canvas.getContext('2d');
    ctx.clearRect(0, 0, width, height);
    ctx.imageSmoothingEnabled = false;
    const size = thumbnailSize(this.shown.n);
    for (const button of this.thumbs) {
      const l = Number(button.dataset.layer), h = Number(button.dataset.head);
      ctx.globalAlpha = button.classList.contains('off') ? 0.3 : 1;
      ctx.drawImage(this.sprite, h * size, l * size, size, size, (button.offsetLeft + button.clientLeft) * scale,
        (button.offsetTop + button.clientTop) * scale, button.clientWidth * scale, button.clientHeight * scale);
    }
    ctx.globalAlpha = 1;
  }

  #wireGrid() {
    this.ui.grid.addEventListener('click', (e) => {
      const b = e.target.closest('.mv-thumb');
      if (b) this.#select(Number(b.dataset.layer), Number(b.dataset.head), true);
    });
    this.ui.grid.addEventListener('keydown', (e) => {
      const b = e.target.closest('.mv-thumb');
      const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
      if (!b || !moves[e.key]) return;
      e.preventDefault();
      const l = Math.max(0, Math.min(this.config.layers - 1, Number(b.dataset.layer) + moves[e.key][0]));
      const h = Math.max(0, Math.min(this.config.heads - 1, Number(b.dataset.head) + moves[e.key][1]));
      this.#select(l, h, true);
    });
  }

  #select(layer, head, focus) {
    this.state.sel = [layer, head];
    this.onState(this.state);
    for (const b of this.thumbs ?? []) {
      const on = Number(b.dataset.layer) === layer && Number(b.dataset.head) === head;
      b.setAttribute('aria-pressed', String(on));
      b.tabIndex = on ? 0 : -1;
      if (on && focus) b.focus({ preventScroll: true });
    }
    if (this.shown) this.#renderHead();
  }

  #headModel() {
    const { n, rollout } = this.shown;
    const [l, h] = this.state.sel;
    const rolloutView = this.state.mode === 'rollout' && rollout;
    return {
      title: rolloutView ? 'Attention rollout' : headName(l, h),
      model: { weights: rolloutView ? rollout : this.#weightsOf(l, h), nQ: n, nK: n, rows: this.labels, cols: this.labels },
    };
  }

  #renderHead() {
    const [l, h] = this.state.sel;
    const { title, model } = this.#headModel();
    const off = this.state.off.some(([a, b]) => a === l && b === h);
    this.ui.headTitle.textContent = title === 'Attention rollout' ? 'Attention rollout (all layers, heads averaged, residual ½)' : `Layer ${l + 1}, head ${h + 1}`;
    this.ui.headRole.textContent = title === 'Attention rollout' ? '' : this.#roleOf(l, h);
    this.ui.toggle.textContent = off ? `Switch ${headName(l, h)} on` : `Switch ${headName(l, h)} off`;
    this.ui.toggle.setAttribute('aria-pressed', String(off));
    this.ui.headCanvas.setAttribute('aria-label', `${this.ui.headTitle.textContent}: attention of ${model.nQ} queries over ${model.nK} keys; arrow keys read the weights`);
    drawHeatmap(this.ui.headCanvas, model, this.highlight ? { ...this.highlight, cell: true } : null);
  }

  #wireHead() {
    const canvas = this.ui.headCanvas;
    const show = (cell) => {
      this.highlight = cell;
      if (!this.shown) return;
      this.#renderHead();
      if (!cell) { this.ui.readout.textContent = '\u00a0'; return; }
      const { title, model } = this.#headModel();
      this.ui.readout.textContent = `${title}: “${this.labels[cell.row]}” (${cell.row}) → “${this.labels[cell.col]}” (${cell.col}): ${model.weights[cell.row * model.nK + cell.col].toFixed(4)}`;
    };
    canvas.addEventListener('pointermove', (e) => show(cellAt(canvas, e.clientX, e.clientY)));
    canvas.addEventListener('pointerleave', (e) => { if (e.pointerType === 'mouse') show(null); });
    canvas.addEventListener('focus', () => { if (!this.highlight && this.shown) show({ row: 0, col: 0 }); });
    canvas.addEventListener('keydown', (e) => {
      const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
      if (!moves[e.key] || !this.shown) return;
      e.preventDefault();
      const c = this.highlight ?? { row: 0, col: 0 }, n = this.shown.n;
      show({ row: Math.max(0, Math.min(n - 1, c.row + moves[e.key][0])), col: Math.max(0, Math.min(n - 1, c.col + moves[e.key][1])) });
    });
  }

  #toggleHead(layer, head) {
    const off = this.state.off.some(([l, h]) => l === layer && h === head);
    this.setState({ off: off ? this.state.off.filter(([l, h]) => l !== layer || h !== head) : [...this.state.off, [layer, head]] });
  }

  // ---- exports ----

  #export(what, kind) {
    if (!this.shown) return;
    const { layers, heads } = this.config;
    const name = `${(this.label || 'model').replace(/[^\w.-]+/g, '_')}-${this.state.mode}`;
    const all = what === 'grid' && this.state.mode !== 'rollout';
    const list = [];
    if (all) {
      for (let l = 0; l < layers; l += 1) for (let h = 0; h < heads; h += 1) {
        list.push({ index: l * heads + h, title: headName(l, h), model: { weights: this.#weightsOf(l, h), nQ: this.shown.n, nK: this.shown.n, rows: this.labels, cols: this.labels } });
      }
    } else {
      const { title, model } = this.#headModel();
      const [l, h] = this.state.sel;
      list.push({ index: l * heads + h, title, model });
    }
    const file = `${name}-${all ? 'all-heads' : list[0].title.replace(/\s+/g, '')}`;
    if (kind === 'png') exportPng(list, `${file}.png`);
    else if (kind === 'svg') exportSvg(list, `${file}.svg`);
    else if (kind === 'csv') exportCsv(list, `${file}.csv`);
    else exportJson(list, { model: this.label, mode: this.state.mode, tokens: this.labels, heads_per_layer: heads }, `${file}.json`);
  }

  destroy() {
    this.gridResize?.disconnect();
    this.imageView.destroy();
    this.encdecView.destroy();
    this.worker.terminate();
    this.root.replaceChildren();
  }
}
