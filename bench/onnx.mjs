// Minimal ONNX model writer (protobuf wire format by hand) for the benchmark's peer graphs, so the
// benchmark needs no Python. Field numbers are from onnx.proto (IR version 8).

class Writer {
  constructor() { this.bytes = []; }
  varint(v) {
    let n = BigInt(v);
    if (n < 0n) n += 1n << 64n;
    do { let b = Number(n & 0x7fn); n >>= 7n; if (n) b |= 0x80; this.bytes.push(b); } while (n);
    return this;
  }
  tag(field, wire) { return this.varint((field << 3) | wire); }
  int(field, v) { return this.tag(field, 0).varint(v); }
  float(field, v) { this.tag(field, 5); const b = new Uint8Array(new Float32Array([v]).buffer); this.bytes.push(...b); return this; }
  bytesField(field, data) { this.tag(field, 2).varint(data.length); for (const b of data) this.bytes.push(b); return this; }
  string(field, s) { return this.bytesField(field, new TextEncoder().encode(s)); }
  message(field, build) { const w = new Writer(); build(w); return this.bytesField(field, w.bytes); }
  done() { return Uint8Array.from(this.bytes); }
}

const FLOAT = 1, INT64 = 7;

function tensor(w, name, dims, values, type = FLOAT) {
  for (const d of dims) w.int(1, d);
  w.int(2, type);
  w.string(8, name);
  const raw = type === FLOAT ? new Uint8Array(Float32Array.from(values).buffer) : new Uint8Array(BigInt64Array.from(values.map(BigInt)).buffer);
  w.bytesField(9, raw);
}

function valueInfo(w, name, dims) {
  w.string(1, name);
  w.message(2, (t) => t.message(1, (tt) => {
    tt.int(1, FLOAT);
    tt.message(2, (shape) => { for (const d of dims) shape.message(1, (dim) => (typeof d === 'string' ? dim.string(2, d) : dim.int(1, d))); });
  }));
}

/** node = { op, inputs, outputs, domain?, attrs: { name: int | float | int[] } } */
function node(w, n, index) {
  for (const i of n.inputs) w.string(1, i);
  for (const o of n.outputs) w.string(2, o);
  w.string(3, `${n.op}_${index}`);
  w.string(4, n.op);
  if (n.domain) w.string(7, n.domain);
  for (const [name, value] of Object.entries(n.attrs ?? {})) {
    w.message(5, (a) => {
      a.string(1, name);
      if (Array.isArray(value)) { a.int(20, 7); for (const v of value) a.int(8, v); }
      else if (Number.isInteger(value) && !n.floatAttrs?.includes(name)) { a.int(20, 2); a.int(3, value); }
      else { a.int(20, 1); a.float(2, value); }
    });
  }
}

/** graph = { nodes, initializers: [{ name, dims, values, type? }], inputs: [{ name, dims }], outputs: [...] } */
export function encodeModel(graph, { opsets = [['', 17]] } = {}) {
  const w = new Writer();
  w.int(1, 8);  // ir_version
  w.string(2, 'multihead-bench');
  w.message(7, (g) => {
    graph.nodes.forEach((n, i) => g.message(1, (nw) => node(nw, n, i)));
    g.string(2, 'attention');
    for (const t of graph.initializers) g.message(5, (tw) => tensor(tw, t.name, t.dims, t.values, t.type));
    for (const v of graph.inputs) g.message(11, (vw) => valueInfo(vw, v.name, v.dims));
    for (const v of graph.outputs) g.message(12, (vw) => valueInfo(vw, v.name, v.dims));
  });
  for (const [domain, version] of opsets) w.message(8, (o) => { if (domain) o.string(1, domain); o.int(2, version); });
  return w.done();
}

export const INT64_TYPE = INT64;

/**
 * Multi-head self-attention from standard ONNX ops (opset 17), returning Y and, when
 * withWeights, the attention weights (1 × h × n × n). weights = { wq, wk, wv, wo, bq, bk, bv, bo }.
 */
export function standardOpsModel({ n, d, h, weights, causal, withWeights }) {
  const dk = d / h;
  const init = [
    ...['wq', 'wk', 'wv', 'wo'].map((k) => ({ name: k, dims: [d, d], values: weights[k] })),
    ...['bq', 'bk', 'bv', 'bo'].map((k) => ({ name: k, dims: [d], values: weights[k] })),
    { name: 'heads_shape', dims: [3], values: [n, h, dk], type: INT64 },
    { name: 'flat_shape', dims: [2], values: [n, d], type: INT64 },
    { name: 'scale', dims: [], values: [1 / Math.sqrt(dk)] },
  ];
  const nodes = [];
  for (const p of ['q', 'k', 'v']) {
    nodes.push({ op: 'MatMul', inputs: ['x', `w${p}`], outputs: [`${p}_mm`] });
    nodes.push({ op: 'Add', inputs: [`${p}_mm`, `b${p}`], outputs: [`${p}_proj`] });
    nodes.push({ op: 'Reshape', inputs: [`${p}_proj`, 'heads_shape'], outputs: [`${p}_heads`] });
    nodes.push({ op: 'Transpose', inputs: [`${p}_heads`], outputs: [`${p}_t`], attrs: { perm: p === 'k' ? [1, 2, 0] : [1, 0, 2] } });
  }
  nodes.push({ op: 'MatMul', inputs: ['q_t', 'k_t'], outputs: ['scores'] });
  nodes.push({ op: 'Mul', inputs: ['scores', 'scale'], outputs: ['scaled'] });
  let logits = 'scaled';
  if (causal) {
    const mask = new Float32Array(n * n);
    for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) mask[i * n + j] = -Infinity;
    init.push({ name: 'causal_mask', dims: [n, n], values: mask });
    nodes.push({ op: 'Add', inputs: ['scaled', 'causal_mask'], outputs: ['masked'] });
    logits = 'masked';
  }
  nodes.push({ op: 'Softmax', inputs: [logits], outputs: ['attention'], attrs: { axis: -1 } });
  nodes.push({ op: 'MatMul', inputs: ['attention', 'v_t'], outputs: ['heads_out'] });
  nodes.push({ op: 'Transpose', inputs: ['heads_out'], outputs: ['concat_heads'], attrs: { perm: [1, 0, 2] } });
  nodes.push({ op: 'Reshape', inputs: ['concat_heads', 'flat_shape'], outputs: ['concat'] });
  nodes.push({ op: 'MatMul', inputs: ['concat', 'wo'], outputs: ['y_mm'] });
  nodes.push({ op: 'Add', inputs: ['y_mm', 'bo'], outputs: ['y'] });
  const outputs = [{ name: 'y', dims: [n, d] }];
  if (withWeights) outputs.push({ name: 'attention', dims: [h, n, n] });
  return encodeModel({ nodes, initializers: init, inputs: [{ name: 'x', dims: [n, d] }], outputs });
}

/**
 * The same layer with onnxruntime's fused com.microsoft.MultiHeadAttention kernel between the
 * projections (it returns no attention weights); causal masking goes in as its attention_bias.
 */
export function fusedModel({ n, d, h, weights, causal }) {
  const init = [
    ...['wq', 'wk', 'wv', 'wo'].map((k) => ({ name: k, dims: [d, d], values: weights[k] })),
    { name: 'bo', dims: [d], values: weights.bo },
    { name: 'qkv_bias', dims: [3 * d], values: [...weights.bq, ...weights.bk, ...weights.bv] },
    { name: 'batch_shape', dims: [3], values: [1, n, d], type: INT64 },
    { name: 'flat_shape', dims: [2], values: [n, d], type: INT64 },
  ];
  const nodes = [];
  for (const p of ['q', 'k', 'v']) {
    nodes.push({ op: 'MatMul', inputs: ['x', `w${p}`], outputs: [`${p}_mm`] });
    nodes.push({ op: 'Reshape', inputs: [`${p}_mm`, 'batch_shape'], outputs: [`${p}_b`] });
  }
  const inputs = ['q_b', 'k_b', 'v_b', 'qkv_bias'];
  if (causal) {  // the causal mask as the op's attention_bias input (1 × 1 × n × n)
    const bias = new Float32Array(n * n);
    for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) bias[i * n + j] = -1e9;
    init.push({ name: 'causal_bias', dims: [1, 1, n, n], values: bias });
    inputs.push('', 'causal_bias');
  }
  nodes.push({ op: 'MultiHeadAttention', domain: 'com.microsoft', inputs, outputs: ['mha'], attrs: { num_heads: h } });
  nodes.push({ op: 'Reshape', inputs: ['mha', 'flat_shape'], outputs: ['concat'] });
  nodes.push({ op: 'MatMul', inputs: ['concat', 'wo'], outputs: ['y_mm'] });
  nodes.push({ op: 'Add', inputs: ['y_mm', 'bo'], outputs: ['y'] });
  return encodeModel({ nodes, initializers: init, inputs: [{ name: 'x', dims: [n, d] }], outputs: [{ name: 'y', dims: [n, d] }] },
    { opsets: [['', 17], ['com.microsoft', 1]] });
}
