// The step-by-step view of one head: each step a small matrix with its shape and real numbers.

const MAX_ROWS = 8, MAX_COLS = 6;

function cellText(v) {
  if (v === -Infinity) return '−∞';
  if (v === Infinity) return '∞';
  const a = Math.abs(v);
  return a !== 0 && (a < 0.001 || a >= 1000) ? v.toExponential(1) : v.toFixed(3);
}

function matrixTable(values, rows, cols, rowLabels, colLabels) {
  const table = document.createElement('table');
  const head = table.insertRow();
  head.appendChild(document.createElement('th'));
  const shownCols = Math.min(cols, MAX_COLS);
  for (let c = 0; c < shownCols; c++) {
    const th = document.createElement('th');
    th.textContent = colLabels ? colLabels[c] : String(c);
    head.appendChild(th);
  }
  if (cols > shownCols) head.appendChild(Object.assign(document.createElement('th'), { textContent: '…' }));
  for (let r = 0; r < Math.min(rows, MAX_ROWS); r++) {
    const tr = table.insertRow();
    const th = document.createElement('th');
    th.textContent = rowLabels[r];
    tr.appendChild(th);
    for (let c = 0; c < shownCols; c++) tr.insertCell().textContent = cellText(values[r * cols + c]);
    if (cols > shownCols) tr.insertCell().textContent = '…';
  }
  if (rows > MAX_ROWS) table.insertRow().insertCell().textContent = '⋮';
  return table;
}

/**
 * Renders the steps of trace t (from mha.trace) into container.
 * info = { x, d, headDim, scale, rows: query tokens, cols: key tokens, masked: boolean }
 */
export function renderWalkthrough(container, t, info) {
  const { d, headDim: dk, rows, cols } = info;
  const nQ = t.nQ, nK = t.nK, i = t.head;
  const steps = [
    ['X', `token vectors${info.pe ? ' + positions' : ''}`, info.x, nQ, d, rows, null],
    [`Q${sub(i)} = X·W_Q${sub(i)} + b`, 'what each token is looking for', t.q, nQ, dk, rows, null],
    [`K${sub(i)} = X·W_K${sub(i)} + b`, 'what each token offers to be found by', t.k, nK, dk, cols, null],
    [`V${sub(i)} = X·W_V${sub(i)} + b`, 'what each token passes on when attended to', t.v, nK, dk, cols, null],
    [`Q${sub(i)}·K${sub(i)}ᵀ`, 'raw match of every query with every key', t.scores, nQ, nK, rows, cols],
    [`× ${info.scale.toPrecision(3)} (= 1/(T·√${dk}))`, 'scaled so scores do not grow with d_k', t.scaled, nQ, nK, rows, cols],
    ['+ mask', info.masked ? 'blocked pairs become −∞' : 'no mask: unchanged', t.masked, nQ, nK, rows, cols],
    [`A${sub(i)} = softmax(rows)`, 'each row now sums to 1: the heatmap', t.attention, nQ, nK, rows, cols],
    [`A${sub(i)}·V${sub(i)}`, 'each token’s weighted mix of values', t.headOutput, nQ, dk, rows, null],
    ['concat(heads)', `all ${d / dk} heads side by side`, t.concat, nQ, d, rows, null],
    ['Y = concat·W_O + b_O', 'the layer’s output, one vector per token', t.output, nQ, d, rows, null],
  ];
  const frag = document.createDocumentFragment();
  for (const [title, note, values, r, c, rowLabels, colLabels] of steps) {
    const box = document.createElement('div');
    box.className = 'step';
    box.appendChild(Object.assign(document.createElement('h3'), { textContent: `${title}  ·  ${r} × ${c}` }));
    box.appendChild(Object.assign(document.createElement('p'), { textContent: note }));
    const wrap = document.createElement('div');
    wrap.className = 'matrix';
    wrap.appendChild(matrixTable(values, r, c, rowLabels, colLabels));
    box.appendChild(wrap);
    frag.appendChild(box);
  }
  container.replaceChildren(frag);
}

function sub(i) { return String(i + 1).replace(/\d/g, (c) => '₀₁₂₃₄₅₆₇₈₉'[c]); }
