// The in-browser half of bench/gguf-peer.mjs: one GGUF file loaded into multihead (threaded build)
// and into llama.cpp's wasm build through @wllama/wllama 3.8.1 (served from bench/node_modules),
// both at ?threads=<n>. wllama fixes its thread count when it loads a model, hence a page per count.
import { loadMultihead, loadPretrained, runtimeInfo, setThreads } from '../../bindings/multihead.mjs';
import { Wllama } from '../node_modules/@wllama/wllama/esm/index.js';

const params = new URL(location.href).searchParams;
const threads = Number(params.get('threads') || 1);
const verbose = params.has('verbose');  // llama.cpp's log on the console
await loadMultihead({ threads: 'auto' });
await setThreads(threads);
let ours = null, peer = null;

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

// wllama 3 takes a prompt as text only: a text of exactly n tokens and its ids, by the file's
// tokenizer (ours gives llama.cpp's ids; prompt_n checks the count on its side).
const SOURCE = 'It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife. ';
function prompt(n) {
  const ids = ours.tokenizer.encode(SOURCE.repeat(Math.ceil(n / 10))).ids;
  for (const cut of [n, n - 1, n + 1, n - 2, n + 2]) {  // a cut text can re-tokenize to another count
    const text = ours.tokenizer.decode(ids.subarray(0, cut));
    const again = ours.tokenizer.encode(text).ids;
    if (again.length === n) return { text, ids: again };
  }
  throw new Error(`no text of ${n} tokens`);
}

window.info = async () => ({ ...(await runtimeInfo()), userAgent: navigator.userAgent, cores: navigator.hardwareConcurrency,
  isolated: crossOriginIsolated, libllama: Wllama.getLibllamaVersion() });

// Loads `url` into both from the same File in memory (wllama takes Blobs, or its own downloader,
// which caches in the origin's storage), so neither load times the server. Times each.
window.load = async (url) => {
  ours?.dispose();
  await peer?.exit();
  const file = new File([await (await fetch(url)).blob()], 'model.gguf');
  let t0 = performance.now();
  ours = await loadPretrained(file);
  const oursMs = performance.now() - t0;
  t0 = performance.now();
  peer = new Wllama({ default: new URL('../node_modules/@wllama/wllama/esm/wasm/wllama.wasm', import.meta.url).href },
    verbose ? {} : { suppressNativeLog: true, logger: { debug() {}, log() {}, warn: console.warn, error: console.error } });
  peer.setCompat(null);  // its compatibility build comes from a CDN; Chromium does not need it
  // CPU only, one sequence; llama-server's defaults otherwise (n_batch 2048, n_ubatch 512, flash attention auto).
  await peer.loadModel([file], { n_threads: threads, n_gpu_layers: 0, n_ctx: 1024, n_parallel: 1 });
  return { oursMs, peerMs: performance.now() - t0, peerThreads: peer.getNumThreads(), peerMultithread: peer.isMultithread(),
    weightType: ours.config.weightType, weightBytes: ours.config.weightBytes };
};

// llama-server's completion of a text, greedy; returns the wall time and llama.cpp's own timings.
async function complete(prompt, maxTokens) {
  const t0 = performance.now();
  const r = await peer.createCompletion({ prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true, cache_prompt: false });
  return { ms: performance.now() - t0, timings: r.timings };
}

// Prefill of n tokens, rounds interleaved: ours with the last row's logits (what llama-server
// computes for a prompt) and with every head's attention too; wllama's completion of one token.
window.prefill = async ({ n, rounds }) => {
  const { text: x, ids: input } = prompt(n);
  const t = { oursLast: [], oursAll: [], peer: [], peerPromptMs: [], ratio: [], ratioAll: [] };
  ours.run(input, { logits: [n - 1], attentions: false });  // warm-up of each
  await complete(x, 1);
  for (let r = 0; r < rounds; r += 1) {
    let t0 = performance.now();
    ours.run(input, { logits: [n - 1], attentions: false });
    const last = performance.now() - t0;
    t0 = performance.now();
    ours.run(input, { logits: [n - 1], attentions: true });
    const all = performance.now() - t0;
    const p = await complete(x, 1);
    if (p.timings.prompt_n !== n) throw new Error(`llama.cpp processed ${p.timings.prompt_n} prompt tokens, not ${n}`);
    t.oursLast.push(last); t.oursAll.push(all); t.peer.push(p.ms); t.peerPromptMs.push(p.timings.prompt_ms);
    t.ratio.push(p.ms / last); t.ratioAll.push(p.ms / all);
  }
  return Object.fromEntries(Object.entries(t).map(([k, v]) => [k, median(v)]));
};

// Decoding after a 16-token prompt, ms a token, rounds interleaved. Ours: the median gap between
// generate()'s greedy steps. wllama: (a completion of 1 + tokens − one of 1 token) ÷ tokens, wall
// clock, and llama.cpp's own predicted_per_token_ms.
window.decode = async ({ tokens, rounds }) => {
  const { text, ids } = prompt(16);
  const oursStep = async () => {
    const gaps = [];
    let last = null;
    for await (const step of ours.generate(ids, { maxNewTokens: tokens + 1, temperature: 0, stopAtEos: false })) {
      const now = performance.now();
      if (last !== null) gaps.push(now - last);
      last = now;
      void step;
    }
    return median(gaps);
  };
  const t = { ours: [], peer: [], peerOwn: [], ratio: [] };
  await oursStep();
  await complete(text, tokens + 1);
  for (let r = 0; r < rounds; r += 1) {
    const o = await oursStep();
    const one = await complete(text, 1);
    const many = await complete(text, tokens + 1);
    if (many.timings.predicted_n !== tokens + 1) throw new Error(`llama.cpp generated ${many.timings.predicted_n} tokens, not ${tokens + 1}`);
    const p = (many.ms - one.ms) / tokens;
    t.ours.push(o); t.peer.push(p); t.peerOwn.push(many.timings.predicted_per_token_ms); t.ratio.push(p / o);
  }
  return Object.fromEntries(Object.entries(t).map(([k, v]) => [k, median(v)]));
};

window.ready = true;
