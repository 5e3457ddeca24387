// The page: state in the URL → tokens → X → the wasm layer → heatmaps, statistics, walkthrough.
import { D_MODELS, DEMO_SENTENCES, parseHash, toHash, validHeads, validKvHeads } from './state.mjs';
import { cellAt, drawHeatmap, drawLegend } from '../common/heatmap.mjs';
import { renderWalkthrough } from './walkthrough.mjs';
import { roleOf } from './archetypes.mjs';
import { exportCsv, exportJson, exportPng, exportSvg } from '../common/export.mjs';
import { registerServiceWorker } from '../common/service-worker.mjs';

const $ = (id) => document.getElementById(id);
const ui = Object.fromEntries(['text', 'text2', 'demos', 'tokens', 'd', 'h', 'kv', 'seed', 'temp', 'tempOut',
  'causal', 'pe', 'cross', 'crossBox', 'weights', 'messages', 'heads', 'readout', 'legend', 'timing', 'shapes',
  'stats', 'diversity', 'walkthrough', 'walkHead', 'weightsNote', 'exportPng', 'exportSvg', 'exportCsv',
  'exportJson', 'exportOne', 'copyLink'].map((id) => [id, $(id)]));

let { state, warnings: linkWarnings } = parseHash(location.hash);
// The forward pass, the head trace and the statistics run in a worker; the page keeps at most one
// request in flight and remembers only the newest waiting one, so typing during a long computation
// skips the stale inputs instead of queueing them.
const worker = new Worker(new URL('./compute-worker.mjs', import.meta.url), { type: 'module' });
let requestId = 0, inFlight = false, pending = false;
let result = null;          // the worker's latest answer: { view, trace, stats, … }
let view = null;            // what is drawn: { tokens, keyTokens, attention, nQ, nK, models[] }
let highlight = null;       // { row, col, head }
let enlarged = -1;

// ---------- controls ----------

function fillSelect(select, values, current, label = String) {
  select.replaceChildren(...values.map((v) => new Option(label(v), String(v), false, v === current)));
}

function syncControls() {
  // Iframe mode (embed=1): the figure without the page around it, for hosts that only allow iframes.
  document.body.classList.toggle('embed', state.embed);
  ui.text.value = state.text;
  ui.text2.value = state.text2;
  fillSelect(ui.d, D_MODELS, state.d);
  fillSelect(ui.h, validHeads(state.d), state.h);
  const kvLabel = (k) => (k === state.h ? `${k} (MHA)` : k === 1 ? '1 (MQA)' : `${k} (GQA)`);
  fillSelect(ui.kv, validKvHeads(state.h), state.kv, kvLabel);
  ui.seed.value = state.seed;
  ui.temp.value = state.temp;
  ui.tempOut.value = Number(state.temp).toFixed(2);
  ui.causal.checked = state.causal;
  ui.pe.checked = state.pe;
  ui.cross.checked = state.cross;
  ui.weights.value = state.weights;
  ui.crossBox.hidden = !state.cross;
  ui.causal.disabled = state.cross;        // causal masking is defined for self-attention here
  const archetype = state.weights === 'archetype';
  ui.kv.disabled = archetype;
  ui.pe.disabled = archetype;
}

function readControls() {
  const d = Number(ui.d.value);
  let h = Number(ui.h.value);
  if (!validHeads(d).includes(h)) h = validHeads(d).includes(4) ? 4 : validHeads(d)[0];
  let kv = Number(ui.kv.value);
  if (!validKvHeads(h).includes(kv) || ui.kv.disabled) kv = h;
  const seed = Math.max(0, Math.min(2 ** 31 - 1, Math.floor(Number(ui.seed.value) || 0)));
  state = {
    ...state, text: ui.text.value, text2: ui.text2.value, d, h, kv, seed,
    temp: Number(ui.temp.value), causal: ui.causal.checked, pe: ui.pe.checked, cross: ui.cross.checked,
    weights: ui.weights.value,
  };
  if (state.weights === 'archetype') { state.kv = state.h; state.pe = true; }
  if (state.head >= state.h) state.head = 0;
}

function onControl() {
  linkWarnings = [];  // the link's problems were shown; the user has moved on
  readControls();
  syncControls();
  schedule();
}

// ---------- computing ----------

function schedule() {
  history.replaceState(null, '', toHash(state));
  if (inFlight) { pending = true; return; }
  inFlight = true;
  pending = false;
  document.body.dataset.ready = document.body.dataset.ready ? 'busy' : '';
  worker.postMessage({ id: ++requestId, state: { ...state } });
  document.body.dataset.requests = String(requestId);
}

worker.onmessage = ({ data }) => {
  inFlight = false;
  if (pending) schedule();  // newer input arrived meanwhile: compute that next
  if (data.error) { showError(new Error(data.error)); return; }
  render(data);
};
worker.onerror = (e) => showError(new Error(e.message || 'the compute worker failed to start'));

function render(data) {
  const t1 = performance.now();
  renderTokens(data.tokens);
  ui.messages.textContent = [...linkWarnings, ...data.notes].join('\n');
  if (!data.view) {
    view = null;
    ui.heads.replaceChildren();
    markReady();
    return;
  }
  if (data.stats.heads.length !== state.h) return;  // settings changed under it; the newer answer follows
  result = data;
  view = data.view;
  view.models = Array.from({ length: state.h }, (_, head) => ({
    weights: view.attention.subarray(head * view.nQ * view.nK, (head + 1) * view.nQ * view.nK),
    nQ: view.nQ, nK: view.nK, rows: view.tokens, cols: view.keyTokens,
  }));
  renderHeads();
  const t2 = performance.now();
  renderStats();
  renderWalk();
  const t3 = performance.now();
  ui.timing.textContent = `${view.nQ} × ${view.nK} tokens, ${state.h} heads: forward pass ${data.forwardMs.toFixed(2)} ms ` +
    `(in a worker, ${data.threads > 1 ? `${data.threads} threads` : `one thread${data.oneThreadReason ? `: ${data.oneThreadReason}` : ''}`}), ` +
    `heatmaps ${(t2 - t1).toFixed(2)} ms, statistics and walkthrough ${(t3 - t2).toFixed(2)} ms.`;
  Object.assign(ui.timing.dataset, { forwardMs: data.forwardMs, drawMs: t2 - t1 });
  markReady();
}

// body[data-ready="true"] means: what is drawn is the answer to the current input (tests wait on it).
function markReady() {
  if (!document.body.dataset.readyMs) document.body.dataset.readyMs = performance.now().toFixed(0);
  document.body.dataset.ready = !pending && !inFlight ? 'true' : 'busy';
}

function showError(error) {
  ui.messages.textContent = `Something went wrong: ${error.message}`;
  console.warn(error);
}

// ---------- drawing ----------

function renderTokens(tokens) {
  const shown = tokens.slice(0, 80).map((t, i) => {
    const span = document.createElement('span');
    span.className = 'token';
    span.textContent = t;
    span.dataset.index = i;
    return span;
  });
  const label = document.createElement('span');
  label.textContent = `${tokens.length} token${tokens.length === 1 ? '' : 's'}:`;
  ui.tokens.replaceChildren(label, ...shown, ...(tokens.length > 80 ? [document.createTextNode(` … ${tokens.length - 80} more`)] : []));
}

function headTitle(head) {
  const kvNote = state.kv !== state.h ? ` · K/V head ${Math.floor(head / (state.h / state.kv)) + 1}` : '';
  const role = state.weights === 'archetype' ? ` · ${roleOf(head)}` : '';
  return `Head ${head + 1}${role}${kvNote}`;
}

function renderHeads() {
  const figures = [...ui.heads.children];
  if (figures.length !== state.h) {
    ui.heads.replaceChildren(...Array.from({ length: state.h }, (_, head) => makeHeadFigure(head)));
  }
  if (enlarged >= state.h) enlarged = -1;
  const figs = [...ui.heads.children];
  // Layout-changing writes first, then the draws (which read widths), then text: one reflow.
  figs.forEach((fig, head) => {
    fig.classList.toggle('selected', head === state.head);
    fig.classList.toggle('enlarged', head === enlarged);
  });
  figs.forEach((fig, head) => drawHeatmap(fig.querySelector('canvas'), view.models[head], highlightFor(head)));
  figs.forEach((fig, head) => {
    fig.querySelector('.title').textContent = headTitle(head);
    const { focus } = result.stats.heads[head];
    fig.querySelector('.focus').textContent = `${Math.round(100 * focus)}% focused`;
    fig.querySelector('canvas').setAttribute('aria-label', `${headTitle(head)}: attention of ${view.nQ} queries over ${view.nK} keys. Arrow keys read weights; Enter enlarges.`);
  });
}

function highlightFor(head) {
  return highlight ? { row: highlight.row, col: highlight.col, cell: head === highlight.head } : null;
}

function redrawHighlights() {
  if (!view) return;
  [...ui.heads.children].forEach((fig, head) => drawHeatmap(fig.querySelector('canvas'), view.models[head], highlightFor(head)));
  for (const span of ui.tokens.querySelectorAll('.token')) {
    const i = Number(span.dataset.index);
    span.classList.toggle('lit', !!highlight && (i === highlight.row || (!state.cross && i === highlight.col)));
  }
  if (!highlight) { ui.readout.textContent = '\u00a0'; delete ui.readout.dataset.value; return; }
  const { head, row, col } = highlight;
  const weight = view.attention[(head * view.nQ + row) * view.nK + col];
  ui.readout.textContent = `Head ${head + 1} · query “${view.tokens[row]}” (#${row + 1}) → key “${view.keyTokens[col]}” (#${col + 1}): ${weight.toFixed(6)}`;
  Object.assign(ui.readout.dataset, { value: String(weight), head, row, col });
}

function setHighlight(next) {
  highlight = next;
  redrawHighlights();
}

function makeHeadFigure(head) {
  const fig = document.createElement('figure');
  fig.className = 'head';
  const cap = document.createElement('figcaption');
  cap.append(Object.assign(document.createElement('span'), { className: 'title' }),
    Object.assign(document.createElement('span'), { className: 'focus' }));
  const canvas = document.createElement('canvas');
  canvas.tabIndex = 0;
  canvas.setAttribute('role', 'img');
  canvas.dataset.head = head;
  fig.append(cap, canvas);

  canvas.addEventListener('pointermove', (e) => {
    const cell = cellAt(canvas, e.clientX, e.clientY);
    if (cell) setHighlight({ head, ...cell });
  });
  canvas.addEventListener('pointerdown', (e) => {
    const cell = cellAt(canvas, e.clientX, e.clientY);
    if (cell) setHighlight({ head, ...cell });
  });
  canvas.addEventListener('pointerleave', (e) => { if (e.pointerType === 'mouse') setHighlight(null); });
  canvas.addEventListener('click', () => toggleEnlarge(head));
  canvas.addEventListener('focus', () => { if (!highlight || highlight.head !== head) setHighlight({ head, row: 0, col: 0 }); });
  canvas.addEventListener('keydown', (e) => {
    if (!view) return;
    const h = highlight && highlight.head === head ? highlight : { head, row: 0, col: 0 };
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1], Home: [0, -view.nK], End: [0, view.nK] };
    if (e.key in moves) {
      e.preventDefault();
      const [dr, dc] = moves[e.key];
      const clamp = (v, n) => Math.max(0, Math.min(n - 1, v));
      setHighlight({ head, row: clamp(h.row + dr, view.nQ), col: clamp(h.col + dc, view.nK) });
    } else if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      toggleEnlarge(head);
    } else if (e.key === 'Escape' && enlarged >= 0) {
      toggleEnlarge(enlarged);
    }
  });
  return fig;
}

function toggleEnlarge(head) {
  enlarged = enlarged === head ? -1 : head;
  if (state.head !== head) {
    state.head = head;
    schedule();  // the worker traces the newly selected head
  }
  renderHeads();
  ui.heads.children[head].querySelector('canvas').focus({ preventScroll: true });
}

function renderStats() {
  const { nQ, nK, tokens, keyTokens } = view;
  const dk = state.d / state.h;
  ui.shapes.textContent = `X: ${nQ} × ${state.d}  →  Q per head: ${state.h} × (${nQ} × ${dk}),  K, V per head: ` +
    `${state.kv} × (${nK} × ${dk})  →  scores and A: ${state.h} × (${nQ} × ${nK})  →  A·V: ${state.h} × (${nQ} × ${dk})  →  ` +
    `concat ${nQ} × ${state.d}  →  ·W_O  →  Y: ${nQ} × ${state.d}.   Parameters: ${result.parameterCount.toLocaleString('en')}` +
    (state.kv === state.h ? ` (4·${state.d}² + 4·${state.d})` : ` (K and V shared by ${state.h / state.kv} heads each)`);
  const table = document.createElement('table');
  const header = table.createTHead().insertRow();
  for (const label of ['head', state.weights === 'archetype' ? 'built to attend to' : 'weights', 'mean entropy (nats)', '% focused (1 − H / ln n)', 'most-attended key per query']) {
    header.appendChild(Object.assign(document.createElement('th'), { textContent: label }));
  }
  const body = table.createTBody();
  result.stats.heads.forEach(({ entropy, focus, top }, head) => {
    const row = body.insertRow();
    row.insertCell().textContent = String(head + 1);
    row.insertCell().textContent = state.weights === 'archetype' ? roleOf(head) : 'random';
    Object.assign(row.insertCell(), { className: 'num', textContent: entropy.toFixed(3) });
    Object.assign(row.insertCell(), { className: 'num', textContent: `${Math.round(focus * 100)}%` });
    const pairs = top.map(({ key }, i) => `${tokens[i]}→${key < 0 ? '∅' : keyTokens[key]}`);
    row.insertCell().textContent = pairs.join(', ') + (nQ > 12 ? ', …' : '');
  });
  ui.stats.replaceWith(table);
  table.id = 'stats';
  ui.stats = table;
  ui.diversity.textContent = state.h < 2
    ? 'One head: nothing to compare.'
    : `Diversity between heads: mean Jensen–Shannon divergence ${result.stats.diversity.toFixed(3)} nats ` +
      `(0 = all heads attend identically, ln 2 ≈ 0.693 = no overlap at all).`;
}

function renderWalk() {
  const head = state.head;
  ui.walkHead.textContent = headTitle(head);
  if (result.head !== head) return;  // the worker is tracing the newly selected head
  const trace = result.trace;
  const dk = state.d / state.h;
  renderWalkthrough(ui.walkthrough, trace, {
    x: view.x, d: state.d, headDim: dk, scale: 1 / (state.temp * Math.sqrt(dk)), pe: state.pe,
    rows: view.tokens, cols: view.keyTokens, masked: view.causal,
  });
  ui.weightsNote.textContent = state.weights === 'archetype'
    ? 'These weights were written by hand (web/attention/archetypes.mjs): each head is built to attend to the previous token, the first token, a local window, or the same word. In this mode X holds the word vector in its first half and the position in its second half, so a head can read position cleanly.'
    : `These weights are random: drawn from N(0, 2/d_model) with seed ${state.seed}. Any pattern you see is what random projections of these token vectors happen to produce — try another seed.`;
}

// ---------- exports and wiring ----------

function exportHeads() {
  if (!view) return [];
  const heads = view.models.map((model, index) => ({ index, title: headTitle(index), model }));
  return ui.exportOne.checked ? [heads[state.head]] : heads;
}
const fileBase = () => `multihead-${state.h}heads-d${state.d}-seed${state.seed}${ui.exportOne.checked ? `-head${state.head + 1}` : ''}`;

function wire() {
  for (const sentence of DEMO_SENTENCES) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = sentence;
    b.addEventListener('click', () => { ui.text.value = sentence; onControl(); });
    ui.demos.appendChild(b);
  }
  for (const el of [ui.text, ui.text2, ui.seed, ui.temp]) el.addEventListener('input', onControl);
  for (const el of [ui.d, ui.h, ui.kv, ui.causal, ui.pe, ui.cross, ui.weights]) el.addEventListener('change', onControl);
  ui.exportPng.addEventListener('click', () => exportPng(exportHeads(), `${fileBase()}.png`));
  ui.exportSvg.addEventListener('click', () => exportSvg(exportHeads(), `${fileBase()}.svg`));
  ui.exportCsv.addEventListener('click', () => exportCsv(exportHeads(), `${fileBase()}.csv`));
  ui.exportJson.addEventListener('click', () => exportJson(exportHeads(), {
    config: { dModel: state.d, heads: state.h, kvHeads: state.kv, seed: state.seed, temperature: state.temp, causal: view.causal, positionalEncoding: state.pe, weights: state.weights },
    queryTokens: view.tokens, keyTokens: view.keyTokens,
  }, `${fileBase()}.json`));
  ui.copyLink.addEventListener('click', async () => {
    try { await navigator.clipboard.writeText(location.href); ui.copyLink.textContent = 'Link copied'; } catch { ui.copyLink.textContent = 'Copy the address bar'; }
    setTimeout(() => { ui.copyLink.textContent = 'Copy link'; }, 1500);
  });
  window.addEventListener('hashchange', () => {
    if (location.hash === toHash(state)) return;
    ({ state, warnings: linkWarnings } = parseHash(location.hash));
    syncControls();
    schedule();
  });
  let lastWidth = window.innerWidth;
  window.addEventListener('resize', () => { if (window.innerWidth !== lastWidth && view) { lastWidth = window.innerWidth; renderHeads(); } });
}

drawLegend(ui.legend);
syncControls();
wire();
schedule();
registerServiceWorker();
