// What the GPT-2 benchmarks share (bench/gpt2.mjs: one thread; bench/node-threads.mjs: threads in
// Node): the random GPT-2-small checkpoints, the ids fed to them, the ORT peer's graphs, timing
// interleaved, and decoding's ms per token.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { median, medians } from './stats.mjs';
import { gpt2PeerWeights } from './weights.mjs';

export const F32_DIR = 'build/gpt2-small-random', BF16_DIR = 'build/gpt2-small-random-bf16';
const PEER_DIR = new URL('./peers/gpt2-small/', import.meta.url);

// Writes the F32 and BF16 random checkpoints (scripts/make-random-checkpoint.mjs) where missing.
export function ensureCheckpoints() {
  for (const [dir, flags] of [[F32_DIR, []], [BF16_DIR, ['--bf16']]]) {
    if (!existsSync(`${dir}/model.safetensors`)) execFileSync(process.execPath, ['scripts/make-random-checkpoint.mjs', dir, ...flags], { stdio: 'inherit' });
  }
}

// n token ids, spread over GPT-2's vocabulary, the same in every benchmark.
export const gpt2Ids = (n) => Int32Array.from({ length: n }, (_, i) => (i * 7919 + 13) % 50257);

// onnxruntime-web's session for the peer graph `name` ('gpt2s' or 'gpt2s-attn'); the graphs keep
// their weights as external data (bench/peers/gpt2-small/README.md).
export async function peerSession(ort, name) {
  const external = JSON.parse(readFileSync(new URL(`${name}.external.json`, PEER_DIR), 'utf8'));
  return ort.InferenceSession.create(readFileSync(new URL(`${name}.onnx`, PEER_DIR)), {
    externalData: [{ path: external.data_file, data: gpt2PeerWeights(external) }],
  });
}

// Median ms of each function, measured interleaved (one call of each per round), after warm-up
// calls of each (timeRounds).
export async function timeInterleaved(fns, rounds) {
  return medians(await timeRounds(fns, rounds));
}

// Every round's ms of each function, one call of each per round, after warming each up for at
// least 3 calls and 1 s: V8 runs a module's first calls in its baseline compiler while it optimizes
// in the background, and with one warm-up call ORT's first 16-token rounds read twice their later
// time (its ratio to ours 4.5–6.6× instead of ~2.5×).
export async function timeRounds(fns, rounds) {
  const names = Object.keys(fns), times = Object.fromEntries(names.map((n) => [n, []]));
  for (const name of names) {
    const start = performance.now();
    for (let calls = 0; calls < 3 || performance.now() - start < 1000; calls += 1) await fns[name]();
  }
  for (let r = 0; r < rounds; r += 1) {
    for (const name of names) {
      const t0 = performance.now();
      await fns[name]();
      times[name].push(performance.now() - t0);
    }
  }
  return times;
}

// Decoding: a 16-token prompt, then maxNewTokens greedy tokens from the key/value cache; the median
// gap between tokens after the first, in ms. Every step reads every weight matrix once.
export async function msPerToken(model, maxNewTokens) {
  const gaps = [];
  let last = null;
  for await (const step of model.generate(gpt2Ids(16), { maxNewTokens, temperature: 0, stopAtEos: false })) {
    const now = performance.now();
    if (last !== null) gaps.push(now - last);
    last = now;
    void step;
  }
  return median(gaps);
}
