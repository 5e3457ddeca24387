// <multihead-attention>: a live multi-head attention figure for any page.
//
//   <script type="module" src="…/multihead/web/widget.js"></script>
//   <multihead-attention sentence="The cat sat on the mat" heads="4" d-model="64" seed="42"
//                        causal view="heatmaps" controls="minimal"></multihead-attention>
//
//   <multihead-attention view="playground" task="copy"></multihead-attention>   (train live)
//   <multihead-attention view="model" src="gpt2" sentence="…"></multihead-attention>   (a real checkpoint:
//     a Hugging Face model id or the URL of a checkpoint folder; a model from another site loads
//     on the reader's click, with its size shown first, and is kept in the browser for next time)
//   <multihead-attention view="image" src="google/vit-base-patch16-224" image="cat"></multihead-attention>
//     (an image model: a demo picture by name, or the URL of a picture; every head over its patches)
//   <multihead-attention view="model" src="Helsinki-NLP/opus-mt-en-de" sentence="…" target="…"></multihead-attention>
//     (an encoder-decoder: sentence is the source, target the target; cross-attention, target down, source across)
//
// Attributes are the API and are reactive; each has a property of the same name in camelCase.
// All widgets on a page share one wasm instance, loaded when the first widget scrolls into view.
// Events (bubbling, composed): `attention-hover` { head, query, key, queryToken, keyToken, weight }
// and `head-select` { head }.
import { AttentionSession } from '../attention/session.mjs';
import { cellAt, drawHeatmap } from '../common/heatmap.mjs';
import { headEntropy, meanJensenShannon, mostAttended } from '../common/stats.mjs';
import { renderWalkthrough } from '../attention/walkthrough.mjs';
import { roleOf } from '../attention/archetypes.mjs';
import { viridisCss } from '../common/colormap.mjs';
import { D_MODELS, validHeads, validKvHeads } from '../attention/state.mjs';

const VIEWS = ['heatmaps', 'head', 'walkthrough', 'stats', 'playground', 'model', 'lens', 'attribution', 'image'];
// The views of a real checkpoint (src): its heads, its "Why this prediction" panels open, or an
// image model's picture.
const MODEL_VIEWS = { model: '', lens: 'lens', attribution: 'attribution', image: '' };
const CONTROLS = ['none', 'minimal', 'full'];

// attribute → [property, kind, default]
const ATTRIBUTES = {
  sentence: ['sentence', 'text', 'The cat sat on the mat'],
  'keys-sentence': ['keysSentence', 'text', ''],
  'd-model': ['dModel', 'int', 64],
  heads: ['heads', 'int', 4],
  'kv-heads': ['kvHeads', 'int', 0],
  seed: ['seed', 'int', 42],
  temperature: ['temperature', 'number', 1],
  causal: ['causal', 'bool', false],
  'no-positional': ['noPositional', 'bool', false],
  weights: ['weights', 'text', 'random'],
  view: ['view', 'text', 'heatmaps'],
  head: ['head', 'int', 0],
  controls: ['controls', 'text', 'none'],
  // view="playground" only (a tiny model trained live on a toy task; see web/playground.html):
  task: ['task', 'text', 'copy'],
  layers: ['layers', 'int', 2],
  'learning-rate': ['learningRate', 'number', 0.003],
  step: ['step', 'int', 0],
  // view="model" only (a Hugging Face checkpoint; see web/your-model.html):
  src: ['src', 'text', ''],
  mode: ['mode', 'text', 'attention'],
  'model-head': ['modelHead', 'text', '1.1'],
  // view="lens" / "attribution": the token explained (default: the top prediction), and against which;
  // view="model" with an encoder-decoder (t5, bart, marian): the target text (sentence is the source).
  target: ['target', 'text', ''],
  contrast: ['contrast', 'text', ''],
  // view="image": a demo picture's name (cat, ball, boats) or a picture's URL.
  image: ['image', 'text', 'cat'],
};
// The playground attributes that map onto its URL state; unset ones take the task's preset.
const PLAYGROUND_KEYS = { task: 'task', layers: 'layers', heads: 'heads', 'd-model': 'd', 'learning-rate': 'lr', seed: 'seed', step: 'step' };

const STYLE = `
:host { all: initial; display: block; contain: content;
  font: var(--multihead-font, 14px/1.4 system-ui, sans-serif);
  color: var(--multihead-color, #1d1d1f); background: var(--multihead-background, #ffffff);
  border: 1px solid var(--multihead-border-color, #d0d4da); border-radius: var(--multihead-radius, 8px);
  padding: 10px; text-align: left; }
@media (prefers-color-scheme: dark) {
  :host { color: var(--multihead-color, #e8eaed); background: var(--multihead-background, #16181c);
    border-color: var(--multihead-border-color, #3a3f47); }
}
:host([hidden]), [hidden] { display: none !important; }
* { box-sizing: border-box; }
.controls { display: flex; flex-wrap: wrap; gap: 6px 14px; align-items: center; margin-bottom: 8px; }
.controls[hidden] { display: none; }
.controls input[type=text] { flex: 1 1 220px; min-width: 0; }
input, select { font: inherit; color: inherit; background: transparent; border: 1px solid var(--multihead-border-color, #d0d4da); border-radius: 4px; padding: 2px 6px; }
input[type=number] { width: 6em; }
label { display: inline-flex; gap: 4px; align-items: center; }
:focus-visible { outline: 3px solid var(--multihead-accent, #e01b24); outline-offset: 2px; }
.heads { display: grid; gap: 10px; grid-template-columns: repeat(auto-fill, minmax(var(--multihead-head-min-width, 180px), 1fr)); }
figure { margin: 0; min-width: 0; border: 1px solid transparent; border-radius: 6px; padding: 4px; }
figure.selected { border-color: var(--multihead-accent, #1a5fb4); }
figcaption { font-size: 0.85em; display: flex; justify-content: space-between; gap: 4px; }
canvas { display: block; width: 100%; color: inherit; cursor: crosshair; touch-action: manipulation; }
.readout { font-family: ui-monospace, monospace; font-size: 0.85em; min-height: 1.4em; margin: 4px 0; overflow-wrap: anywhere; }
.message { font-size: 0.85em; color: var(--multihead-message-color, #8a5a00); white-space: pre-line; }
.message:empty { display: none; }
.legend { display: flex; gap: 6px; align-items: center; font-size: 0.8em; }
.legend span.bar { width: 100px; height: 10px; border-radius: 2px; background: linear-gradient(to right, ${[0, 0.25, 0.5, 0.75, 1].map(viridisCss).join(', ')}); }
table { border-collapse: collapse; font-size: 0.82em; margin-top: 8px; }
th, td { padding: 2px 6px; text-align: left; border-bottom: 1px solid var(--multihead-border-color, #d0d4da); vertical-align: top; }
.walkthrough { display: grid; gap: 8px; grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); margin-top: 8px; }
.step { border: 1px solid var(--multihead-border-color, #d0d4da); border-radius: 6px; padding: 4px; min-width: 0; }
.step h3 { font-size: 0.85em; margin: 0; }
.step p { font-size: 0.75em; margin: 0 0 2px; opacity: 0.75; }
.matrix { overflow-x: auto; }
.matrix table { font-family: ui-monospace, monospace; font-size: 0.7em; margin: 0; }
.matrix td, .matrix th { border: none; padding: 0 3px; text-align: right; white-space: nowrap; }
.note { font-size: 0.75em; opacity: 0.75; margin: 6px 0 0; }
`;

// A constructed stylesheet, shared by every widget, works under a CSP without 'unsafe-inline'.
const sheet = new CSSStyleSheet();
sheet.replaceSync(STYLE);

const template = document.createElement('template');
template.innerHTML = `<div class="controls" part="controls" hidden></div>
<div class="message" part="message" role="status"></div>
<div class="legend" part="legend" aria-hidden="true">0 <span class="bar"></span> 1</div>
<div class="readout" part="readout" aria-live="polite">&nbsp;</div>
<div class="heads" part="heads"></div>
<div class="extra"></div>
<p class="note" part="note"></p>`;

const session = Symbol('session');

export class MultiheadAttentionElement extends HTMLElement {
  static observedAttributes = Object.keys(ATTRIBUTES);

  constructor() {
    super();
    const root = this.attachShadow({ mode: 'open' });
    root.adoptedStyleSheets = [sheet];
    root.appendChild(template.content.cloneNode(true));
    this[session] = null;
    this._visible = false;
    this._scheduled = false;
    this._highlight = null;
    this._view = null;
    this._controlsKind = '';
    const $ = (s) => this.shadowRoot.querySelector(s);
    this._ui = { controls: $('.controls'), message: $('.message'), readout: $('.readout'), heads: $('.heads'), extra: $('.extra'), note: $('.note') };
  }

  connectedCallback() {
    // Load lazily: nothing is fetched until the widget is (nearly) visible.
    this._observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) {
        this._visible = true;
        this._observer.disconnect();
        this._schedule();
      }
    }, { rootMargin: '200px' });
    this._observer.observe(this);
    this._resize = new ResizeObserver(() => { if (this._view) this._drawHeads(); });
    this._resize.observe(this);
  }

  disconnectedCallback() {
    this._observer?.disconnect();
    this._resize?.disconnect();
    this[session]?.dispose();
    this[session] = null;
    this._visible = false;
    if (this._playground) this._closePlayground();
    if (this._model) this._closeModel();
  }

  attributeChangedCallback() { this._schedule(); }

  /** The settings the attributes describe, with invalid values replaced and reported. */
  _settings() {
    const problems = [];
    const read = (attr) => {
      const [, kind, fallback] = ATTRIBUTES[attr];
      if (kind === 'bool') return this.hasAttribute(attr) && this.getAttribute(attr) !== 'false';
      const raw = this.getAttribute(attr);
      if (raw === null) return fallback;
      if (kind === 'text') return raw;
      const v = Number(raw);
      if (!Number.isFinite(v) || (kind === 'int' && !Number.isInteger(v))) {
        problems.push(`${attr}="${raw}" is not ${kind === 'int' ? 'an integer' : 'a number'}; using ${fallback}.`);
        return fallback;
      }
      return v;
    };
    const s = {
      text: read('sentence'), text2: read('keys-sentence'), d: read('d-model'), h: read('heads'),
      kv: read('kv-heads'), seed: read('seed'), temp: read('temperature'), causal: read('causal'),
      pe: !read('no-positional'), weights: read('weights'), view: read('view'), head: read('head'),
      controls: read('controls'),
    };
    const choose = (name, value, allowed, fallback) => {
      if (allowed.includes(value)) return value;
      problems.push(`${name}="${value}" is not one of ${allowed.join(', ')}; using ${fallback}.`);
      return fallback;
    };
    s.d = choose('d-model', s.d, D_MODELS, 64);
    s.h = choose('heads', s.h, validHeads(s.d), validHeads(s.d).includes(4) ? 4 : validHeads(s.d)[0]);
    s.kv = s.kv === 0 ? s.h : choose('kv-heads', s.kv, validKvHeads(s.h), s.h);
    if (!(s.temp >= 0.05 && s.temp <= 20)) { problems.push(`temperature="${s.temp}" must be from 0.05 to 20; using 1.`); s.temp = 1; }
    if (!(s.seed >= 0 && s.seed < 2 ** 31)) { problems.push(`seed="${s.seed}" must be from 0 to 2147483647; using 42.`); s.seed = 42; }
    s.weights = choose('weights', s.weights, ['random', 'archetype'], 'random');
    if (s.weights === 'archetype') s.kv = s.h;
    s.view = choose('view', s.view, VIEWS, 'heatmaps');
    s.controls = choose('controls', s.controls, CONTROLS, 'none');
    if (!(s.head >= 0 && s.head < s.h)) { problems.push(`head="${s.head}" must be from 0 to ${s.h - 1}; using 0.`); s.head = 0; }
    s.cross = s.text2.trim() !== '';
    return { settings: s, problems };
  }

  _schedule() {
    if (!this._visible || this._scheduled) return;
    this._scheduled = true;
    requestAnimationFrame(() => {
      this._scheduled = false;
      this._update().catch((e) => { this._ui.message.textContent = `multihead: ${e.message}`; });
    });
  }

  // view="playground": the training playground (loaded on first use, so other widgets never pay
  // for it) in place of the attention figure. Its state comes from the attributes.
  async _updatePlayground() {
    const [{ PlaygroundView, playgroundSheet }, { parsePlaygroundHash }] = await Promise.all([
      import('../playground/playground-view.mjs'), import('../playground/playground-state.mjs')]);
    if (!this.isConnected) return;
    const params = new URLSearchParams();
    for (const [attr, key] of Object.entries(PLAYGROUND_KEYS)) {
      if (this.hasAttribute(attr)) params.set(key, this.getAttribute(attr));
    }
    const { state, warnings } = parsePlaygroundHash(params.toString());
    const messages = warnings.map((w) => w.replace('from the link', 'from the attributes'));
    for (const part of Object.values(this._ui)) part.hidden = true;
    if (!this._playground) {
      this.shadowRoot.adoptedStyleSheets = [sheet, playgroundSheet];
      this._playgroundBox = document.createElement('div');
      this._playgroundBox.setAttribute('part', 'playground');
      this.shadowRoot.append(this._playgroundBox);
      this._playground = new PlaygroundView(this._playgroundBox, { state });
    } else if (JSON.stringify(state) !== this._playgroundState) {
      this._playground.setState(state);
    }
    this._playgroundState = JSON.stringify(state);
    this._playground.showMessage(messages.join('\n'));
  }

  // view="model": a real checkpoint through the "Your model" view (loaded on first use).
  async _updateModel() {
    const [{ ModelView, modelViewCss }, hub, store, { parseYourModelHash }] = await Promise.all([
      import('../your-model/your-model-view.mjs'), import('../your-model/your-model-hub.mjs'), import('../your-model/your-model-store.mjs'), import('../your-model/your-model-state.mjs')]);
    if (!this.isConnected) return;
    const params = new URLSearchParams({ mode: this.getAttribute('mode') ?? 'attention', head: this.getAttribute('model-head') ?? '1.1' });
    if (this.hasAttribute('sentence')) params.set('text', this.getAttribute('sentence'));
    // image: a demo picture by name, else the URL of a picture (fetched once the model is in).
    const picture = (this.getAttribute('image') ?? '').trim();
    const demo = !picture || /^[a-z]+$/.test(picture);
    if (demo && picture) params.set('image', picture);
    const { state, warnings } = parseYourModelHash(params.toString());
    const src = (this.getAttribute('src') ?? '').trim();
    for (const part of Object.values(this._ui)) part.hidden = true;
    this.shadowRoot.querySelector('.legend').hidden = true;
    if (!this._model || this._modelSrc !== src) {
      this._closeModel(true);
      this._modelSheet ??= new CSSStyleSheet();
      this._modelSheet.replaceSync(modelViewCss);
      this.shadowRoot.adoptedStyleSheets = [sheet, this._modelSheet];
      this._modelBox = document.createElement('div');
      this._modelBox.setAttribute('part', 'model');
      const status = document.createElement('p');
      status.className = 'message';
      const button = document.createElement('button');
      button.type = 'button';
      button.hidden = true;
      const view = document.createElement('div');
      this._modelBox.append(status, button, view);
      this.shadowRoot.append(this._modelBox);
      this._model = new ModelView(view, { acceptPaste: false, onReady: (ready) => { this.dataset.ready = String(ready); } });
      this._modelSrc = src;
      this._modelState = '';
      const open = async (files, label) => {
        button.hidden = true;
        status.textContent = '';
        try {
          await this._model.open(files, label);
        } catch (error) {
          status.textContent = `multihead: ${label} could not be opened: ${error.message.replace(/^multihead: /, '')}`;
          return;
        }
        this._model.setState(this._modelPending);
        if (this._model.imageModel) this._showPicture();
        else if (this.getAttribute('view') === 'image') status.textContent = `multihead: view="image" needs an image model (vit, dinov2); ${label} is a ${this._model.config.modelType} text model.`;
      };
      if (!src) {
        status.textContent = `multihead: view="${this.getAttribute('view')}" needs src: a Hugging Face model id (like gpt2) or the URL of a checkpoint folder.`;
      } else {
        let base;
        try { base = hub.resolveSource(src); } catch (error) { status.textContent = `multihead: ${error.message.replace(/^multihead: /, '')}`; }
        const stored = base && (await store.openStored(src));
        if (stored) {
          open(stored, src);
        } else if (base && new URL(base, location.href).origin === location.origin) {
          open(new URL(base, location.href).href, src);  // the page's own files: no one else is asked
        } else if (base) {
          // Another site: nothing is fetched before the reader's click, and the size comes first.
          button.hidden = false;
          button.textContent = `Load ${src} from ${new URL(base).host}`;
          button.onclick = async () => {
            button.disabled = true;
            try {
              const plan = await hub.planDownload(base);
              button.disabled = false;
              button.textContent = `Download ${src}: ${(plan.total / 1e6).toFixed(1)} MB`;
              button.onclick = async () => {
                button.disabled = true;
                await hub.download(src, plan, { onProgress: ({ loaded, total }) => { status.textContent = `Downloading ${src}: ${(loaded / 1e6).toFixed(1)} of ${(total / 1e6).toFixed(1)} MB`; } });
                open(await store.openStored(src), src);
              };
            } catch (error) {
              button.disabled = false;
              status.textContent = `multihead: ${error.message.replace(/^multihead: /, '')}`;
            }
          };
        }
      }
    }
    this._picture = demo ? '' : picture;
    if (this._model.imageModel) this._showPicture();
    this._modelPending = { text: state.text, mode: state.mode, sel: state.sel, pos: -1, off: [], pair: '', image: state.image,
      why: MODEL_VIEWS[this.getAttribute('view')] ?? '', target: this.getAttribute('target') ?? '', contrast: this.getAttribute('contrast') ?? '',
      // An encoder-decoder: sentence is the source, target the target (typed, or generated in the widget).
      output: this.getAttribute('target') ?? '', view: 'cross', avg: '' };
    const key = JSON.stringify(this._modelPending);
    if (this._model.config && key !== this._modelState) this._model.setState(this._modelPending);
    this._modelState = key;
    if (warnings.length) this._modelBox.firstChild.textContent = warnings.map((w) => w.replace('from the link', 'from the attributes')).join('\n');
  }

  // view="image" with a picture's URL: shown once, again only when the URL changes.
  _showPicture() {
    if (!this._picture || this._picture === this._pictureShown) return;
    this._pictureShown = this._picture;
    this._model.imageView.showUrl(new URL(this._picture, location.href));
  }

  _closeModel(keepParts = false) {
    this._model?.destroy();
    this._modelBox?.remove();
    this._model = this._modelBox = null;
    this._modelSrc = this._pictureShown = undefined;
    if (keepParts) return;
    this.shadowRoot.adoptedStyleSheets = [sheet];
    for (const part of Object.values(this._ui)) part.hidden = false;
    this.shadowRoot.querySelector('.legend').hidden = false;
  }

  _closePlayground() {
    this._playground?.destroy();
    this._playgroundBox?.remove();
    this._playground = this._playgroundBox = null;
    this._playgroundState = '';
    this.shadowRoot.adoptedStyleSheets = [sheet];
    for (const part of Object.values(this._ui)) part.hidden = false;
  }

  async _update() {
    if (this.getAttribute('view') === 'playground') return this._updatePlayground();
    if (this._playground) this._closePlayground();
    if (Object.hasOwn(MODEL_VIEWS, this.getAttribute('view') ?? '')) return this._updateModel();
    if (this._model) this._closeModel();
    const { settings: s, problems } = this._settings();
    this._s = s;
    this[session] ??= new AttentionSession();
    await this[session].configure(s);
    if (!this.isConnected) return;
    const { view, notes } = this[session].run(s);
    this._view = view;
    this._ui.message.textContent = [...problems, ...notes].join('\n');
    this._renderControls(s);
    this._ui.note.textContent = s.weights === 'archetype'
      ? 'Hand-built heads (previous token, first token, local window, same word). Attention weights are not explanations.'
      : `Random weights (seed ${s.seed}) on hash-based word vectors: patterns are not linguistic. Attention weights are not explanations.`;
    if (!view) { this._ui.heads.replaceChildren(); this._ui.extra.replaceChildren(); return; }
    const shown = s.view === 'heatmaps' || s.view === 'stats' ? [...Array(s.h).keys()] : [s.head];
    this._shownHeads = shown;
    this._ui.heads.replaceChildren(...shown.map((head) => this._figure(head)));
    this._drawHeads();
    this._renderExtra(s);
    if (this._refocus !== undefined) {
      this._ui.heads.querySelector(`canvas[data-head="${this._refocus}"]`)?.focus({ preventScroll: true });
      this._refocus = undefined;
    }
    this.dispatchEvent(new CustomEvent('render', { detail: { heads: s.h, queries: view.nQ, keys: view.nK } }));
  }

  _figure(head) {
    const fig = document.createElement('figure');
    fig.setAttribute('part', 'head');
    fig.classList.toggle('selected', head === this._s.head && this._s.view !== 'head');
    const cap = document.createElement('figcaption');
    cap.setAttribute('part', 'head-title');
    const title = document.createElement('span');
    title.textContent = `Head ${head + 1}${this._s.weights === 'archetype' ? ` · ${roleOf(head)}` : ''}`;
    const focus = document.createElement('span');
    focus.textContent = `${Math.round(100 * headEntropy(this._view.attention, head, this._view.nQ, this._view.nK).focus)}% focused`;
    cap.append(title, focus);
    const canvas = document.createElement('canvas');
    canvas.setAttribute('part', 'canvas');
    canvas.tabIndex = 0;
    canvas.setAttribute('role', 'img');
    canvas.setAttribute('aria-label', `${title.textContent}: attention of ${this._view.nQ} queries over ${this._view.nK} keys; arrow keys read weights, Enter selects.`);
    canvas.dataset.head = head;
    const hover = (e) => { const cell = cellAt(canvas, e.clientX, e.clientY); if (cell) this._setHighlight({ head, ...cell }); };
    canvas.addEventListener('pointermove', hover);
    canvas.addEventListener('pointerdown', hover);
    canvas.addEventListener('pointerleave', (e) => { if (e.pointerType === 'mouse') this._setHighlight(null); });
    canvas.addEventListener('click', () => this._select(head));
    canvas.addEventListener('focus', () => { if (this._highlight?.head !== head) this._setHighlight({ head, row: 0, col: 0 }); });
    canvas.addEventListener('keydown', (e) => {
      const h = this._highlight?.head === head ? this._highlight : { head, row: 0, col: 0 };
      const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
      if (e.key in moves) {
        e.preventDefault();
        const clamp = (v, n) => Math.max(0, Math.min(n - 1, v));
        this._setHighlight({ head, row: clamp(h.row + moves[e.key][0], this._view.nQ), col: clamp(h.col + moves[e.key][1], this._view.nK) });
      } else if (e.key === 'Enter') {
        this._select(head);
      }
    });
    fig.append(cap, canvas);
    return fig;
  }

  _drawHeads() {
    const canvases = this._ui.heads.querySelectorAll('canvas');
    canvases.forEach((canvas) => {
      const head = Number(canvas.dataset.head);
      const hl = this._highlight;
      drawHeatmap(canvas, this._view.models[head], hl ? { row: hl.row, col: hl.col, cell: hl.head === head } : null);
    });
  }

  _setHighlight(next) {
    this._highlight = next;
    this._drawHeads();
    if (!next) { this._ui.readout.textContent = '\u00a0'; return; }
    const { head, row, col } = next;
    const v = this._view;
    const weight = v.attention[(head * v.nQ + row) * v.nK + col];
    this._ui.readout.textContent = `Head ${head + 1} · “${v.tokens[row]}” → “${v.keyTokens[col]}”: ${weight.toFixed(4)}`;
    this.dispatchEvent(new CustomEvent('attention-hover', {
      bubbles: true, composed: true,
      detail: { head, query: row, key: col, queryToken: v.tokens[row], keyToken: v.keyTokens[col], weight },
    }));
  }

  _select(head) {
    this.dispatchEvent(new CustomEvent('head-select', { bubbles: true, composed: true, detail: { head } }));
    if (head !== this._s.head) {
      this._refocus = head;
      this.setAttribute('head', String(head));  // re-renders
    }
  }

  _renderExtra(s) {
    const v = this._view;
    if (s.view === 'walkthrough') {
      const box = document.createElement('div');
      box.className = 'walkthrough';
      box.setAttribute('part', 'walkthrough');
      const dk = s.d / s.h;
      renderWalkthrough(box, this[session].trace(v, s.head), {
        x: v.x, d: s.d, headDim: dk, scale: 1 / (s.temp * Math.sqrt(dk)), pe: s.pe, rows: v.tokens, cols: v.keyTokens, masked: v.causal,
      });
      this._ui.extra.replaceChildren(box);
    } else if (s.view === 'stats') {
      const table = document.createElement('table');
      table.setAttribute('part', 'stats');
      const head = table.createTHead().insertRow();
      for (const t of ['head', 'entropy (nats)', 'focused', 'most-attended key per query']) head.appendChild(Object.assign(document.createElement('th'), { textContent: t }));
      const body = table.createTBody();
      for (let h = 0; h < s.h; h++) {
        const { entropy, focus } = headEntropy(v.attention, h, v.nQ, v.nK);
        const row = body.insertRow();
        row.insertCell().textContent = String(h + 1);
        row.insertCell().textContent = entropy.toFixed(3);
        row.insertCell().textContent = `${Math.round(focus * 100)}%`;
        row.insertCell().textContent = mostAttended(v.attention, h, v.nQ, v.nK).slice(0, 8)
          .map(({ key }, i) => `${v.tokens[i]}→${key < 0 ? '∅' : v.keyTokens[key]}`).join(', ');
      }
      const js = document.createElement('p');
      js.className = 'note';
      js.textContent = `Parameters: ${this[session].parameterCount.toLocaleString('en')}. Mean Jensen–Shannon divergence between heads: ${meanJensenShannon(v.attention, s.h, v.nQ, v.nK).toFixed(3)} nats.`;
      this._ui.extra.replaceChildren(table, js);
    } else {
      this._ui.extra.replaceChildren();
    }
  }

  _renderControls(s) {
    const box = this._ui.controls;
    box.hidden = s.controls === 'none';
    if (s.controls === 'none') return;
    if (this._controlsKind !== s.controls) {
      this._controlsKind = s.controls;
      box.replaceChildren();
      const add = (label, el, attr, toAttr) => {
        el.dataset.attr = attr;
        el.addEventListener(el.type === 'text' || el.type === 'number' ? 'input' : 'change', () => toAttr(el));
        if (label) { const l = document.createElement('label'); l.append(label, el); box.appendChild(l); } else box.appendChild(el);
      };
      const text = Object.assign(document.createElement('input'), { type: 'text', spellcheck: false });
      text.setAttribute('aria-label', 'Sentence');
      add(null, text, 'sentence', (el) => this.setAttribute('sentence', el.value));
      add('heads', document.createElement('select'), 'heads', (el) => this.setAttribute('heads', el.value));
      if (s.controls === 'full') {
        add('d_model', document.createElement('select'), 'd-model', (el) => this.setAttribute('d-model', el.value));
        add('K/V heads', document.createElement('select'), 'kv-heads', (el) => this.setAttribute('kv-heads', el.value));
        add('seed', Object.assign(document.createElement('input'), { type: 'number', min: 0 }), 'seed', (el) => this.setAttribute('seed', el.value || '0'));
        add('causal', Object.assign(document.createElement('input'), { type: 'checkbox' }), 'causal', (el) => this.toggleAttribute('causal', el.checked));
      }
    }
    // Reflect the current settings into the controls (without disturbing the one being typed in).
    const options = (select, values, current) => {
      if (select.options.length !== values.length || [...select.options].some((o, i) => Number(o.value) !== values[i])) {
        select.replaceChildren(...values.map((v) => new Option(String(v), String(v))));
      }
      select.value = String(current);
    };
    for (const el of box.querySelectorAll('[data-attr]')) {
      const attr = el.dataset.attr;
      if (attr === 'sentence' && this.shadowRoot.activeElement !== el) el.value = s.text;
      if (attr === 'heads') options(el, validHeads(s.d), s.h);
      if (attr === 'd-model') options(el, D_MODELS, s.d);
      if (attr === 'kv-heads') options(el, validKvHeads(s.h), s.kv);
      if (attr === 'seed' && this.shadowRoot.activeElement !== el) el.value = s.seed;
      if (attr === 'causal') el.checked = s.causal;
    }
  }
}

// Properties mirror attributes: el.heads = 8 is el.setAttribute('heads', '8').
for (const [attr, [prop, kind]] of Object.entries(ATTRIBUTES)) {
  Object.defineProperty(MultiheadAttentionElement.prototype, prop, {
    get() {
      if (kind === 'bool') return this.hasAttribute(attr) && this.getAttribute(attr) !== 'false';
      const raw = this.getAttribute(attr);
      if (raw === null) return ATTRIBUTES[attr][2];
      return kind === 'text' ? raw : Number(raw);
    },
    set(value) {
      if (kind === 'bool') this.toggleAttribute(attr, !!value);
      else if (value === null || value === undefined) this.removeAttribute(attr);
      else this.setAttribute(attr, String(value));
    },
  });
}

if (!customElements.get('multihead-attention')) customElements.define('multihead-attention', MultiheadAttentionElement);
