// The in-browser half of bench/threads.mjs. One page holds multihead (threaded build) and one
// onnxruntime-web configured with ?ort=<threads> (ORT reads its thread count once per page).
import { createMultiHeadAttention, loadMultihead, loadPretrained, runtimeInfo, setThreads } from '../../bindings/multihead.mjs';
import { fusedModel, standardOpsModel } from '../onnx.mjs';
import { gpt2PeerWeights, randomWeights } from '../weights.mjs';
import * as ort from '../node_modules/onnxruntime-web/dist/ort.wasm.min.mjs';

const ortThreads = Number(new URL(location.href).searchParams.get('ort') || 1);
ort.env.wasm.numThreads = ortThreads;
ort.env.wasm.simd = true;
ort.env.wasm.wasmPaths = new URL('../node_modules/onnxruntime-web/dist/', import.meta.url).href;
ort.env.logLevel = 'error';
await loadMultihead({ threads: 'auto' });

// One sample = as many back-to-back calls as fit in ~2 ms (at least one), divided: the page's
// clock ticks in 5 µs steps, too coarse for a single 8 µs call.
async function sample(fn) {
  let calls = 0;
  const t0 = performance.now();
  do { await fn(); calls++; } while (performance.now() - t0 < 2);
  return (performance.now() - t0) / calls;
}

// Medians of interleaved samples (one of each per round), after a warm-up of each. prepare[name],
// if any, runs before each of that function's samples, outside the timing.
async function timeAll(fns, prepare, seconds) {
  const names = Object.keys(fns);
  for (const name of names) {
    await prepare[name]?.();
    for (let t0 = performance.now(); performance.now() - t0 < 200;) await fns[name]();
  }
  const times = Object.fromEntries(names.map((n) => [n, []]));
  for (let t0 = performance.now(), rounds = 0; rounds < 7 || (performance.now() - t0 < seconds * 1000 && rounds < 500); rounds++) {
    for (const name of names) {
      await prepare[name]?.();
      times[name].push(await sample(fns[name]));
    }
  }
  return Object.fromEntries(names.map((n) => [n, times[n].sort((a, b) => a - b)[times[n].length >> 1]]));
}

// Times one shape: ours at each of `ourThreads`, and ORT (ops graph; fused kernel without weights).
window.measure = async ({ n, d, h, causal, withWeights, ourThreads, seconds = 1 }) => {
  const weights = randomWeights(d, n + d);
  const x = Float32Array.from({ length: n * d }, (_, i) => Math.sin(i * 0.37));
  const mha = await createMultiHeadAttention({ dModel: d, heads: h });
  mha.setWeights(weights);
  const into = { output: new Float32Array(n * d), attentions: withWeights ? new Float32Array(h * n * n) : undefined };
  const fns = {}, prepare = {};
  for (const t of ourThreads) {
    prepare[`ours${t}`] = () => setThreads(t);
    fns[`ours${t}`] = () => mha.forward(x, { causal, returnAttention: withWeights, into });
  }
  const feeds = { x: new ort.Tensor('float32', x, [n, d]) };
  const sessions = [];
  const standard = await ort.InferenceSession.create(standardOpsModel({ n, d, h, weights, causal, withWeights }), { graphOptimizationLevel: 'all' });
  sessions.push(standard);
  fns.ortOps = () => standard.run(feeds);
  if (!withWeights) {
    const fused = await ort.InferenceSession.create(fusedModel({ n, d, h, weights, causal }), { graphOptimizationLevel: 'all' });
    sessions.push(fused);
    fns.ortFused = () => fused.run(feeds);
  }
  const result = await timeAll(fns, prepare, seconds);
  for (const s of sessions) await s.release();
  mha.dispose();
  return result;
};

// GPT-2 small: ours (the random F32 checkpoint bench/gpt2.mjs writes into build/, served by
// URL) returning every head's attention and the last row's logits, at each of `ourThreads`, and
// ORT's gpt2s-attn graph (every attention, every row's logits) with random weights of the same
// scale (bench/peers/gpt2-small/README.md). Prefill of `n` tokens; one call per sample.
let gpt2 = null;
async function gpt2Models() {
  if (gpt2) return gpt2;
  const ours = await loadPretrained(new URL('../../build/gpt2-small-random/', import.meta.url).href);
  const peer = new URL('../peers/gpt2-small/', import.meta.url);
  const external = await (await fetch(new URL('gpt2s-attn.external.json', peer))).json();
  const data = gpt2PeerWeights(external);
  const graph = new Uint8Array(await (await fetch(new URL('gpt2s-attn.onnx', peer))).arrayBuffer());
  const session = await ort.InferenceSession.create(graph, { externalData: [{ path: external.data_file, data }] });
  gpt2 = { ours, session };
  return gpt2;
}

window.measureGpt2 = async ({ n, ourThreads, seconds = 1 }) => {
  const { ours, session } = await gpt2Models();
  const ids = Int32Array.from({ length: n }, (_, i) => (i * 7919 + 13) % 50257);
  const input = new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, n]);
  const fns = {}, prepare = {};
  for (const t of ourThreads) {
    prepare[`ours${t}`] = () => setThreads(t);
    fns[`ours${t}`] = () => ours.run(ids, { logits: [n - 1] });
  }
  fns.ortAttn = () => session.run({ ids: input });
  return timeAll(fns, prepare, seconds);
};

// Decoding GPT-2 small after a 16-token prompt, ms a token at each thread count: generate()
// (greedy), and the same greedy loop written by hand through run(…, { reusePrefix: true }), each
// timed from its first new token to its last (the prompt's prefill left out of both).
window.measureDecode = async ({ ourThreads, tokens = 24, rounds = 5 }) => {
  const { ours } = await gpt2Models();
  const prompt = Array.from({ length: 16 }, (_, i) => (i * 7919 + 13) % 50257);
  const argmax = (v) => v.reduce((best, x, i) => (x > v[best] ? i : best), 0);
  const bare = () => {
    const ids = [...prompt];
    let t0 = 0;
    for (let k = 0; k <= tokens; k += 1) {
      if (k === 1) t0 = performance.now();
      ids.push(argmax(ours.run(Int32Array.from(ids), { logits: [ids.length - 1], reusePrefix: true }).logits));
    }
    return (performance.now() - t0) / tokens;
  };
  const generated = async () => {
    let t0 = 0, k = 0;
    for await (const step of ours.generate(prompt, { maxNewTokens: tokens + 1, stopAtEos: false })) {
      if (k === 0) t0 = performance.now();
      k += step.id >= 0 ? 1 : 0;
    }
    return (performance.now() - t0) / tokens;
  };
  const out = {};
  for (const t of ourThreads) {
    await setThreads(t);
    const times = { bare: [], generate: [] };
    for (let r = 0; r < rounds; r += 1) {
      ours.run(Int32Array.from([1, 2, 3]), { logits: [2], reusePrefix: true });  // another text: no prefix to reuse
      times.bare.push(bare());
      times.generate.push(await generated());
    }
    const median = (v) => v.sort((a, b) => a - b)[v.length >> 1];
    out[t] = { bare: median(times.bare), generate: median(times.generate) };
  }
  return out;
};

// "Why this prediction" on GPT-2 small: one run with every head's attention at 32 tokens against
// the logit lens (every position) and the attribution of the last token; patching every head
// (144 patched runs) at 16 tokens, with the time to its first result.
window.measureWhy = async ({ ourThreads, rounds = 3 }) => {
  const { ours } = await gpt2Models();
  const ids32 = Int32Array.from({ length: 32 }, (_, i) => (i * 7919 + 13) % 50257);
  const clean = Array.from({ length: 16 }, (_, i) => (i * 7919 + 13) % 50257), corrupt = [...clean];
  corrupt[3] = (corrupt[3] + 1) % 50257;
  const median = (v) => v.sort((a, b) => a - b)[v.length >> 1];
  const time = (fn) => { const t0 = performance.now(); fn(); return performance.now() - t0; };
  const out = {};
  for (const t of ourThreads) {
    await setThreads(t);
    const r = { run: [], lens: [], lensLast: [], attribution: [], lensAndAttribution: [], patch: [], firstResult: [] };
    for (let k = 0; k < rounds; k += 1) {
      r.run.push(time(() => ours.run(ids32, { logits: [31] })));
      r.lens.push(time(() => ours.logitLens(ids32, { topK: 5 })));
      r.lensLast.push(time(() => ours.logitLens(ids32, { topK: 5, positions: [31] })));
      r.attribution.push(time(() => ours.attribute(ids32, { target: 11 })));
      r.lensAndAttribution.push(time(() => ours.logitLens(ids32, { topK: 5, positions: [31], attribute: { target: 11 } })));
      const t0 = performance.now();
      let first = 0;
      await ours.patch(clean, corrupt, { target: 11, what: 'heads', onProgress: () => { first ||= performance.now() - t0; } });
      r.patch.push(performance.now() - t0);
      r.firstResult.push(first);
    }
    out[t] = Object.fromEntries(Object.entries(r).map(([key, v]) => [key, median(v)]));
  }
  return out;
};

window.info = async () => ({ ...(await runtimeInfo()), ortThreads, userAgent: navigator.userAgent, cores: navigator.hardwareConcurrency });
window.ready = true;
