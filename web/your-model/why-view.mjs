// "Why this prediction", beside the heatmaps of the "Your model" page (and the widget's
// view="lens" / "attribution"): the logit lens as a layers × positions grid, head attribution as a
// layers × heads grid, activation patching against a second prompt, and token contributions as a
// graph across layers. The worker computes (why-compute.mjs); this class draws, and keeps its part
// of the page's state (panel, target, contrast, corrupted prompt, what to patch) for the URL.
import { csvField, download } from '../common/export.mjs';
import { NewestWins } from '../common/newest-wins.mjs';
import { el, pct } from '../common/dom.mjs';
import { viridisCss } from '../common/colormap.mjs';

export const WHY_PANELS = ['lens', 'attribution', 'patching', 'contributions'];
export const PATCH_WHAT = ['heads', 'residual', 'mlps'];

const WHAT_IT_MEASURES = {
  lens: 'What the residual stream would predict if the model stopped after each layer: its final norm and output head applied early. It shows when a prediction forms, not which part formed it.',
  attribution: 'Each head’s and MLP’s direct write towards the target’s logit (minus the contrast’s), through the final norm frozen at this input. It is linear: what a head does through later layers is not counted.',
  patching: 'How much of the clean prompt’s logit difference comes back when one activation of the corrupted run is taken from the clean run, one component at a time. Components that only matter together each show little.',
  contributions: 'How much each token’s row makes up each position’s row after a layer’s attention and residual connection (Kobayashi et al. 2021: norms of the weighted, transformed vectors). The MLPs are not counted.',
};

export const whyCss = `
.why-tabs { display: flex; flex-wrap: wrap; gap: 4px; }
.why-tabs button[aria-pressed="true"] { background: var(--accent, #1a5fb4); color: #fff; }
.why-grid { display: grid; gap: 2px; overflow-x: auto; max-width: 100%; padding-bottom: 4px; }
.why-grid .why-head { font-size: 0.7rem; color: var(--muted, #666); text-align: center; white-space: pre; overflow: hidden; text-overflow: ellipsis; }
.why-grid button { font: 0.7rem ui-monospace, monospace; min-width: 2.6em; height: 1.9em; padding: 0 2px; border: 1px solid transparent; border-radius: 2px; cursor: pointer; white-space: pre; overflow: hidden; text-overflow: ellipsis; }
.why-grid button:focus-visible, .why-grid button[aria-pressed="true"] { border-color: var(--accent, #1a5fb4); outline: 1px solid var(--accent, #1a5fb4); }
.why-detail { font-size: 0.85rem; min-height: 1.2em; }
.why-detail ol { margin: 4px 0; padding-left: 1.4em; }
.why-graph { width: 100%; max-width: 760px; overflow-x: auto; }
.why-graph svg { display: block; }
.why-row { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin: 6px 0; }
.why-row textarea { flex: 1 1 18em; min-width: 0; }
.why-row input[type="text"] { width: 8em; }
.why-row select { max-width: min(22em, 70vw); }
`;

const short = (text, n = 7) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);
// Blue (negative) – white – red (positive), for signed values already divided by their scale.
function divergingCss(x) {
  const t = Math.max(-1, Math.min(1, x || 0));
  const mix = (a, b) => Math.round(255 + (b - 255) * Math.abs(t));
  return t >= 0 ? `rgb(${mix(0, 178)}, ${mix(0, 24)}, ${mix(0, 43)})` : `rgb(${mix(0, 33)}, ${mix(0, 102)}, ${mix(0, 172)})`;
}

export class WhyView {
  /**
   * @param {{ post: (message) => void, onState: (partial) => void, onSelectHead: (layer, head) => void }} hooks
   */
  constructor({ post, onState, onSelectHead }) {
    this.post = post;
    this.onState = onState;
    this.onSelectHead = onSelectHead;
    this.state = { why: '', target: '', contrast: '', corrupt: '', patch: 'heads' };
    this.seq = 0;
    this.requests = new NewestWins();
    this.data = null;  // the panel's last result, for export
    this.offered = '';  // the corrupted prompt the worker last offered: replaced when the text changes
    const ui = this.ui = {};
    ui.tabs = el('div', { className: 'why-tabs', role: 'group' });
    ui.tabs.setAttribute('aria-label', 'Why this prediction');
    for (const [panel, label] of [['lens', 'Logit lens'], ['attribution', 'Head attribution'], ['patching', 'Patching'], ['contributions', 'Contributions']]) {
      const b = el('button', { type: 'button', textContent: label, id: `why-${panel}` });
      b.dataset.panel = panel;
      b.addEventListener('click', () => this.setState({ why: this.state.why === panel ? '' : panel }));
      ui.tabs.append(b);
    }
    ui.about = el('p', { className: 'hint' });
    ui.target = el('input', { type: 'text', id: 'whyTarget', placeholder: 'top prediction' });
    ui.contrast = el('input', { type: 'text', id: 'whyContrast', placeholder: 'none' });
    ui.targets = el('div', { className: 'why-row' }, el('label', {}, 'target ', ui.target), el('label', {}, 'against ', ui.contrast));
    ui.corrupt = el('textarea', { rows: 2, id: 'whyCorrupt', spellcheck: false });
    ui.corrupt.setAttribute('aria-label', 'The corrupted prompt (same number of tokens)');
    ui.what = el('select', { id: 'whyWhat' }, ...PATCH_WHAT.map((w) => el('option', { value: w, textContent: { heads: 'each head', residual: 'the residual at each layer × position', mlps: 'each MLP' }[w] })));
    ui.run = el('button', { type: 'button', textContent: 'Patch', id: 'whyRun' });
    ui.cancel = el('button', { type: 'button', textContent: 'Cancel', id: 'whyCancel', disabled: true });
    ui.progress = el('progress', { max: 1, value: 0, hidden: true });
    ui.patchBox = el('div', {}, el('div', { className: 'why-row' }, el('label', { htmlFor: 'whyCorrupt', textContent: 'Corrupted prompt' }), ui.corrupt),
      el('div', { className: 'why-row' }, el('label', {}, 'patch ', ui.what), ui.run, ui.cancel, ui.progress));
    ui.threshold = el('input', { type: 'range', min: 0.02, max: 0.5, step: 0.01, value: 0.1, id: 'whyThreshold' });
    ui.graphBox = el('div', { className: 'why-row' }, el('label', {}, 'edges from ', ui.threshold));
    ui.summary = el('p', { className: 'why-detail', id: 'whySummary' });
    ui.summary.setAttribute('aria-live', 'polite');
    ui.grid = el('div', { className: 'why-grid', id: 'whyGrid' });
    ui.graph = el('div', { className: 'why-graph', id: 'whyGraph' });
    ui.detail = el('div', { className: 'why-detail', id: 'whyDetail' });
    ui.exports = el('div', { className: 'exports' });
    for (const kind of ['png', 'svg', 'csv', 'json']) {
      const b = el('button', { type: 'button', textContent: `why ${kind.toUpperCase()}` });
      b.dataset.export = `why-${kind}`;
      b.addEventListener('click', () => this.#export(kind));
      ui.exports.append(b);
    }
    ui.body = el('div', {}, ui.about, ui.targets, ui.patchBox, ui.graphBox, ui.summary, ui.grid, ui.graph, ui.detail, ui.exports);
    this.section = el('section', { className: 'why', id: 'why' }, el('h3', { textContent: 'Why this prediction' }), ui.tabs, ui.body);
    const changed = (key, input) => input.addEventListener('change', () => this.setState({ [key]: input.value }));
    changed('target', ui.target);
    changed('contrast', ui.contrast);
    changed('patch', ui.what);
    ui.corrupt.addEventListener('input', () => this.setState({ corrupt: ui.corrupt.value }, false));
    ui.threshold.addEventListener('input', () => this.#drawContributions());
    ui.run.addEventListener('click', () => this.#patch());
    ui.cancel.addEventListener('click', () => this.post({ type: 'cancelPatch' }));
    this.#show();
  }

  /** A model is being loaded: answers still on their way are for the one it replaces. */
  reset() {
    this.requests.reset();
    this.#patchDone();
  }

  /** The page's model and text changed (config null: no model). */
  setContext({ config, text, pair, pos }) {
    this.config = config;
    this.text = { text, pair, pos };
    this.#offerCorruption();
    if (this.state.why && this.state.why !== 'patching') this.request();
  }

  setState(partial, refresh = true) {
    this.state = { ...this.state, ...partial };
    if ('why' in partial) this.#offerCorruption();
    this.onState(this.state);
    this.#show();
    if (refresh && this.state.why !== 'patching') this.request();
  }

  #show() {
    const { why, target, contrast, corrupt, patch } = this.state;
    for (const b of this.ui.tabs.children) b.setAttribute('aria-pressed', String(b.dataset.panel === why));
    this.ui.body.hidden = !why;
    this.ui.about.textContent = WHAT_IT_MEASURES[why] ?? '';
    this.ui.targets.hidden = why === 'contributions';
    this.ui.contrast.parentElement.hidden = why === 'lens';
    this.ui.patchBox.hidden = why !== 'patching';
    this.ui.graphBox.hidden = why !== 'contributions';
    this.ui.graph.hidden = why !== 'contributions';
    this.ui.grid.hidden = why === 'contributions';
    if (this.ui.target.value !== target) this.ui.target.value = target;
    if (this.ui.contrast.value !== contrast) this.ui.contrast.value = contrast;
    if (this.ui.corrupt.value !== corrupt) this.ui.corrupt.value = corrupt;
    this.ui.what.value = patch;
    const decoder = this.config?.causal !== false;
    this.ui.tabs.querySelector('[data-panel="attribution"]').disabled = !decoder;
    this.ui.tabs.querySelector('[data-panel="patching"]').disabled = !decoder;
  }

  /** Asks the worker for the open panel over the current text. */
  request() {
    const { why, target, contrast } = this.state;
    if (!why || why === 'patching' || !this.config || !this.text) return;
    if (!this.config.causal && why === 'attribution') {
      this.ui.summary.textContent = 'Head attribution needs a decoder: an encoder normalises after every layer, so no residual stream reaches its output whole.';
      return;
    }
    // One request at a time, the newest sent when the answer comes (as the heatmaps' requests are).
    this.requests.request(() => this.post({ type: 'why', seq: ++this.seq, panel: why, ...this.text, target, contrast: why === 'lens' ? '' : contrast }));
  }

  #answered() {
    if (this.requests.answered()) this.request();
  }

  /** A reply from the worker; true when it was this view's. */
  message(data) {
    if (data.type === 'why') {
      this.#answered();
      if (data.seq !== this.seq || data.panel !== this.state.why || this.requests.inFlight) return true;
      this.data = data;
      if (data.panel === 'lens') this.#drawLens(data);
      else if (data.panel === 'attribution') this.#drawAttribution(data);
      else this.#drawContributions();
      return true;
    }
    if (data.type === 'corruption') {
      const own = this.state.corrupt && this.state.corrupt !== this.offered;
      if (data.text !== this.text?.text || own) return true;  // a text since edited, or the user's own prompt
      this.offered = data.corrupt ?? '';
      this.setState({ corrupt: this.offered }, false);
      if (!data.corrupt) this.ui.summary.textContent = `No corrupted prompt offered: ${data.reason}.`;
      return true;
    }
    if (data.type === 'patchProgress' || data.type === 'patched') {
      this.ui.progress.value = data.type === 'patched' ? 1 : data.done / data.total;
      this.#drawPatch(data);
      if (data.type === 'patched') this.#patchDone();
      return true;
    }
    if (data.type === 'error' && (data.for === 'why' || data.for === 'patch')) {
      if (data.for === 'why') this.#answered();
      this.ui.summary.textContent = data.message.replace(/^multihead: /, '');
      this.ui.grid.replaceChildren();
      if (data.for === 'patch') this.#patchDone();
      return true;
    }
    return false;
  }

  // A grid of buttons: header row, then rows of cells { text, fill, color, label, onClick }.
  #grid(columns, header, rows) {
    const grid = this.ui.grid;
    grid.style.gridTemplateColumns = `3.4em repeat(${columns}, minmax(2.6em, 1fr))`;
    const nodes = [el('span'), ...header.map((h) => el('span', { className: 'why-head', textContent: short(h, 8), title: h }))];
    for (const { name, cells } of rows) {
      nodes.push(el('span', { className: 'why-head', textContent: name }));
      for (const c of cells) {
        const b = el('button', { type: 'button', textContent: c.text });
        b.style.background = c.fill;
        b.style.color = c.color;
        b.setAttribute('aria-label', c.label);
        b.title = c.label;
        b.addEventListener('click', () => {
          for (const other of grid.querySelectorAll('button[aria-pressed="true"]')) other.setAttribute('aria-pressed', 'false');
          b.setAttribute('aria-pressed', 'true');
          c.onClick?.();
        });
        nodes.push(b);
      }
    }
    grid.replaceChildren(...nodes);
    this.svgCells = { columns, header, rows };
  }

  #drawLens({ data, tokens }) {
    const [streams, positions, k] = data.shape;
    const rows = Array.from({ length: streams }, (_, s) => ({
      name: s === 0 ? 'emb' : `L${s}`,
      cells: data.positions.map((position, p) => {
        const at = (s * positions + p) * k, probability = data.probabilities[at];
        const label = `after ${s === 0 ? 'the embeddings' : `layer ${s}`}, at “${tokens[position].text}”: ${data.labels[at]} ${pct(probability)}`;
        return {
          text: short(data.labels[at]), fill: viridisCss(probability), color: probability > 0.6 ? '#000' : '#fff', label,
          onClick: () => {
            const list = el('ol', {}, ...Array.from({ length: k }, (_, i) => el('li', { textContent: `${JSON.stringify(data.labels[at + i])} ${pct(data.probabilities[at + i])}` })));
            const target = data.target ? el('p', { textContent: `${JSON.stringify(data.target.label)}: ${pct(data.target.probabilities[s * positions + p])}, rank ${data.target.ranks[s * positions + p] + 1}` }) : '';
            this.ui.detail.replaceChildren(el('p', { textContent: label }), list, target);
          },
        };
      }),
    }));
    this.#grid(positions, data.positions.map((p) => tokens[p].text), rows);
    const shown = data.positions.length < tokens.length ? ` The last ${data.positions.length} positions up to the one shown (click a token to move it).` : '';
    this.ui.summary.textContent = `Top next token at each position (columns) after each layer (rows), coloured by its probability; the last row is the model's own prediction.${shown}${data.target ? ` Click a cell for its top 5 and the rank of ${JSON.stringify(data.target.label)}.` : ' Click a cell for its top 5.'}`;
    this.ui.detail.replaceChildren();
  }

  #drawAttribution({ data, at, tokens }) {
    const [L, H] = data.headsShape;
    const scale = Math.max(1e-9, ...Array.from(data.heads, Math.abs), ...Array.from(data.mlps, Math.abs));
    const cell = (value, label, onClick) => ({ text: value.toFixed(2), fill: divergingCss(value / scale), color: Math.abs(value / scale) > 0.6 ? '#fff' : '#000', label: `${label}: ${value.toFixed(3)}`, onClick });
    const rows = Array.from({ length: L }, (_, l) => ({
      name: `L${l + 1}`,
      cells: [...Array.from({ length: H }, (_, h) => cell(data.heads[l * H + h], `layer ${l + 1}, head ${h + 1}`, () => this.onSelectHead(l, h))),
        cell(data.mlps[l], `layer ${l + 1}, MLP`)],
    }));
    this.#grid(H + 1, [...Array.from({ length: H }, (_, h) => `H${h + 1}`), 'MLP'], rows);
    const vs = data.contrast == null ? '' : ` − logit(${JSON.stringify(data.contrastLabel)})`;
    this.ui.summary.textContent = `logit(${JSON.stringify(data.targetLabel)})${vs} after “${tokens[at].text}” = ${data.logitDifference.toFixed(3)}: ` +
      `embeddings ${data.embeddings.toFixed(3)}, heads and MLPs in the grid (red raises it, blue lowers it; click a head for its heatmap), ` +
      `biases ${data.biases.toFixed(3)}; with the final norm's bias (${data.normBias.toFixed(3)}) they sum to ${(data.total + data.normBias).toFixed(3)}.`;
    this.ui.detail.replaceChildren();
  }

  #patch() {
    if (!this.config || !this.text) return;
    const { target, contrast, corrupt, patch } = this.state;
    this.ui.run.disabled = true;
    this.ui.cancel.disabled = false;
    this.ui.progress.hidden = false;
    this.ui.progress.value = 0;
    this.ui.summary.textContent = 'Patching…';
    this.post({ type: 'patch', seq: ++this.seq, text: this.text.text, corrupt, what: patch, target, contrast });
  }

  // With the patching panel open, asks the worker for a corrupted prompt of as many tokens as the
  // text, unless the user wrote their own (one the worker did not offer).
  #offerCorruption() {
    if (this.state.why !== 'patching' || !this.text || !this.config) return;
    if (this.state.corrupt && this.state.corrupt !== this.offered) return;
    this.post({ type: 'corruption', seq: ++this.seq, text: this.text.text });
  }

  #patchDone() {
    this.ui.run.disabled = false;
    this.ui.cancel.disabled = true;
    this.ui.progress.hidden = true;
  }

  #drawPatch(data) {
    const L = this.config.layers, width = data.recovered.length / L, what = this.state.patch;
    const header = what === 'heads' ? Array.from({ length: width }, (_, h) => `H${h + 1}`)
      : what === 'residual' ? Array.from({ length: width }, (_, i) => data.tokens?.[i]?.text ?? String(i)) : ['MLP'];
    const rows = Array.from({ length: L }, (_, l) => ({
      name: `L${l + 1}`,
      cells: Array.from({ length: width }, (_, i) => {
        const r = data.recovered[l * width + i];
        const label = Number.isNaN(r) ? 'not patched yet' : `layer ${l + 1}, ${what === 'heads' ? `head ${i + 1}` : what === 'residual' ? `position ${i}` : 'MLP'}: ${pct(r)} recovered`;
        return { text: Number.isNaN(r) ? '' : pct(r), fill: Number.isNaN(r) ? 'transparent' : divergingCss(r), color: Math.abs(r) > 0.6 ? '#fff' : '#000', label,
          onClick: what === 'heads' ? () => this.onSelectHead(l, i) : undefined };
      }),
    }));
    this.#grid(width, header, rows);
    this.data = { panel: 'patching', data };
    if (data.type === 'patched') {
      this.ui.summary.textContent = `Recovered share of the logit difference for ${JSON.stringify(data.targetLabel)} at the last token: clean ${data.clean.toFixed(3)}, corrupted ${data.corrupt.toFixed(3)}; 100% = the clean run's.`;
    } else {
      this.ui.summary.textContent = `Patching… ${data.done} of ${data.total}`;
    }
  }

  // The graph: a column of tokens per layer boundary, an edge j → i where token j makes up at least
  // the threshold of position i's row after the layer, its width by that share.
  #contributionsSvg() {
    const d = this.data;
    if (!d || d.panel !== 'contributions') return null;
    const [L, n] = d.data.shape, threshold = Number(this.ui.threshold.value);
    const dx = 90, dy = 18, left = 90, top = 16, W = left + L * dx + 20, Hh = top + n * dy + 10;
    const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${Hh}" viewBox="0 0 ${W} ${Hh}" font-family="ui-monospace, monospace" font-size="10">`];
    const escape = (s) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
    for (let l = 0; l <= L; l += 1) parts.push(`<text x="${left + l * dx}" y="10" text-anchor="middle" fill="#666">${l === 0 ? 'tokens' : `L${l}`}</text>`);
    for (let l = 0; l < L; l += 1)
      for (let i = 0; i < n; i += 1)
        for (let j = 0; j < n; j += 1) {
          const w = d.data.contributions[(l * n + i) * n + j];
          if (w < threshold) continue;
          parts.push(`<line x1="${left + l * dx}" y1="${top + j * dy}" x2="${left + (l + 1) * dx}" y2="${top + i * dy}" stroke="#1a5fb4" stroke-opacity="${(0.25 + 0.75 * w).toFixed(2)}" stroke-width="${(0.5 + 5 * w).toFixed(2)}"><title>layer ${l + 1}: ${escape(d.tokens[j].text)} → ${escape(d.tokens[i].text)} ${pct(w)}</title></line>`);
        }
    d.tokens.forEach((t, i) => {
      parts.push(`<text x="${left - 8}" y="${top + i * dy + 3}" text-anchor="end">${escape(short(t.text, 12))}</text>`);
      for (let l = 0; l <= L; l += 1) parts.push(`<circle cx="${left + l * dx}" cy="${top + i * dy}" r="2.5" fill="#444"/>`);
    });
    parts.push('</svg>');
    return parts.join('');
  }

  #drawContributions() {
    const svg = this.#contributionsSvg();
    if (!svg) return;
    this.ui.graph.innerHTML = svg;
    this.ui.graph.querySelector('svg').setAttribute('role', 'img');
    this.ui.graph.querySelector('svg').setAttribute('aria-label', 'Token contributions across layers: an edge from a token to a position where it makes up at least the threshold of that position’s row');
    this.ui.summary.textContent = `Edges where a token makes up at least ${pct(Number(this.ui.threshold.value))} of a position's row after a layer; wider is more.`;
  }

  // The current panel as an SVG picture (the grids as coloured cells).
  #svg() {
    if (this.state.why === 'contributions') return this.#contributionsSvg();
    const g = this.svgCells;
    if (!g) return null;
    const cw = 56, ch = 20, left = 44, top = 18;
    const W = left + g.columns * cw, H = top + g.rows.length * ch;
    const escape = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
    const out = [`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="ui-monospace, monospace" font-size="10">`];
    g.header.forEach((h, c) => out.push(`<text x="${left + c * cw + cw / 2}" y="12" text-anchor="middle">${escape(short(h, 8))}</text>`));
    g.rows.forEach((row, r) => {
      out.push(`<text x="4" y="${top + r * ch + 14}">${escape(row.name)}</text>`);
      row.cells.forEach((cell, c) => {
        out.push(`<rect x="${left + c * cw}" y="${top + r * ch}" width="${cw - 2}" height="${ch - 2}" fill="${cell.fill === 'transparent' ? 'none' : cell.fill}"/>`);
        out.push(`<text x="${left + c * cw + 3}" y="${top + r * ch + 13}" fill="${cell.color}">${escape(cell.text)}</text>`);
      });
    });
    out.push('</svg>');
    return out.join('');
  }

  #export(kind) {
    // Named by what the data is (a failed patching leaves the attribution's data shown).
    const name = `multihead-${this.data?.panel || this.state.why || 'why'}`;
    if (kind === 'json') return download(`${name}.json`, new Blob([JSON.stringify(this.data, (k, v) => (ArrayBuffer.isView(v) ? Array.from(v) : v))], { type: 'application/json' }));
    if (kind === 'csv') {
      const g = this.svgCells, lines = [];
      if (this.state.why === 'contributions' && this.data?.data) {
        const [L, n] = this.data.data.shape;
        lines.push('layer,position,token,value');
        for (let l = 0; l < L; l += 1) for (let i = 0; i < n; i += 1) for (let j = 0; j < n; j += 1) lines.push(`${l + 1},${i},${j},${this.data.data.contributions[(l * n + i) * n + j]}`);
      } else if (g) {
        lines.push(['', ...g.header].map((h) => csvField(String(h))).join(','));
        for (const row of g.rows) lines.push([csvField(String(row.name)), ...row.cells.map((c) => csvField(String(c.label)))].join(','));
      }
      return download(`${name}.csv`, new Blob([lines.join('\n')], { type: 'text/csv' }));
    }
    const svg = this.#svg();
    if (!svg) return undefined;
    if (kind === 'svg') return download(`${name}.svg`, new Blob([svg], { type: 'image/svg+xml' }));
    const image = new Image();
    image.onload = () => {
      const canvas = Object.assign(document.createElement('canvas'), { width: image.width * 2, height: image.height * 2 });
      const ctx = canvas.getContext('2d');
      ctx.fillStyle = '#fff';
      ctx.fillRect(0, 0, canvas.width, canvas.height);
      ctx.scale(2, 2);
      ctx.drawImage(image, 0, 0);
      canvas.toBlob((blob) => download(`${name}.png`, blob));
    };
    image.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
    return undefined;
  }
}
