// The page's heavy work, off the main thread: tokens → X → forward pass → the selected head's
// trace → statistics. The page keeps typing smooth and sends only its newest request.
import { AttentionSession } from './session.mjs';
import { headEntropy, meanJensenShannon, mostAttended } from '../common/stats.mjs';

const session = new AttentionSession();

self.onmessage = async ({ data: { id, state } }) => {
  try {
    await session.configure(state);  // (re)creates the layer only when the settings changed
    const t0 = performance.now();
    const { view, notes, tokens } = session.run(state);
    const forwardMs = performance.now() - t0;
    if (!view) {
      self.postMessage({ id, tokens, notes, view: null });
      return;
    }
    const { nQ, nK, attention } = view;
    const head = Math.min(state.head, state.h - 1);
    const trace = session.trace(view, head);
    const heads = Array.from({ length: state.h }, (_, h) => ({
      ...headEntropy(attention, h, nQ, nK), top: mostAttended(attention, h, nQ, nK).slice(0, 12),
    }));
    const result = {
      id, tokens, notes, forwardMs, threads: session.threads, oneThreadReason: session.oneThreadReason, parameterCount: session.parameterCount,
      view: { tokens: view.tokens, keyTokens: view.keyTokens, nQ, nK, attention, x: view.x, causal: view.causal },
      trace, head, stats: { heads, diversity: meanJensenShannon(attention, state.h, nQ, nK) },
    };
    const transfer = [attention.buffer, view.x.buffer, ...Object.values(trace).filter(ArrayBuffer.isView).map((a) => a.buffer)];
    self.postMessage(result, [...new Set(transfer)]);
  } catch (error) {
    self.postMessage({ id, error: error.message });
  }
};
