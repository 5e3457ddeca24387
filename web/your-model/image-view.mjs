// The image view of "Your model" (ViT, DINOv2): a picture (a demo, or one dropped, pasted or
// picked) with the chosen head's attention from the CLS token laid over its patches (DINO's
// figure), hovering a patch shows that patch's row, rollout over the picture, a layers × heads grid
// of overlays on one canvas, and for classifiers the top labels, what switched-off heads change and
// the lens on the CLS stream. The worker computes (image-compute.mjs); this class only draws. It
// lives inside ModelView (your-model-view.mjs), which hands it the image models it loads.
import { el, headName, pct } from '../common/dom.mjs';
import { NewestWins } from '../common/newest-wins.mjs';
import { predictionBox } from '../common/predictions.mjs';
import { viridisCss } from '../common/colormap.mjs';
import { headWeights } from './your-model-draw.mjs';
import { drawImageGrid, drawOverlay, drawPicture, gridLayout, headAt, patchRow, rowMax } from './image-draw.mjs';
import { exportImageJson, exportImagePng, exportImageSvg } from './image-export.mjs';
import { download } from '../common/export.mjs';

/** The demo pictures shipped with the page (images/, CC0: images/README.md). */
export const DEMO_IMAGES = ['cat', 'ball', 'boats'];
const demoUrl = (name) => new URL(`./images/${name}.png`, import.meta.url);

export const imageViewCss = `
.iv-source { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
.iv-source .file input { max-width: 12em; }
.iv-source.over { outline: 2px dashed var(--accent, #1a5fb4); outline-offset: 4px; }
.iv-body { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 14px; align-items: start; margin-top: 8px; }
.iv-figure { margin: 0; min-width: 0; }
.iv-figure figcaption { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; justify-content: space-between; font-size: 0.9rem; }
.iv-stack { position: relative; width: min(100%, 448px); cursor: crosshair; touch-action: none; line-height: 0; }
.iv-stack canvas { width: 100%; display: block; }
.iv-overlay { position: absolute; left: 0; top: 0; height: 100%; image-rendering: pixelated; opacity: var(--iv-opacity, 0.7); }
.iv-marker { position: absolute; border: 2px solid #fff; outline: 1px solid #000; pointer-events: none; box-sizing: border-box; }
.iv-grid-wrap { overflow-x: auto; }
#ivMode { max-width: min(16em, 60vw); }
.iv-timing { color: var(--muted, #666); }
.iv-grid { display: block; cursor: pointer; color: var(--muted, #666); }
.iv-row { display: flex; flex-wrap: wrap; gap: 6px 14px; align-items: center; }
.iv-scale { display: inline-block; width: 90px; height: 10px; border-radius: 2px; vertical-align: middle; }
.iv-lens td, .iv-lens th { font-size: 0.85rem; padding: 2px 6px; }
.iv-lens .bar { display: inline-block; height: 8px; background: var(--accent, #1a5fb4); min-width: 1px; border-radius: 2px; }
@media (max-width: 720px) { .iv-body { grid-template-columns: minmax(0, 1fr); } }`;

const MODE_NAMES = { attention: 'attention weights', value: 'value-weighted attention (α·‖v W_O‖)', rollout: 'attention rollout across layers' };

export class ImageView {
  /**
   * @param {{ post: (message) => void, onState: (partial) => void, onReady: (ready: boolean) => void, acceptPaste?: boolean }} options
   * post: to the worker (with seq and the model number added); onState: image, sel, mode or off changed.
   */
  constructor({ post, onState, onReady, acceptPaste = true }) {
    this.post = post;
    this.onState = onState;
    this.onReady = onReady;
    this.state = { image: '', sel: [0, 0], mode: 'attention', off: [] };
    this.views = new NewestWins();
    this.config = null;
    this.shown = null;
    this.key = '';          // the picture the worker holds
    this.pending = null;    // { key, blob, demo } not yet sent or answered
    this.inFlight = null;
    this.files = 0;
    this.query = null;      // the hovered patch's token index; null: the CLS token
    this.lensOn = false;
    this.#build(acceptPaste);
  }

  #build(acceptPaste) {
    const ui = this.ui = {};
    ui.demos = DEMO_IMAGES.map((name) => {
      const b = el('button', { type: 'button', textContent: name });
      b.dataset.demo = name;
      b.addEventListener('click', () => this.setState({ image: name }));
      return b;
    });
    ui.file = el('input', { type: 'file', accept: 'image/*', id: 'ivFile' });
    ui.file.addEventListener('change', () => { if (ui.file.files[0]) this.showFile(ui.file.files[0]); ui.file.value = ''; });
    ui.source = el('div', { className: 'iv-source' }, el('span', { textContent: 'Picture:' }), ...ui.demos,
      el('label', { className: 'file' }, 'your own ', ui.file), el('span', { className: 'hint', textContent: 'or drop or paste one here' }));
    ui.current = el('p', { className: 'hint iv-current' });
    ui.messages = el('p', { className: 'messages' });
    ui.messages.setAttribute('role', 'status');
    ui.mode = el('select', { id: 'ivMode' }, ...Object.entries(MODE_NAMES).map(([value, textContent]) => el('option', { value, textContent })));
    ui.mode.addEventListener('change', () => this.setState({ mode: ui.mode.value }));
    ui.opacity = el('input', { type: 'range', min: 0, max: 100, value: 70 });
    ui.opacity.setAttribute('aria-label', 'How opaque the attention is over the picture');
    ui.opacity.addEventListener('input', () => ui.stack.style.setProperty('--iv-opacity', String(ui.opacity.value / 100)));
    ui.scale = el('span', { className: 'iv-scale' });
    ui.scale.style.background = `linear-gradient(to right, ${[0, 0.25, 0.5, 0.75, 1].map(viridisCss).join(', ')})`;
    ui.scaleText = el('span', {});
    ui.controls = el('div', { className: 'iv-row' }, el('label', {}, 'show ', ui.mode), el('label', {}, 'overlay ', ui.opacity),
      el('span', {}, '0 ', ui.scale, ' ', ui.scaleText));
    ui.picture = el('canvas', { className: 'iv-picture' });
    ui.overlay = el('canvas', { className: 'iv-overlay' });
    ui.marker = el('div', { className: 'iv-marker', hidden: true });
    ui.stack = el('div', { className: 'iv-stack', tabIndex: 0 }, ui.picture, ui.overlay, ui.marker);
    ui.stack.setAttribute('role', 'img');
    ui.title = el('strong');
    ui.toggle = el('button', { type: 'button', className: 'switch', id: 'ivToggle' });
    ui.toggle.addEventListener('click', () => this.#toggleHead(...this.state.sel));
    ui.readout = el('p', { className: 'readout', textContent: '\u00a0' });
    ui.readout.setAttribute('aria-live', 'polite');
    ui.figure = el('figure', { className: 'iv-figure' }, el('figcaption', {}, ui.title, ui.toggle), ui.stack, ui.readout);
    ui.grid = el('canvas', { className: 'iv-grid', tabIndex: 0, id: 'ivGrid' });
    ui.grid.setAttribute('role', 'img');
    ui.gridNote = el('p', { className: 'hint' });
    ui.body = el('div', { className: 'iv-body' }, ui.figure, el('div', {}, el('div', { className: 'iv-grid-wrap' }, ui.grid), ui.gridNote));
    ui.classes = el('section', { className: 'iv-classes' });
    ui.timing = el('p', { className: 'iv-timing' });
    ui.exports = el('div', { className: 'exports' });
    for (const [label, kind] of [['figure PNG', 'png'], ['figure SVG', 'svg'], ['grid PNG', 'grid'], ['JSON', 'json']]) {
      const b = el('button', { type: 'button', textContent: label });
      b.dataset.export = `image-${kind}`;
      b.addEventListener('click', () => this.#export(kind));
      ui.exports.append(b);
    }
    this.section = el('div', { className: 'iv', hidden: true }, ui.source, ui.current, ui.messages, ui.controls, ui.body, ui.timing, ui.exports, ui.classes);
    this.sprite = document.createElement('canvas');
    this.#wireSource(acceptPaste);
    this.#wireFigure();
    this.#wireGrid();
  }

  // ---- the picture in ----

  #wireSource(acceptPaste) {
    const zone = this.section;
    zone.addEventListener('dragover', (e) => { e.preventDefault(); this.ui.source.classList.add('over'); });
    zone.addEventListener('dragleave', () => this.ui.source.classList.remove('over'));
    zone.addEventListener('drop', (e) => {
      e.preventDefault();
      this.ui.source.classList.remove('over');
      const file = e.dataTransfer.files[0];
      if (file) this.showFile(file);
      else this.#say('Drop a picture file (PNG, JPEG, WebP, GIF).');
    });
    // Paste anywhere on the page (the page's own view; a widget leaves the page's clipboard alone).
    const target = acceptPaste ? document : zone;
    target.addEventListener('paste', (e) => {
      if (this.section.hidden || !this.section.isConnected) return;
      const file = [...(e.clipboardData?.files ?? [])][0];
      if (!file) return;
      e.preventDefault();
      this.showFile(file);
    });
  }

  /** Shows a picture the user handed over (a File or Blob); a refused one leaves the last picture shown. */
  showFile(file) {
    this.files += 1;
    this.pending = { key: `file:${this.files}`, blob: file, demo: '', name: file.name || 'a pasted picture' };
    this.state.image = '';
    this.onState({ image: '' });
    this.#request();
  }

  /** Shows the picture at a URL (the widget's image attribute); a failed fetch is a message. */
  async showUrl(url) {
    try {
      const response = await fetch(url);
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const blob = await response.blob();
      this.showFile(new File([blob], String(url).split('/').pop() || 'picture', { type: blob.type }));
    } catch (error) {
      this.#say(`The picture ${url} could not be fetched (${error.message}).`);
    }
  }

  async #loadDemo(name) {
    this.pending = { key: `demo:${name}`, blob: null, demo: name, name: `the demo picture “${name}”` };
    try {
      const response = await fetch(demoUrl(name));
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const blob = await response.blob();
      if (this.pending?.key === `demo:${name}`) this.pending.blob = blob;
    } catch (error) {
      if (this.pending?.key === `demo:${name}`) this.pending = null;
      this.#say(`The demo picture ${name} could not be loaded (${error.message}).`);
      this.onReady(true);
      return;
    }
    this.#request();
  }

  #say(message) { this.ui.messages.textContent = message.replace(/^multihead: /, ''); }

  // ---- state ----

  /** The model ModelView loaded: config (with labels) and { patchGrid, hasProcessor }. */
  open(config, info) {
    this.config = config;
    this.info = info;
    this.shown = null;
    this.key = '';
    this.pending = null;
    this.inFlight = null;
    this.lensOn = false;
    this.query = null;
    this.views.reset();
    this.section.hidden = false;
    this.ui.classes.replaceChildren();
    this.ui.grid.setAttribute('aria-label', `Every layer × head (${config.layers} × ${config.heads}) over the picture; arrow keys move, the chosen head is enlarged`);
    if (!info.hasProcessor) {
      this.#say('This checkpoint came without preprocessor_config.json, so the page cannot turn a picture into its input.');
      this.onReady(true);
      return;
    }
    const image = DEMO_IMAGES.includes(this.state.image) ? this.state.image : DEMO_IMAGES[0];
    this.state.image = image;
    this.onState({ image });
    this.#loadDemo(image);
  }

  close() {
    this.config = null;
    this.shown = null;
    this.section.hidden = true;
  }

  setState(partial) {
    const before = this.state;
    const next = { ...this.state, ...partial };
    if (this.config) {
      next.off = next.off.filter(([l, h]) => l < this.config.layers && h < this.config.heads);
      next.sel = [Math.min(next.sel[0], this.config.layers - 1), Math.min(next.sel[1], this.config.heads - 1)];
    }
    this.state = next;
    this.ui.mode.value = next.mode;
    if (!this.config || !this.info.hasProcessor) return;
    if (next.image && next.image !== before.image && DEMO_IMAGES.includes(next.image)) {
      this.onState({ image: next.image });
      this.#loadDemo(next.image);
      return;
    }
    const offChanged = JSON.stringify(before.off) !== JSON.stringify(next.off);
    if (offChanged || (before.mode !== next.mode && (next.mode === 'rollout' || before.mode === 'rollout'))) {
      this.#request();
    } else if (this.shown) {
      this.#render();
    }
  }

  // The newest request when the worker is free, the picture with it if it is new.
  #request() {
    if (!this.config || (this.pending && !this.pending.blob)) return;  // a demo still being fetched
    this.onReady(false);
    this.views.request(() => {
      const sent = this.inFlight = this.pending;
      this.requested = performance.now();
      this.post({ type: 'image', key: sent?.key ?? this.key, image: sent?.blob ?? undefined, off: this.state.off, rollout: this.state.mode === 'rollout' });
    });
  }

  #requestLens() {
    this.ui.lensBox?.replaceChildren(el('p', { className: 'hint', textContent: `Running the classifier on the CLS stream after each layer (${this.config.layers} more runs)…` }));
    this.post({ type: 'imageLens', key: this.key, off: this.state.off });
  }

  /** A reply of the worker: true when it was the image view's. */
  message(data) {
    if (data.type === 'imageLens') { if (data.key === this.key) this.#renderLens(data); return true; }
    if (data.type === 'error' && data.for === 'imageLens') { this.ui.lensBox?.replaceChildren(el('p', { className: 'messages', textContent: data.message })); return true; }
    const sent = this.inFlight;
    if (data.type === 'image') {
      this.inFlight = null;
      if (sent && this.pending === sent) this.pending = null;
      const keyChanged = data.key !== this.key;
      this.key = data.key;
      if (keyChanged) {
        this.ui.messages.textContent = '';
        if (sent) this.ui.current.textContent = `Showing ${sent.name}, as the model reads it (${data.width} × ${data.height} pixels).`;
        for (const b of this.ui.demos) b.setAttribute('aria-pressed', String(`demo:${b.dataset.demo}` === data.key));
      }
      if (this.views.answered()) { this.#request(); return true; }
      this.shown = data;
      this.#render();
      if (this.lensOn && this.config.hasLmHead) this.#requestLens();
      return true;
    }
    if (data.type === 'error' && data.for === 'image') {
      this.inFlight = null;
      if (sent && this.pending === sent) this.pending = null;
      // The worker kept its last picture: so does the page (and the link, for a demo).
      if (sent) this.onState({ image: this.state.image = this.key.startsWith('demo:') ? this.key.slice(5) : '' });
      this.#say(`${sent ? 'This picture was not shown' : 'The view failed'}: ${data.message.replace(/^multihead: /, '')}`);
      if (this.views.answered()) this.#request();
      else this.onReady(true);
      return true;
    }
    return false;
  }

  /** A reply for a model since replaced: nothing to draw, but the worker is free again. */
  stale(data) {
    if (data.type === 'image' || (data.type === 'error' && data.for === 'image')) this.views.free();
  }

  // ---- drawing ----

  #weightsOf(layer, head) {
    return headWeights(this.shown, this.state.mode, layer, head, this.config.heads);
  }

  /** What the figure shows: { title, weights (n × n), rollout }. */
  figureWeights() {
    const [l, h] = this.state.sel;
    if (this.state.mode === 'rollout' && this.shown.rollout) return { title: 'Attention rollout', weights: this.shown.rollout, rollout: true };
    return { title: headName(l, h), weights: this.#weightsOf(l, h), rollout: false };
  }

  #render() {
    const drawStart = performance.now();
    const d = this.shown;
    if (!d) return;
    drawPicture(this.ui.picture, d.pixels, d.width, d.height);
    this.#renderFigure();
    this.#renderGrid();
    this.#renderClasses();
    const { layers, heads } = this.config;
    const drawMs = performance.now() - drawStart;
    this.ui.timing.textContent = `${d.rows} × ${d.cols} patches + ${d.prefix} (${d.prefix === 2 ? 'CLS, distillation' : 'CLS'}) = ${d.n} tokens · ${layers} × ${heads} = ${layers * heads} heads · ` +
      `forward ${d.forwardMs.toFixed(1)} ms in the worker${d.ablated ? ' (twice: with and without the switched-off heads)' : ''} · drawing ${drawMs.toFixed(1)} ms · ` +
      `${(performance.now() - this.requested).toFixed(0)} ms from request to picture`;
    this.ui.timing.dataset.forwardMs = d.forwardMs.toFixed(2);
    this.ui.timing.dataset.drawMs = drawMs.toFixed(2);
    this.ui.timing.dataset.totalMs = (performance.now() - this.requested).toFixed(2);
    this.onReady(true);
  }

  #renderFigure() {
    const d = this.shown, [l, h] = this.state.sel;
    const { title, weights, rollout } = this.figureWeights();
    const query = this.query ?? 0;
    const row = patchRow(weights, d.n, d.prefix, query);
    drawOverlay(this.ui.overlay, row, d.rows, d.cols);
    const off = this.state.off.some(([a, b]) => a === l && b === h);
    const from = this.query === null ? 'the CLS token' : this.#patchName(this.query);
    this.ui.title.textContent = `${rollout ? 'Attention rollout (all layers, heads averaged, residual ½)' : `Layer ${l + 1}, head ${h + 1}`}: from ${from}`;
    this.ui.toggle.textContent = off ? `Switch ${headName(l, h)} on` : `Switch ${headName(l, h)} off`;
    this.ui.toggle.setAttribute('aria-pressed', String(off));
    this.ui.toggle.hidden = rollout;
    this.ui.scaleText.textContent = `${pct(rowMax(row))} (the row's largest patch weight)`;
    this.ui.stack.dataset.query = String(query);
    this.ui.stack.setAttribute('aria-label', `${title}: attention from ${from} over ${d.rows} × ${d.cols} patches; arrow keys move to a patch, Escape goes back to the CLS token`);
    const marker = this.ui.marker;
    marker.hidden = this.query === null;
    if (this.query !== null) {
      const p = this.query - d.prefix, r = Math.floor(p / d.cols), c = p % d.cols;
      Object.assign(marker.style, { left: `${(c / d.cols) * 100}%`, top: `${(r / d.rows) * 100}%`, width: `${100 / d.cols}%`, height: `${100 / d.rows}%` });
    }
    this.ui.readout.textContent = this.#describeRow(weights, query, title);
  }

  #patchName(token) {
    const p = token - this.shown.prefix;
    return `patch (row ${Math.floor(p / this.shown.cols) + 1}, column ${(p % this.shown.cols) + 1})`;
  }

  #describeRow(weights, query, title) {
    const d = this.shown, row = weights.subarray(query * d.n, (query + 1) * d.n);
    let best = d.prefix;
    for (let j = d.prefix; j < d.n; j += 1) if (row[j] > row[best]) best = j;
    const special = Array.from(row.subarray(0, d.prefix)).reduce((a, b) => a + b, 0);
    return `${title}, ${query === 0 ? 'CLS' : this.#patchName(query)}: the most to ${this.#patchName(best)} (${pct(row[best])}); to the ${d.prefix === 2 ? 'CLS and distillation tokens' : 'CLS token'} ${pct(special)}`;
  }

  #renderGrid() {
    const d = this.shown, { layers, heads } = this.config;
    const width = this.ui.grid.parentElement.clientWidth || 320;
    this.layout = gridLayout(width, layers, heads, d.height / d.width);
    drawImageGrid(this.ui.grid, { picture: this.ui.picture, rowOf: (l, h) => patchRow(this.#weightsOf(l, h), d.n, d.prefix, this.query ?? 0),
      layers, heads, rows: d.rows, cols: d.cols, layout: this.layout, sel: this.state.sel, off: this.state.off, sprite: this.sprite });
    this.ui.grid.dataset.layout = JSON.stringify(this.layout);  // where each tile is, for tests and tools
    this.ui.gridNote.textContent = `Every head from ${this.query === null ? 'the CLS token' : this.#patchName(this.query)}, each scaled to its own largest patch weight` +
      `${this.state.mode === 'rollout' ? ' (attention weights: rollout has one map, shown left)' : ''}; greyed: switched off.`;
  }

  #renderClasses() {
    const d = this.shown, box = this.ui.classes;
    if (!this.config.hasLmHead) {
      box.replaceChildren(el('p', { className: 'hint', textContent: 'No classifier: this checkpoint gives patch features, not labels.' }));
      return;
    }
    const off = this.state.off.map(([l, h]) => headName(l, h)).join(', ');
    const boxes = [predictionBox(d.top.map((t) => ({ token: t.label, probability: t.probability })), d.after ? 'every head on' : 'the classifier’s top 5')];
    if (d.after) {
      const after = predictionBox(d.after.map((t) => ({ token: t.label, probability: t.probability })), `without ${off}`);
      after.append(el('p', { className: 'actual', textContent: `logit of “${d.top[0].label}” changes by ${d.logitChange >= 0 ? '+' : ''}${d.logitChange.toFixed(3)}` }));
      boxes.push(after);
    }
    const lensButton = el('button', { type: 'button', id: 'ivLens', textContent: `Lens on the CLS stream (${this.config.layers} more runs)` });
    lensButton.addEventListener('click', () => { this.lensOn = true; this.#requestLens(); });
    this.ui.lensBox = el('div', { className: 'iv-lens' });
    box.replaceChildren(el('h3', { textContent: 'What the classifier says' }), el('div', { className: 'predictions' }, ...boxes),
      el('p', { className: 'hint', textContent: 'Switch heads off with the button over the picture; the labels with them off show beside.' }),
      el('div', { className: 'iv-row' }, lensButton), this.ui.lensBox);
    lensButton.hidden = this.lensOn;
  }

  #renderLens({ streams, best }) {
    const table = el('table', {}, el('thead', {}, el('tr', {}, ...['stream', 'top label', '', `p(“${best.label}”)`].map((t) => el('th', { textContent: t })))));
    const body = el('tbody');
    streams.forEach(({ top, final }, i) => {
      const bar = el('span', { className: 'bar' });
      bar.style.width = `${Math.round(final * 80)}px`;
      body.append(el('tr', {}, el('td', { textContent: i === 0 ? 'embeddings' : `after L${i}` }), el('td', { textContent: top[0].label }),
        el('td', { textContent: pct(top[0].probability) }), el('td', {}, bar, ` ${pct(final)}`)));
    });
    table.append(body);
    this.lens = { streams, best };
    this.ui.lensBox.replaceChildren(el('p', { className: 'hint', textContent: 'The lens: the final norm and the classifier applied to the CLS token’s stream after each layer (the last row is the model’s own answer).' }), table);
  }

  // ---- interaction ----

  #wireFigure() {
    const stack = this.ui.stack;
    const patchAt = (e) => {
      const rect = stack.getBoundingClientRect(), d = this.shown;
      const r = Math.floor(((e.clientY - rect.top) / rect.height) * d.rows), c = Math.floor(((e.clientX - rect.left) / rect.width) * d.cols);
      return r >= 0 && r < d.rows && c >= 0 && c < d.cols ? d.prefix + r * d.cols + c : null;
    };
    const show = (query) => {
      if (!this.shown || query === this.query) return;
      this.query = query;
      this.#renderFigure();
      this.#renderGrid();
    };
    stack.addEventListener('pointermove', (e) => { if (this.shown) show(patchAt(e)); });
    stack.addEventListener('pointerleave', (e) => { if (e.pointerType === 'mouse') show(null); });
    stack.addEventListener('keydown', (e) => {
      const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
      if (!this.shown) return;
      if (e.key === 'Escape') { e.preventDefault(); show(null); return; }
      if (!moves[e.key]) return;
      e.preventDefault();
      const d = this.shown, p = this.query === null ? Math.floor(d.rows / 2) * d.cols + Math.floor(d.cols / 2) : this.query - d.prefix;
      const r = Math.max(0, Math.min(d.rows - 1, Math.floor(p / d.cols) + (this.query === null ? 0 : moves[e.key][0])));
      const c = Math.max(0, Math.min(d.cols - 1, (p % d.cols) + (this.query === null ? 0 : moves[e.key][1])));
      show(d.prefix + r * d.cols + c);
    });
  }

  #wireGrid() {
    const grid = this.ui.grid;
    grid.addEventListener('click', (e) => {
      if (!this.shown) return;
      const rect = grid.getBoundingClientRect();
      const at = headAt(this.layout, e.clientX - rect.left, e.clientY - rect.top, this.config.layers, this.config.heads);
      if (at) this.#select(...at);
    });
    grid.addEventListener('keydown', (e) => {
      const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
      if (!moves[e.key] || !this.shown) return;
      e.preventDefault();
      const [l, h] = this.state.sel;
      this.#select(Math.max(0, Math.min(this.config.layers - 1, l + moves[e.key][0])), Math.max(0, Math.min(this.config.heads - 1, h + moves[e.key][1])));
    });
    this.resize = new ResizeObserver(() => { if (this.shown) this.#renderGrid(); });
    this.resize.observe(this.ui.body);
  }

  #select(layer, head) {
    this.state.sel = [layer, head];
    this.onState({ sel: [layer, head] });
    this.#renderFigure();
    this.#renderGrid();
    this.ui.grid.setAttribute('aria-label', `Every layer × head over the picture; chosen: layer ${layer + 1}, head ${head + 1}; arrow keys move`);
  }

  #toggleHead(layer, head) {
    const off = this.state.off.some(([l, h]) => l === layer && h === head);
    const next = off ? this.state.off.filter(([l, h]) => l !== layer || h !== head) : [...this.state.off, [layer, head]];
    this.onState({ off: next });
    this.setState({ off: next });
  }

  // ---- exports ----

  #export(kind) {
    if (!this.shown) return;
    const name = `${(this.label || 'model').replace(/[^\w.-]+/g, '_')}-${this.state.image || 'picture'}`;
    const { title, weights } = this.figureWeights();
    const row = patchRow(weights, this.shown.n, this.shown.prefix, this.query ?? 0);
    const opacity = Number(this.ui.opacity.value) / 100;
    if (kind === 'png') exportImagePng(this.ui.picture, this.ui.overlay, opacity, `${name}-${title.replace(/\s+/g, '')}.png`);
    else if (kind === 'svg') exportImageSvg(this.ui.picture, row, this.shown, opacity, title, `${name}-${title.replace(/\s+/g, '')}.svg`);
    else if (kind === 'grid') this.ui.grid.toBlob((blob) => download(`${name}-all-heads.png`, blob), 'image/png');
    else {
      const { layers, heads } = this.config;
      const perHead = [];
      for (let l = 0; l < layers; l += 1) for (let h = 0; h < heads; h += 1) perHead.push({ layer: l + 1, head: h + 1, cls: Array.from(patchRow(this.#weightsOf(l, h), this.shown.n, this.shown.prefix, 0)) });
      exportImageJson({ model: this.label, image: this.state.image || 'your picture', mode: this.state.mode, patchGrid: { rows: this.shown.rows, cols: this.shown.cols },
        heads: perHead, rollout: this.shown.rollout ? Array.from(patchRow(this.shown.rollout, this.shown.n, this.shown.prefix, 0)) : null,
        top: this.shown.top, switchedOff: this.state.off.map(([l, h]) => headName(l, h)), after: this.shown.after, lens: this.lens ?? null }, `${name}.json`);
    }
  }

  destroy() { this.resize?.disconnect(); }
}
