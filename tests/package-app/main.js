// A consumer app, bundled by Vite, that imports the package as an npm user would:
// the JS API and the widget ('multihead/widget'). On a cross-origin isolated host, threads: 'auto'
// gets the threaded build (its Web Workers bundled by Vite too).
import { createMultiHeadAttention, loadMultihead, runtimeInfo, setThreads } from 'multihead';
import 'multihead/widget';

await loadMultihead({ threads: 'auto' });
const mha = await createMultiHeadAttention({ dModel: 8, heads: 2, seed: 3 });
const x = Float32Array.from({ length: 3 * 8 }, (_, i) => Math.sin(i));
const { output, attentions: attention } = mha.forward(x, { causal: true, returnAttention: true });
// A call large enough to be split over threads, at every thread count available: same bits.
const big = await createMultiHeadAttention({ dModel: 64, heads: 4, seed: 1 });
const bigX = Float32Array.from({ length: 64 * 64 }, (_, i) => Math.cos(i * 0.1));
const info = await runtimeInfo();
const outputs = [];
for (let t = 1; t <= info.threads; t++) {
  await setThreads(t);
  outputs.push(Array.from(big.forward(bigX).output));
}
window.multiheadResult = {
  output: Array.from(output), attention: Array.from(attention), weights: Array.from(mha.getWeights().wq),
  simd: info.simdFloatsPerPacket, threads: info.threads, threadedBuild: info.threadedBuild,
  sameAtEveryThreadCount: outputs.every((o) => o.every((v, i) => v === outputs[0][i])),
};
document.getElementById('output').textContent = JSON.stringify(window.multiheadResult);
