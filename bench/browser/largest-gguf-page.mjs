// The in-browser half of bench/largest-gguf.mjs: loadPretrained(url) of one GGUF file, then one run
// of n tokens with every head's attention and every row's logits; the wasm heap before and after.
import { loadMultihead, loadPretrained, runtimeInfo } from '../../bindings/multihead.mjs';

await loadMultihead({ threads: 'auto' });
const heap = async () => { const r = await runtimeInfo(); return { heapBytes: r.heapBytes, allocatedBytes: r.allocatedBytes }; };

window.info = async () => ({ ...(await runtimeInfo()), userAgent: navigator.userAgent, isolated: crossOriginIsolated });

window.loadAndRun = async ({ url, n, vocab }) => {
  const out = { heapBefore: await heap() };
  let model;
  const t0 = performance.now();
  try {
    model = await loadPretrained(new URL(url, location.href).href);
  } catch (e) {
    return { ...out, failed: 'load', error: String(e.message ?? e), ms: performance.now() - t0, heapAfter: await heap() };
  }
  out.loadMs = performance.now() - t0;
  out.weightType = model.config.weightType;
  out.weightBytes = model.config.weightBytes;
  out.heapLoaded = await heap();
  const ids = Int32Array.from({ length: n }, (_, i) => (i * 7919 + 13) % vocab);
  try {
    const t1 = performance.now();
    const r = model.run(ids, { attentions: true });
    out.runMs = performance.now() - t1;
    out.attentionShape = r.attentionShape ?? null;
    out.attentionValues = r.attentions.length;
    out.logitValues = r.logits.length;
    // Each attention row sums to 1; none is NaN.
    let worst = 0;
    for (let row = 0; row < r.attentions.length / n; row += 1) {
      let sum = 0;
      for (let j = 0; j < n; j += 1) sum += r.attentions[row * n + j];
      worst = Math.max(worst, Math.abs(sum - 1));
    }
    out.worstRowSumError = worst;
    out.logitsFinite = r.logits.every(Number.isFinite);
    const t2 = performance.now();
    model.run(ids, { attentions: true });
    out.secondRunMs = performance.now() - t2;
  } catch (e) {
    out.failed = 'run';
    out.error = String(e.message ?? e);
  }
  out.heapAfter = await heap();
  model.dispose();
  return out;
};

window.ready = true;
