// An encoder-decoder at t5-small's shape (6 + 6 layers, d 512, 8 heads × d_kv 64, FFN 2048 with
// ReLU, vocabulary 32128, tied head), random F32 weights made in memory. In Node, one thread
// (--threads N for more): a teacher-forced run over a 64-token source and a 16-token target with
// every attention returned, its time and the products' share of the measured FMA peak (the peak
// from build/bench/kernels_*.cjs, which bench/run.sh builds; without it the share is left out);
// and generation's ms a token against the bound the measured read bandwidth sets on the bytes a
// decoding step reads (the decoder's weights and the tied head).
// Usage: node --experimental-wasm-relaxed-simd bench/encoder-decoder.mjs [--rounds 9] [--threads 1]
// Writes bench/encoder-decoder-results.json (or --out FILE).
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { loadMultihead, loadPretrained, setThreads } from '../bindings/multihead.mjs';
import { encodeJson, writeSafetensors } from '../tests/js/checkpoints.mjs';
import { randomNormal, seededRandom } from '../tests/js/reference.mjs';
import { timeInterleaved } from './gpt2-common.mjs';
import { machine } from './machine.mjs';
import { median } from './stats.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const rounds = Number(option('--rounds', 9));
const threads = Number(option('--threads', 1));
const outFile = option('--out', 'bench/encoder-decoder-results.json');
const relaxed = process.execArgv.includes('--experimental-wasm-relaxed-simd');
const S = { d: 512, dKv: 64, heads: 8, ff: 2048, layers: 6, vocab: 32128, source: 64, target: 16, newTokens: 32 };
const inner = S.heads * S.dKv;

// ---- the checkpoint: T5's names and config keys (t5-small's), random weights ----
function t5Small() {
  const rng = seededRandom(1);
  const tensors = new Map();
  const add = (name, shape, std, fill) => {
    const count = shape.reduce((a, b) => a * b, 1);
    const data = fill === undefined ? randomNormal(count, rng, std) : new Float32Array(count).fill(fill);
    tensors.set(name, { dtype: 'F32', shape, bytes: new Uint8Array(data.buffer) });
  };
  add('shared.weight', [S.vocab, S.d], 1);
  for (const stack of ['encoder', 'decoder']) {
    for (let l = 0; l < S.layers; l += 1) {
      const b = `${stack}.block.${l}.layer.`;
      const attention = (at) => {
        for (const m of ['q', 'k', 'v']) add(`${at}.${m}.weight`, [inner, S.d], S.d ** -0.5);
        add(`${at}.o.weight`, [S.d, inner], inner ** -0.5);
      };
      attention(`${b}0.SelfAttention`);
      add(`${b}0.layer_norm.weight`, [S.d], 0, 1);
      if (l === 0) add(`${b}0.SelfAttention.relative_attention_bias.weight`, [32, S.heads], 0.5);
      const mlp = stack === 'decoder' ? 2 : 1;
      if (stack === 'decoder') {
        attention(`${b}1.EncDecAttention`);
        add(`${b}1.layer_norm.weight`, [S.d], 0, 1);
      }
      add(`${b}${mlp}.DenseReluDense.wi.weight`, [S.ff, S.d], S.d ** -0.5);
      add(`${b}${mlp}.DenseReluDense.wo.weight`, [S.d, S.ff], S.ff ** -0.5);
      add(`${b}${mlp}.layer_norm.weight`, [S.d], 0, 1);
    }
    add(`${stack}.final_layer_norm.weight`, [S.d], 0, 1);
  }
  const config = { model_type: 't5', d_model: S.d, d_kv: S.dKv, d_ff: S.ff, num_layers: S.layers, num_heads: S.heads,
    vocab_size: S.vocab, feed_forward_proj: 'relu', relative_attention_num_buckets: 32, relative_attention_max_distance: 128,
    decoder_start_token_id: 0, eos_token_id: 1, pad_token_id: 0, tie_word_embeddings: true };
  return new Map([['config.json', encodeJson(config)], ['model.safetensors', writeSafetensors(tensors)]]);
}

// ---- what the products compute, and what a decoding step reads ----
const mac = (n, k, m) => 2 * n * k * m;
function runFlops(n, m) {
  const encoder = S.layers * (mac(n, S.d, inner) * 4 + mac(n, S.d, S.ff) * 2 + 2 * mac(n, n, inner));
  const decoder = S.layers * (mac(m, S.d, inner) * 6 + mac(n, S.d, inner) * 2 + mac(m, S.d, S.ff) * 2 +
    2 * mac(m, m, inner) + 2 * mac(m, n, inner));
  return encoder + decoder + mac(m, S.d, S.vocab);
}
const stepBytes = 4 * (S.layers * (6 * S.d * inner + 2 * S.d * S.ff) + S.d * S.vocab);

// The peak from the kernel benchmark of this build, GFLOP/s on one thread; null without it.
function peakGflops() {
  const file = `build/bench/kernels_${relaxed ? 'relaxed' : 'simd'}.cjs`;
  if (!existsSync(file)) return null;
  const out = execFileSync(process.execPath, ['--no-experimental-fetch', ...(relaxed ? ['--experimental-wasm-relaxed-simd'] : []), file, '--peak-only'],
    { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n')[0]).peakGflops;
}

const core = await loadMultihead({ threads: 'auto' });
await setThreads(threads);
const t0 = performance.now();
const model = await loadPretrained(t5Small());
const loadMs = performance.now() - t0;
const ids = (n, salt) => Array.from({ length: n }, (_, i) => 2 + ((i * 7919 + salt) % (S.vocab - 2)));
const source = ids(S.source, 13), target = [0, ...ids(S.target - 1, 29)];
// The run, and its parts for where the time goes: without attentions returned, and the encoder
// with a one-token decoder.
const parts = await timeInterleaved({
  run: () => model.run(source, { decoderInputIds: target }),
  noAttentions: () => model.run(source, { decoderInputIds: target, attentions: false }),
  encoderAndOneToken: () => model.run(source, { decoderInputIds: [0], attentions: false }),
}, rounds);
const runMs = parts.run;
const gaps = [];
for (let r = 0; r < 3; r += 1) {
  let last = null;
  for await (const step of model.generate(source, { maxNewTokens: S.newTokens, minNewTokens: S.newTokens })) {
    const now = performance.now();
    if (last !== null) gaps.push(now - last);
    last = now;
    void step;
  }
}
const tokenMs = median(gaps);
const gbps = core.readBandwidth(256, 5);
const peak = peakGflops();
const flops = runFlops(S.source, S.target);
const gflops = flops / runMs / 1e6;
const boundMs = stepBytes / (gbps * 1e9) * 1e3;
const result = {
  machine: machine(), build: relaxed ? 'relaxed-simd' : 'simd', threads, rounds, shape: S, loadMs,
  run: { ms: runMs, gflop: flops / 1e9, gflops, peakGflopsPerThread: peak, ofPeak: peak ? gflops / (peak * threads) : null },
  parts: Object.fromEntries(Object.entries({ noAttentions: [S.source, S.target], encoderAndOneToken: [S.source, 1] })
    .map(([name, [n, m]]) => [name, { ms: parts[name], gflop: runFlops(n, m) / 1e9, gflops: runFlops(n, m) / parts[name] / 1e6 }])),
  generation: { msPerToken: tokenMs, bytesPerStep: stepBytes, readGBs: gbps, boundMs, ofBound: tokenMs / boundMs },
};
console.log(`t5-small's shape, ${result.build}, ${threads} thread(s), ${result.machine.cpu}`);
console.log(`run (source ${S.source}, target ${S.target}, every attention): ${runMs.toFixed(1)} ms, ${gflops.toFixed(1)} GFLOP/s` +
  (peak ? ` = ${(100 * result.run.ofPeak).toFixed(0)} % of the ${(peak * threads).toFixed(1)} GFLOP/s peak` : ' (no kernel build: peak not measured)'));
for (const [name, p] of Object.entries(result.parts)) console.log(`  ${name}: ${p.ms.toFixed(1)} ms, ${p.gflop.toFixed(2)} GFLOP, ${p.gflops.toFixed(1)} GFLOP/s`);
console.log(`generation: ${tokenMs.toFixed(2)} ms a token; bound ${boundMs.toFixed(2)} ms (${(stepBytes / 1e6).toFixed(0)} MB at ` +
  `${gbps.toFixed(1)} GB/s): ${result.generation.ofBound.toFixed(2)}×`);
writeFileSync(outFile, `${JSON.stringify(result, null, 1)}\n`);
model.dispose();
