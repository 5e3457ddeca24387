// Threads in Node: the threaded build is for cross-origin isolated browsers only (tested with
// Playwright in tests/browser/threads.spec.mjs); here 'auto' must fall back to one thread, and
// asking for more must say why, without breaking the module.
import { describe, expect, it } from 'vitest';
import { createMultiHeadAttention, loadMultihead, runtimeInfo, setThreads, threadsAvailable } from '../../bindings/multihead.mjs';

describe('threads in Node', () => {
  it("'auto' loads the single-thread build", async () => {
    expect(threadsAvailable()).toBe(false);
    await loadMultihead({ threads: 'auto' });
    expect(await runtimeInfo()).toMatchObject({ threads: 1, threadedBuild: false });
    expect(await setThreads(1)).toBe(1);
  });

  it('asking for more threads, or for nonsense, is a clear error and changes nothing', async () => {
    await expect(setThreads(2)).rejects.toThrow(/threads need a cross-origin isolated page.*Cross-Origin-Embedder-Policy: require-corp/);
    await expect(loadMultihead({ threads: 4 })).rejects.toThrow(/threads: 4 is not possible here/);
    await expect(loadMultihead({ threads: 0 })).rejects.toThrow(/threads must be 'auto' or an integer from 1 to 16, got 0/);
    await expect(loadMultihead({ threads: 'two' })).rejects.toThrow(/got "two"/);
    await expect(setThreads(1.5)).rejects.toThrow(/integer from 1 to 16, got 1.5/);
    await expect(loadMultihead(null)).rejects.toThrow(/options must be an object/);
    const mha = await createMultiHeadAttention({ dModel: 16, numHeads: 2 });
    expect(mha.forward(new Float32Array(3 * 16)).output.every(Number.isFinite)).toBe(true);
    mha.dispose();
    expect((await runtimeInfo()).threads).toBe(1);
  });
});
