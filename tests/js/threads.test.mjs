// Threads in Node: threads: 'auto' loads the CommonJS threaded build (dist/node/, Node's
// worker_threads) where there is more than one core. The same bits at any thread count, the
// float64 reference, transformers' outputs for every fixture, clear errors on bad input, and a
// process that exits by itself when the program is done (its workers must not keep it alive).
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import {
  createMultiHeadAttention, loadMultihead, loadPretrained, runtimeInfo, setThreads, threadsAvailable,
} from '../../bindings/multihead.mjs';
import { FIXTURES, MODELS, expectedOutputs, maxAbs, maxAbsDiff } from './checkpoints.mjs';
import {
  THREAD_SHAPES, expectMisuseHandled, expectSameAtEveryThreadCount, misuse, runAtThreadCounts,
} from './thread-checks.mjs';

const cores = typeof availableParallelism === 'function' ? availableParallelism() : cpus().length;
const poolThreads = 1 + Math.max(1, Math.min(15, cores - 1));  // the caller + one worker per extra core
const sameBits = (a, b) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
const relaxedFlag = [process.env.MULTIHEAD_EXPECT_BUILD === 'relaxed' ? '--experimental-wasm-relaxed-simd' : '--no-experimental-wasm-relaxed-simd'];

describe('threads in Node', () => {
  it("'auto' loads the threaded build with one thread per core (one core: the single-thread build)", async () => {
    expect(threadsAvailable()).toBe(true);
    await loadMultihead({ threads: 'auto' });
    const info = await runtimeInfo();
    expect(info).toMatchObject({ threadedBuild: cores > 1, threads: cores > 1 ? poolThreads : 1, simdFloatsPerPacket: 4 });
    expect(info.relaxedSimd).toBe(process.env.MULTIHEAD_EXPECT_BUILD === 'relaxed');
    if (cores > 1) {
      expect(await setThreads(1)).toBe(1);
      expect(await setThreads(16)).toBe(poolThreads);  // capped at the workers loaded at start-up
    }
  });

  for (const shape of THREAD_SHAPES) {
    it(`1, 2 and 3 threads give the same bits, and the float64 reference (${JSON.stringify(shape)})`, async () => {
      const r = await runAtThreadCounts({ ...shape, threadCounts: [1, 2, 3] });
      expectSameAtEveryThreadCount(expect, r, cores > 1 ? [1, 2, Math.min(3, poolThreads)] : [1, 1, 1]);
    });
  }

  it('every fixture on the threaded build: transformers\' attentions and logits, the same bits on 1 thread', async () => {
    for (const fixture of MODELS) {
      const model = await loadPretrained(join(FIXTURES, fixture));
      for (const c of expectedOutputs(fixture)) {
        await setThreads(16);
        const out = model.run(c.ids, { tokenTypeIds: c.types });
        expect(maxAbsDiff(out.attentions, c.attentions), `${fixture} ${c.key} attentions`).toBeLessThan(1e-4);
        expect(maxAbsDiff(out.logits, c.logits), `${fixture} ${c.key} logits`).toBeLessThan(1e-3 * maxAbs(c.logits));
        await setThreads(1);
        const one = model.run(c.ids, { tokenTypeIds: c.types });
        expect(sameBits(one.attentions, out.attentions), `${fixture} ${c.key} attentions, 1 thread`).toBe(true);
        expect(sameBits(one.logits, out.logits), `${fixture} ${c.key} logits, 1 thread`).toBe(true);
      }
      model.dispose();
    }
    await setThreads(16);
  });

  it('fp16 weights on the threaded build: the same bits as on 1 thread, up to 9 tokens', async () => {
    // Up to 6 tokens read fp16 in place with a's rows prescaled (core/gemm.cpp): on several threads
    // gemm() prescales the rows it packs for all of them; the output head (V columns) is split.
    const model = await loadPretrained(join(FIXTURES, 'gpt2'), { weightType: 'f16' });
    const ids = Array.from(expectedOutputs('gpt2').at(-1).ids);
    expect(model.config.vocabSize * 64 * 5).toBeGreaterThanOrEqual(262144);  // split from 5 tokens
    for (const n of [2, 4, 5, 6, 9]) {
      await setThreads(16);
      const out = model.run(Int32Array.from(ids.slice(0, n)));
      await setThreads(1);
      const one = model.run(Int32Array.from(ids.slice(0, n)));
      expect(sameBits(one.attentions, out.attentions), `${n} tokens, attentions`).toBe(true);
      expect(sameBits(one.logits, out.logits), `${n} tokens, logits`).toBe(true);
      expect(out.logits.every(Number.isFinite)).toBe(true);
    }
    model.dispose();
    await setThreads(16);
  });

  it('8- and 4-bit blocks on the threaded build: prefill and decoding give the same bits as on 1 thread', async () => {
    // Prefill's integer tiles and decoding's row over blocks (core/gemm_blocks.h): gemm() quantizes
    // the rows once for every thread, and the columns split in whole panels.
    for (const name of ['llama-q8_0', 'qwen2-q4_0']) {
      const model = await loadPretrained(join(process.cwd(), 'tests/fixtures/gguf', name, 'model.gguf'));
      const ids = Int32Array.from({ length: 37 }, (_, i) => (i * 31 + 7) % 200);
      const runs = [];
      for (const threads of [16, 1]) {
        await setThreads(threads);
        const context = model.createContext();
        const prefill = context.run(ids.subarray(0, 36), { reusePrefix: true, logits: Array.from({ length: 36 }, (_, i) => i) });
        const step = context.run(ids, { reusePrefix: true, logits: [36] });
        expect(step.reusedTokens).toBe(36);
        runs.push({ prefill, step });
        context.dispose();
      }
      expect(sameBits(runs[0].prefill.attentions, runs[1].prefill.attentions), `${name} prefill attentions`).toBe(true);
      expect(sameBits(runs[0].prefill.logits, runs[1].prefill.logits), `${name} prefill logits`).toBe(true);
      expect(sameBits(runs[0].step.logits, runs[1].step.logits), `${name} decoding's logits`).toBe(true);
      expect(runs[0].step.logits.every(Number.isFinite)).toBe(true);
      model.dispose();
    }
    await setThreads(16);
  });

  it('bad input on the threaded build: readable errors, no leak, still working', async () => {
    expectMisuseHandled(expect, await misuse());
  });

  it('asking for nonsense is a clear error and changes nothing', async () => {
    const before = (await runtimeInfo()).threads;
    await expect(loadMultihead({ threads: 0 })).rejects.toThrow(/threads must be 'auto' or an integer from 1 to 64, got 0/);
    await expect(loadMultihead({ threads: 65 })).rejects.toThrow(/integer from 1 to 64, got 65/);
    await expect(loadMultihead({ threads: 'two' })).rejects.toThrow(/got "two"/);
    await expect(setThreads(1.5)).rejects.toThrow(/integer from 1 to 64, got 1.5/);
    await expect(loadMultihead(null)).rejects.toThrow(/options must be an object/);
    expect((await runtimeInfo()).threads).toBe(before);
    const mha = await createMultiHeadAttention({ dModel: 16, heads: 2 });
    expect(mha.forward(new Float32Array(3 * 16)).output.every(Number.isFinite)).toBe(true);
    mha.dispose();
  });
});

describe('a Node program with threads', () => {
  // A separate process, as a user's script runs: it must end by itself once its work is done
  // (worker threads that are not unref()'d keep Node running for ever), leave Node's own handling
  // of an error in the user's code alone, and ask for threads after a single-thread load in vain.
  const api = join(process.cwd(), 'bindings/multihead.mjs');
  const node = (script) => execFileSync(process.execPath, [...relaxedFlag, '--input-type=module', '-e', script],
    { encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'pipe'] });

  it('ends by itself when the program is done', () => {
    const out = node(`
      import { createMultiHeadAttention, loadMultihead, runtimeInfo } from ${JSON.stringify(api)};
      await loadMultihead({ threads: 'auto' });
      const mha = await createMultiHeadAttention({ dModel: 256, heads: 8, seed: 4 });
      const { output } = mha.forward(new Float32Array(64 * 256).map((_, i) => Math.cos(i)));
      const info = await runtimeInfo();
      console.log(JSON.stringify({ threads: info.threads, finite: output.every(Number.isFinite),
        handlers: process.listenerCount('uncaughtException') + process.listenerCount('unhandledRejection') }));`);
    expect(JSON.parse(out)).toEqual({ threads: cores > 1 ? poolThreads : 1, finite: true, handlers: 0 });
  });

  it("an error in the program still ends it with Node's own exit code and message", () => {
    let failure;
    try {
      node(`
        import { loadMultihead } from ${JSON.stringify(api)};
        await loadMultihead({ threads: 2 });
        throw new Error('the user program failed');`);
    } catch (error) {
      failure = error;
    }
    expect(failure?.status).toBe(1);
    expect(failure?.stderr).toMatch(/the user program failed/);
  });

  it("without dist/node/ (a bundle that left it out): 'auto' runs on one thread, a count says why", () => {
    const copy = mkdtempSync(join(tmpdir(), 'multihead-no-node-build-'));
    try {
      cpSync('bindings', join(copy, 'bindings'), { recursive: true });
      cpSync('dist', join(copy, 'dist'), { recursive: true, filter: (from) => !from.includes(`dist${sep}node`) });
      writeFileSync(join(copy, 'package.json'), '{ "type": "module" }');
      const copied = join(copy, 'bindings/multihead.mjs');
      const out = node(`
        import { createMultiHeadAttention, loadMultihead, runtimeInfo } from ${JSON.stringify(copied)};
        let message = '';
        try { await loadMultihead({ threads: 2 }); } catch (e) { message = e.message; }
        await loadMultihead({ threads: 'auto' });
        await loadMultihead({ threads: 'auto' });  // asked again: still one thread, not an error
        const mha = await createMultiHeadAttention({ dModel: 64, heads: 4 });
        const { threads, threadedBuild } = await runtimeInfo();
        console.log(JSON.stringify({ message, threads, threadedBuild, finite: mha.forward(new Float32Array(5 * 64)).output.every(Number.isFinite) }));`);
      const r = JSON.parse(out);
      expect(r.message).toMatch(/^multihead: threads: 2: the threaded build for Node \(dist\/node\/\) did not load: .*multihead_core_mt/);
      expect(r).toMatchObject({ threads: 1, threadedBuild: false, finite: true });
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it('threads by default: loadPretrained with no options runs on every core; threads: 1 turns them off and says so', () => {
    const fixture = JSON.stringify(join(FIXTURES, 'gpt2'));
    const run = (first) => JSON.parse(node(`
      import { loadMultihead, loadPretrained, runtimeInfo } from ${JSON.stringify(api)};
      ${first}
      const model = await loadPretrained(${fixture});
      const out = model.run(model.tokenize('The cat sat on the mat.').ids);
      const { threads, threadedBuild, oneThreadReason } = await runtimeInfo();
      console.log(JSON.stringify({ threads, threadedBuild, oneThreadReason, sum: out.logits.reduce((a, b) => a + b, 0) }));`));
    const byDefault = run(''), one = run('await loadMultihead({ threads: 1 });');
    expect(byDefault).toMatchObject(cores > 1 ? { threads: poolThreads, threadedBuild: true, oneThreadReason: '' }
      : { threads: 1, oneThreadReason: 'this device has one core' });
    expect(one).toMatchObject({ threads: 1, threadedBuild: false, oneThreadReason: 'threads: 1 was asked for' });
    expect(byDefault.sum).toBe(one.sum);  // the same bits on every core as on one
  });

  it("threads asked for after a single-thread load: a clear error for a count, one thread for 'auto'", () => {
    const out = node(`
      import { loadMultihead, runtimeInfo, setThreads } from ${JSON.stringify(api)};
      await loadMultihead({ threads: 1 });
      const messages = [];
      try { await setThreads(2); } catch (e) { messages.push(e.message); }
      try { await loadMultihead({ threads: 2 }); } catch (e) { messages.push(e.message); }
      await loadMultihead({ threads: 'auto' });
      const { threads, threadedBuild } = await runtimeInfo();
      console.log(JSON.stringify({ messages, threads, threadedBuild }));`);
    const r = JSON.parse(out);
    expect(r.messages[0]).toMatch(/setThreads\(2\): multihead was loaded single-threaded; call loadMultihead\(\{ threads: 'auto' \}\) first/);
    expect(r.messages[1]).toMatch(/^multihead: already loaded single-threaded; ask for threads in the first loadMultihead\(\) call/);
    expect(r).toMatchObject({ messages: [expect.any(String), expect.any(String)], threads: 1, threadedBuild: false });
  });
});
