// The trained-model view: text → the model's own tokens → the wasm decoder → a layers × heads grid
// of heatmaps (or the rollout), next-token predictions with and without ablated heads, and the
// model card with each head's measured role. The model is small enough to run on the main thread
// (a 128-token text takes a few milliseconds).
import { loadLanguageModel, loadMultihead } from '../../bindings/multihead.mjs';
import { cellAt, drawHeatmap, drawLegend } from '../common/heatmap.mjs';
import { MODEL_DEMOS, parseModelHash, toModelHash } from './model-state.mjs';
import { registerServiceWorker } from '../common/service-worker.mjs';
import { headName, pct } from '../common/dom.mjs';
import { predictionBox, predictionsCss } from '../common/predictions.mjs';

const predictionsSheet = new CSSStyleSheet();
predictionsSheet.replaceSync(predictionsCss);
document.adoptedStyleSheets = [...document.adoptedStyleSheets, predictionsSheet];

const $ = (id) => document.getElementById(id);
const ui = Object.fromEntries(['text', 'demos', 'tokens', 'messages', 'view', 'legend', 'readout', 'grid',
  'timing', 'predictAt', 'predictions', 'card', 'roles', 'gridHint'].map((id) => [id, $(id)]));

let model = null, report = null, loadMs = 0;
let state = null, linkWarnings = [];
let shown = null;     // { pieces, ids, n, first, run, baseline, labels, heatmaps: [{ canvas, model, layer, head }] }
let highlight = null; // { row, col }
let frame = 0;

const isOff = (layer, head) => state.off.some(([l, h]) => l === layer && h === head);
function measured(layer, head) {
  return report.heads.find((h) => h.layer === layer && h.head === head);
}

function schedule() {
  cancelAnimationFrame(frame);
  frame = requestAnimationFrame(compute);
}

function compute() {
  document.body.dataset.ready = 'false';
  const messages = [...linkWarnings];
  const { maxPositions: context, layers, heads } = model.config;
  const started = performance.now();
  const { ids: allIds, pieces: allPieces } = model.tokenize(state.text);
  if (allIds.length === 0) {
    shown = null;
    ui.grid.replaceChildren();
    ui.tokens.replaceChildren();
    ui.predictions.replaceChildren();
    ui.messages.textContent = [...messages, 'Type some text to see the heads at work.'].join('\n');
    markReady();
    return;
  }
  // The model was trained on 128-token windows: longer texts show their last 128 tokens.
  const first = Math.max(0, allIds.length - context);
  if (first > 0) messages.push(`The text has ${allIds.length} tokens; the model reads at most ${context}, so the first ${first} are left out.`);
  const ids = allIds.subarray(first), pieces = allPieces.slice(first), n = ids.length;
  const unknown = pieces.filter((p) => !p.known).length;
  if (unknown > 0) messages.push(`${unknown} word${unknown > 1 ? 's are' : ' is'} not in the model's vocabulary and read${unknown > 1 ? '' : 's'} as <unk> (dashed).`);
  if (state.pos >= n) state.pos = -1;
  const run = model.run(ids, { disabledHeads: state.off });
  const baseline = state.off.length ? model.run(ids) : run;
  const elapsed = performance.now() - started;
  const labels = pieces.map((p) => p.text);
  shown = { pieces, ids, n, run, baseline, labels, heatmaps: [] };
  ui.messages.textContent = messages.join('\n');
  renderTokens();
  renderGrid(layers, heads);
  renderPredictions();
  ui.timing.textContent = `${n} tokens · ${layers} layers × ${heads} heads · model ${state.off.length ? 'ran twice (with and without the switched-off heads) in' : 'ran in'} ${elapsed.toFixed(1)} ms (wasm, this device).`;
  writeHash();
  markReady();
}

function markReady() {
  document.body.dataset.ready = 'true';
}

function writeHash() {
  const hash = toModelHash(state);
  if (location.hash !== hash) history.replaceState(null, '', hash);
}

const position = () => (state.pos < 0 ? shown.n - 1 : state.pos);

function renderTokens() {
  const pos = position();
  ui.tokens.replaceChildren(...shown.pieces.map((p, i) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = `token${p.known ? '' : ' unk'}${i === pos ? ' lit' : ''}`;
    b.textContent = p.text;
    b.title = p.known ? `token ${p.id}: “${p.token}”` : `“${p.text}” is not in the vocabulary: the model reads <unk>`;
    b.addEventListener('click', () => { state.pos = i === shown.n - 1 ? -1 : i; schedule(); });
    return b;
  }));
}

function headFigure(title, detail, heatmap, toggle) {
  const figure = document.createElement('figure');
  figure.className = 'head';
  const caption = document.createElement('figcaption');
  const name = document.createElement('span');
  name.append(Object.assign(document.createElement('strong'), { textContent: title }), ` ${detail}`);
  caption.append(name);
  if (toggle) caption.append(toggle);
  const canvas = document.createElement('canvas');
  canvas.tabIndex = 0;
  canvas.setAttribute('role', 'img');
  canvas.setAttribute('aria-label', `${title}: ${detail}`);
  figure.append(caption, canvas);
  heatmap.canvas = canvas;
  canvas.addEventListener('pointermove', (e) => setHighlight(cellAt(canvas, e.clientX, e.clientY), heatmap));
  canvas.addEventListener('pointerleave', (e) => { if (e.pointerType === 'mouse') setHighlight(null); });
  canvas.addEventListener('click', (e) => {
    const cell = cellAt(canvas, e.clientX, e.clientY);
    if (cell) { state.pos = cell.row === shown.n - 1 ? -1 : cell.row; schedule(); }
  });
  canvas.addEventListener('keydown', (e) => {
    const cell = highlight ?? { row: position(), col: 0 };
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    if (moves[e.key]) {
      e.preventDefault();
      const row = Math.max(0, Math.min(shown.n - 1, cell.row + moves[e.key][0]));
      setHighlight({ row, col: Math.max(0, Math.min(row, cell.col + moves[e.key][1])) }, heatmap);
    } else if (e.key === 'Enter' && highlight) {
      state.pos = highlight.row === shown.n - 1 ? -1 : highlight.row;
      schedule();
    }
  });
  return figure;
}

function renderGrid(layers, heads) {
  const { n, run, labels } = shown;
  const nn = n * n;
  const figures = [];
  ui.grid.style.setProperty('--grid-columns', state.view === 'rollout' ? 1 : heads);
  ui.grid.classList.toggle('single', state.view === 'rollout');
  if (state.view === 'rollout') {
    const heatmap = { model: { weights: run.rollout, nQ: n, nK: n, rows: labels, cols: labels }, title: 'Rollout' };
    figures.push(headFigure('Attention rollout', 'all layers, heads averaged, residual counted as ½', heatmap));
    shown.heatmaps.push(heatmap);
  } else {
    for (let layer = 0; layer < layers; layer++) {
      for (let head = 0; head < heads; head++) {
        const offset = (layer * heads + head) * nn;
        const heatmap = { layer, head, title: headName(layer, head),
          model: { weights: run.attentions.subarray(offset, offset + nn), nQ: n, nK: n, rows: labels, cols: labels } };
        const m = measured(layer, head);
        const toggle = document.createElement('button');
        toggle.type = 'button';
        toggle.className = 'switch';
        toggle.setAttribute('aria-pressed', String(!isOff(layer, head)));
        toggle.textContent = isOff(layer, head) ? 'off' : 'on';
        toggle.title = `${isOff(layer, head) ? 'Switch on' : 'Switch off'} ${headName(layer, head)}`;
        toggle.addEventListener('click', () => {
          state.off = isOff(layer, head) ? state.off.filter(([l, h]) => l !== layer || h !== head) : [...state.off, [layer, head]];
          schedule();
        });
        const figure = headFigure(headName(layer, head), m ? m.role : '', heatmap, toggle);
        figure.classList.toggle('ablated', isOff(layer, head));
        figure.dataset.role = m ? m.role : '';
        figures.push(figure);
        shown.heatmaps.push(heatmap);
      }
    }
  }
  ui.grid.replaceChildren(...figures);
  for (const h of shown.heatmaps) drawHeatmap(h.canvas, h.model, highlightFor());
}

function highlightFor() {
  const row = highlight ? highlight.row : position();
  return { row, col: highlight ? highlight.col : -1, cell: !!highlight };
}

function setHighlight(cell, heatmap) {
  highlight = cell;
  if (!shown) return;
  for (const h of shown.heatmaps) drawHeatmap(h.canvas, h.model, highlightFor());
  if (!cell) { ui.readout.innerHTML = '&nbsp;'; return; }
  const { labels, n } = shown;
  const weight = heatmap.model.weights[cell.row * n + cell.col];
  ui.readout.textContent = `${heatmap.title}: “${labels[cell.row]}” (${cell.row}) → “${labels[cell.col]}” (${cell.col}): ${weight.toFixed(3)}`;
}

function predictionList(result, pos, caption) {
  const box = predictionBox(model.topPredictions(result, pos, 5), caption);
  const next = shown.pieces[pos + 1];
  if (next) {
    const p = result.probabilities[pos * model.config.vocabSize + shown.ids[pos + 1]];
    box.append(Object.assign(document.createElement('p'), { className: 'actual', textContent: `actual next: “${next.text}”${next.known ? '' : ' (<unk>)'} at ${pct(p)}` }));
  }
  return box;
}

function renderPredictions() {
  const pos = position();
  ui.predictAt.textContent = `after “${shown.labels[pos]}” (token ${pos})`;
  const lists = [];
  if (state.off.length) {
    lists.push(predictionList(shown.baseline, pos, 'every head on'));
    lists.push(predictionList(shown.run, pos, `with ${state.off.map(([l, h]) => headName(l, h)).join(', ')} off`));
  } else {
    lists.push(predictionList(shown.run, pos, 'every head on'));
  }
  ui.predictions.replaceChildren(...lists);
}

function renderCard() {
  const { config, training, loss, data } = report;
  const ppl = (nats) => Math.exp(nats).toFixed(0);
  ui.card.textContent = `${config.layers} layers × ${config.num_heads} heads, d_model ${config.d_model}, ` +
    `${config.d_ff ? `MLP ${config.d_ff}` : 'attention only'}, ${config.vocab.toLocaleString('en')}-word vocabulary, ` +
    `${config.parameters.toLocaleString('en')} parameters (fp16). Trained on Jane Austen's six novels ` +
    `(${(data.tokens / 1e3).toFixed(0)}k tokens) for ${training.steps.toLocaleString('en')} steps ` +
    `(${(training.tokens_seen / 1e6).toFixed(1)}M tokens, ${(training.seconds / 60).toFixed(0)} min on ${training.threads === 1 ? 'one CPU thread' : `${training.threads} CPU threads`}). ` +
    `Held-out loss ${loss.validation.toFixed(2)} nats/token (perplexity ${ppl(loss.validation)}), against ` +
    `${loss.bigram.toFixed(2)} for a bigram model (${ppl(loss.bigram)}) and ${loss.unigram.toFixed(2)} for word frequencies alone ` +
    `(${ppl(loss.unigram)}). On random tokens repeated twice its loss is ${loss.repeat_first_copy.toFixed(2)} ` +
    `on the first copy and ${loss.repeat_second_copy.toFixed(2)} on the second` +
    (loss.repeat_second_copy < loss.repeat_first_copy - 1 ? ': it copies what it has seen in context.' : '.') +
    ` Loaded in ${loadMs.toFixed(0)} ms.`;
  const table = document.createElement('table');
  const header = table.createTHead().insertRow();
  for (const label of ['head', 'previous token', 'first token', 'local window', 'induction', 'measured role']) {
    header.append(Object.assign(document.createElement('th'), { textContent: label }));
  }
  const body = table.createTBody();
  for (const h of report.heads) {
    const row = body.insertRow();
    row.insertCell().textContent = headName(h.layer, h.head);
    for (const key of ['previous_token', 'first_token', 'local_window', 'induction']) {
      Object.assign(row.insertCell(), { className: 'num', textContent: h[key].toFixed(2) });
    }
    row.insertCell().textContent = h.role;
  }
  table.id = 'roles';
  ui.roles.replaceWith(table);
  ui.roles = table;
}

function wire() {
  for (const text of MODEL_DEMOS) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = text.length > 48 ? `${text.slice(0, 46)}…` : text;
    b.title = text;
    b.addEventListener('click', () => { ui.text.value = text; state.text = text; state.pos = -1; linkWarnings = []; schedule(); });
    ui.demos.append(b);
  }
  ui.text.addEventListener('input', () => { state.text = ui.text.value; state.pos = -1; linkWarnings = []; schedule(); });
  ui.view.addEventListener('change', () => { state.view = ui.view.value; schedule(); });
  window.addEventListener('hashchange', () => {
    if (location.hash === toModelHash(state)) return;
    ({ state, warnings: linkWarnings } = parseModelHash(location.hash, model.config));
    ui.text.value = state.text;
    ui.view.value = state.view;
    schedule();
  });
  let lastWidth = window.innerWidth;
  window.addEventListener('resize', () => { if (window.innerWidth !== lastWidth && shown) { lastWidth = window.innerWidth; schedule(); } });
}

async function start() {
  drawLegend(ui.legend);
  const loadStarted = performance.now();
  try {
    const fetchOk = async (url) => {
      const response = await fetch(url);
      if (!response.ok) throw new Error(`could not load ${url} (HTTP ${response.status})`);
      return response;
    };
    // The wasm compiles while the model downloads.
    const [bytes, card] = await Promise.all([
      fetchOk('./model/austen.mhlm').then((r) => r.arrayBuffer()),
      fetchOk('./model/austen.json').then((r) => r.json()),
      loadMultihead(),
    ]);
    const parseStarted = performance.now();
    model = await loadLanguageModel(bytes);
    document.body.dataset.parseMs = (performance.now() - parseStarted).toFixed(0);
    report = card;
    loadMs = performance.now() - loadStarted;
  } catch (error) {
    ui.messages.textContent = `The model could not be loaded: ${error.message}`;
    document.body.dataset.ready = 'error';
    return;
  }
  ({ state, warnings: linkWarnings } = parseModelHash(location.hash, model.config));
  ui.text.value = state.text;
  ui.view.value = state.view;
  renderCard();
  document.body.dataset.loadMs = loadMs.toFixed(0);
  $('vocabSize').textContent = model.config.vocabSize.toLocaleString('en');
  wire();
  compute();
}

start();
registerServiceWorker();
