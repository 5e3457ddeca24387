// A consumer app, bundled by Vite, that imports the package as an npm user would:
// the JS API and the widget ('multihead/widget').
import { createMultiHeadAttention, runtimeInfo } from 'multihead';
import 'multihead/widget';

const mha = await createMultiHeadAttention({ dModel: 8, numHeads: 2, seed: 3 });
const x = Float32Array.from({ length: 3 * 8 }, (_, i) => Math.sin(i));
const { output, attention } = mha.forward(x, { causal: true, returnAttention: true });
window.multiheadResult = { output: Array.from(output), attention: Array.from(attention), weights: Array.from(mha.getWeights().wq), simd: (await runtimeInfo()).simdFloatsPerPacket };
document.getElementById('output').textContent = JSON.stringify(window.multiheadResult);
