// How prefill and decoding scale with threads, and why: GPT-2 small's shape (the random F32
// checkpoint of bench/gpt2.mjs) in Node, the threaded relaxed build, through the JS API.
//   1. Timing: every case at every thread count, interleaved round by round, medians.
//   2. Profile (core/parallel.h), at 1 and 2 threads: the time outside parallel regions, phase by
//      phase, each region's tasks and the imbalance at each barrier; from the 1-thread tasks, the
//      time at T threads predicted by handing them out as the pool does (in order, each to the
//      first free thread), plus the serial time and the 2-thread hand-off cost per region.
// Usage: node --experimental-wasm-relaxed-simd bench/thread-scaling.mjs [--threads 1,2,4,8,12,16]
//        [--predict 4,8,12,16] [--rounds 7] [--quick] [--no-profile] [--only TEXT] [--lib DIR]
//        [--model PATH] (npm run bench:scaling)
// --model: another checkpoint of GPT-2's vocabulary to load instead (a GGUF file of bench/gguf.mjs).
// --lib: the multihead.mjs to time (another checkout's bindings/, for a before-and-after on one
// machine; with --no-profile where it has no profiler). Writes bench/thread-scaling-results.json
// (or --out FILE).
import { writeFileSync } from 'node:fs';
import { ensureCheckpoints, F32_DIR, gpt2Ids, msPerToken } from './gpt2-common.mjs';
import { machine } from './machine.mjs';
import { median } from './stats.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const quick = args.includes('--quick');
const counts = option('--threads', '1,2').split(',').map(Number);
const predictAt = option('--predict', '4,8,12,16').split(',').map(Number);
const rounds = Number(option('--rounds', quick ? 3 : 7));
const outFile = option('--out', 'bench/thread-scaling-results.json');
const profiling = !args.includes('--no-profile');
const library = new URL(option('--lib', '../bindings/') + 'multihead.mjs', `file://${process.cwd()}/bench/`);

// "every attention": into arrays the caller keeps (run's into option), as a page or loop would;
// "new arrays": a new Float32Array each run, which the engine must map and zero (37.7 MB at 256).
const ALL_CASES = [
  { name: 'prefill 16, every attention', n: 16, attentions: true, into: true },
  { name: 'prefill 64, every attention', n: 64, attentions: true, into: true },
  { name: 'prefill 64, none', n: 64, attentions: false },
  // One greedy token of generate() after a 16-token prompt (each call the generator's next step,
  // a new generator every 96 tokens): a decoding step with its JS, for the profile.
  { name: 'decoding step', n: 16, decode: true },
  ...(quick ? [] : [
    { name: 'prefill 256, every attention', n: 256, attentions: true, into: true },
    { name: 'prefill 256, every attention, new arrays', n: 256, attentions: true },
    { name: 'prefill 256, none', n: 256, attentions: false },
  ]),
];

// --only TEXT: the cases whose name has TEXT, and no decoding loop (a profile of one case).
const only = option('--only', null);
const CASES = ALL_CASES.filter((c) => only === null || c.name.includes(only));

// The pool hands tasks out in order, each to whichever thread is free first: the makespan of
// `tasks` (ms) on `threads` threads when every task takes the time it took on one thread.
export function makespan(tasks, threads) {
  const free = new Float64Array(threads);
  for (const ms of tasks) {
    let first = 0;
    for (let t = 1; t < threads; t += 1) if (free[t] < free[first]) first = t;
    free[first] += ms;
  }
  return Math.max(...free);
}

// A profile summarised: per phase, its time and the part outside parallel regions; per region
// kind, the barrier's imbalance (slowest thread − mean) and hand-off (wall − slowest thread).
export function summarise(profile) {
  const phases = profile.phases.map((name, i) => ({ name: name || '(outside the forward pass: JS, copies)', ms: profile.phaseMs[i], inRegions: 0, regions: 0, imbalance: 0, handoff: 0 }));
  for (const r of profile.regions) {
    const p = phases[r.phase];
    p.inRegions += r.wallMs;
    p.regions += 1;
    const slowest = Math.max(...r.slotMs), mean = r.slotMs.reduce((a, b) => a + b, 0) / r.slotMs.length;
    p.imbalance += slowest - mean;
    p.handoff += Math.max(0, r.wallMs - slowest);
  }
  for (const p of phases) p.serial = p.ms - p.inRegions;
  const sum = (key) => phases.reduce((a, p) => a + p[key], 0);
  return { totalMs: profile.totalMs, serialMs: sum('serial'), regionMs: sum('inRegions'), regions: sum('regions'),
    imbalanceMs: sum('imbalance'), handoffMs: sum('handoff'), phases };
}

// Several profiles of the same call as one: each task's median time, and each phase's median time
// outside its regions. On a shared machine a task is sometimes descheduled for a time slice (4 ms
// against its 0.05): one such task held the predicted barrier and made 16 threads look like 2.5×.
// The median drops such a task without the bias of the fastest run of every task. The regions
// must match run to run (the same split: the work is deterministic); where they do not, the
// profile with the least total.
export function typicalOf(profiles) {
  const [first] = [...profiles].sort((a, b) => a.totalMs - b.totalMs);
  const same = profiles.every((p) => p.regions.length === first.regions.length &&
    p.phases.length === first.phases.length && p.phases.every((name, i) => name === first.phases[i]) &&
    p.regions.every((r, i) => r.phase === first.regions[i].phase && r.taskMs.length === first.regions[i].taskMs.length));
  if (!same) return first;
  const med = (pick) => (_, i) => median(profiles.map((p) => pick(p)[i]));
  // Each phase's time outside its regions, the median of the profiles' (not the median phase time
  // less the median regions: the two would come from different runs).
  const outside = (p) => {
    const ms = [...p.phaseMs];
    for (const r of p.regions) ms[r.phase] -= r.wallMs;
    return ms;
  };
  const serial = first.phaseMs.map(med(outside));
  const regions = first.regions.map((r, k) => {
    const taskMs = r.taskMs.map(med((p) => p.regions[k].taskMs));
    const wallMs = median(profiles.map((p) => p.regions[k].wallMs));
    // The threads' busy times of the run whose wall time is the median's.
    const slotMs = profiles.map((p) => p.regions[k]).sort((a, b) => a.wallMs - b.wallMs)[profiles.length >> 1].slotMs;
    return { ...r, taskMs, wallMs, slotMs };
  });
  const phaseMs = serial.map((ms) => Math.max(0, ms));
  for (const r of regions) phaseMs[r.phase] += r.wallMs;
  return { ...first, phaseMs, regions, totalMs: phaseMs.reduce((a, b) => a + b, 0) };
}

// The time at T threads predicted from a profile on one thread of the work split for T (splitAs[T]:
// each task's time), with the 2-thread profile's median hand-off per region (assumed not to grow
// with the count: the workers spin between regions), against the 1-thread profile `one` (summarised).
// `turn` (decoding): generate() turns the event loop once every `every` ms, which a one-thread step
// (~20 ms) does every step and its JS carries; at a predicted step of x ms it turns every
// ⌈every / x⌉ steps, so its JS is charged turnMs · min(1, x / every) a step instead of turnMs.
export function predict(one, splitAs, two, turn = null) {
  const oneMs = one.totalMs;
  // The median region's hand-off: the mean was a few regions whose second thread was descheduled.
  const handoffs = two.regions.map((r) => Math.max(0, r.wallMs - Math.max(...r.slotMs)));
  const handoffPerRegion = handoffs.length ? median(handoffs) : 0;
  // The time outside the core (JS) from the unsplit profile: a split changes none of that work, and
  // the split profiles' own garbage (thousands of task times) is collected there.
  const js = (s) => s.phases.find((p) => p.name.startsWith('(outside'))?.serial ?? 0;
  const at = {};
  for (const [T, profile] of Object.entries(splitAs)) {
    const s = summarise(profile);
    s.serialMs += js(one) - js(s);
    let ms = s.serialMs;
    // Per phase: outside regions, the regions' predicted makespans, and the even split of their work.
    const phases = s.phases.map((p) => ({ name: p.name, serialMs: p.serial, regions: 0, tasks: 0, splitMs: 0, evenMs: 0 }));
    phases[phases.findIndex((p) => p.name.startsWith('(outside'))].serialMs += js(one) - js(s);
    for (const r of profile.regions) {
      const span = makespan(r.taskMs, Number(T)) + handoffPerRegion;
      ms += span;
      Object.assign(phases[r.phase], { regions: phases[r.phase].regions + 1, tasks: phases[r.phase].tasks + r.taskMs.length,
        splitMs: phases[r.phase].splitMs + span, evenMs: phases[r.phase].evenMs + r.taskMs.reduce((a, b) => a + b, 0) / Number(T) });
    }
    let turnSavedMs = 0;
    if (turn) {  // the fixed point of x = ms − turnMs · (1 − min(1, x / every)): a few rounds settle it
      let x = ms;
      for (let i = 0; i < 8; i += 1) x = ms - turn.turnMs * (1 - Math.min(1, x / turn.every));
      turnSavedMs = ms - x;
      phases[phases.findIndex((p) => p.name.startsWith('(outside'))].serialMs -= turnSavedMs;
      s.serialMs -= turnSavedMs;
    }
    const total = ms - turnSavedMs;
    at[T] = { ms: total, speedup: oneMs / total, serialMs: s.serialMs, serialShare: s.serialMs / total, phases,
      ...(turn ? { msTurningEveryStep: ms, speedupTurningEveryStep: oneMs / ms, turnSavedMs } : {}) };
  }
  return { handoffPerRegion, ...(turn ? { turnMs: turn.turnMs, turnEveryMs: turn.every } : {}), at };
}

async function main() {
  const { loadMultihead, loadPretrained, runtimeInfo, setThreads } = await import(library.href);
  const { nextTurn, TURN_EVERY_MS } = await import(new URL('environment.mjs', library).href);
  ensureCheckpoints();
  const core = await loadMultihead({ threads: 'auto' });
  const info = await runtimeInfo();
  const most = Math.max(...counts);
  if (info.threads < most) throw new Error(`asked for ${most} threads; this machine's pool has ${info.threads}`);
  const model = await loadPretrained(option('--model', F32_DIR));
  const oldBuild = typeof core.threadProfileBegin !== 'function';
  const { layers, heads } = model.config;
  const calls = Object.fromEntries(CASES.map((c) => {
    const ids = gpt2Ids(c.n);
    if (c.decode) {
      let steps = null;
      return [c.name, async () => {
        if (!steps) {
          steps = model.generate(ids, { maxNewTokens: 96, temperature: 0, stopAtEos: false });
          await steps.next();  // the prompt's prefill
        }
        if ((await steps.next()).done) steps = null;
      }];
    }
    const into = c.into ? { attentions: new Float32Array(layers * heads * c.n * c.n) } : undefined;
    // An older build (--lib) without into gets new arrays: its row says so in the JSON.
    return [c.name, () => model.run(ids, { logits: [c.n - 1], attentions: c.attentions, ...(into && !oldBuild ? { into } : {}) })];
  }));
  const results = { machine: machine(), library: library.pathname, build: { gemmKernel: info.gemmKernel, pool: info.threads }, counts, cases: [] };
  for (const c of CASES) {
    const call = calls[c.name];
    // The thread count for the next timed call. Decoding steps right after a change of count read
    // slower than at a steady count (GPT-2's Q4_K_M file: 13.50 / 9.59 ms at 1 / 2 threads, against
    // 12.53 / 7.44 in runs at one count), so a decoding case first takes 3 untimed steps at it
    // (12.58 / 8.15 ms; docs/performance.md, "A Q4_K_M file, and the bound on the file's bytes").
    const settle = async (T) => {
      await setThreads(T);
      if (c.decode) for (let i = 0; i < 3; i += 1) await call();
    };
    for (const T of counts) { await setThreads(T); for (let i = 0; i < 3; i += 1) await call(); }  // warm-up
    const times = Object.fromEntries(counts.map((T) => [T, []]));
    for (let r = 0; r < rounds; r += 1) {
      for (const T of counts) {
        await settle(T);
        const t0 = performance.now();
        await call();
        times[T].push(performance.now() - t0);
      }
    }
    const ms = Object.fromEntries(counts.map((T) => [T, median(times[T])]));
    const speedup = Object.fromEntries(counts.map((T) => [T, ms[1] / ms[T]]));
    if (!profiling) {
      results.cases.push({ name: c.name, ms, speedup });
      console.log(`${c.name}: ${counts.map((T) => `${T}: ${ms[T].toFixed(2)} ms (${speedup[T].toFixed(2)}×)`).join(', ')}`);
      continue;
    }
    // Profiles of 5 calls each, task by task the median (typicalOf): at 1 thread, the work split as
    // at each T; at 2. Taken round by round (one call of each kind a round), so that a slow minute
    // of this shared machine falls on every kind alike rather than on one thread count's profiles.
    // Decoding: a turn of the event loop timed after each 1-thread profile (as the step's own
    // turn comes after its token), for predict()'s turn charge.
    const kinds = [[1, 0], [2, 0], ...[2, ...predictAt].map((T) => [1, T])];
    const profiles = kinds.map(() => []), turns = [];
    for (let i = 0; i < 5; i += 1) {
      for (const [k, [T, splitAs]] of kinds.entries()) {
        await settle(T);
        core.threadProfileBegin(splitAs);
        await call();
        profiles[k].push(core.threadProfileEnd());
        if (c.decode && k === 0 && TURN_EVERY_MS) {
          const t0 = performance.now();
          await nextTurn();
          turns.push(performance.now() - t0);
        }
      }
    }
    const [one, two, ...split] = profiles.map(typicalOf);
    const splitAs = Object.fromEntries([2, ...predictAt].map((T, i) => [T, split[i]]));
    const turn = turns.length ? { turnMs: median(turns), every: TURN_EVERY_MS } : null;
    const prediction = predict(summarise(one), splitAs, two, turn);
    results.cases.push({ name: c.name, ms, speedup,
      profile1: summarise(one), profile2: summarise(two), prediction });
    report(c.name, ms, summarise(one), summarise(two), prediction);
  }
  if (only !== null) {
    writeFileSync(outFile, `${JSON.stringify(results, null, 1)}\n`);
    return;
  }
  // Decoding: ms a token (median gap of 24 greedy tokens after a 16-token prompt), rounds interleaved.
  const decode = Object.fromEntries(counts.map((T) => [T, []]));
  for (let r = 0; r < (quick ? 2 : 4); r += 1) {
    for (const T of counts) {
      await setThreads(T);
      const t = await msPerToken(model, quick ? 12 : 24);
      if (r > 0) decode[T].push(t);
    }
  }
  const decodeMs = Object.fromEntries(counts.map((T) => [T, median(decode[T])]));
  results.decode = { ms: decodeMs, speedup: Object.fromEntries(counts.map((T) => [T, decodeMs[1] / decodeMs[T]])) };
  console.log(`\ndecoding, ms a token: ${counts.map((T) => `${T}: ${decodeMs[T].toFixed(2)} (${(decodeMs[1] / decodeMs[T]).toFixed(2)}×)`).join(', ')}`);
  // The bound: a step reads every weight once (GPT-2 small's 497.8 MB in F32), at the read
  // bandwidth the same threads reach over a 256 MB buffer.
  if (!oldBuild) {
    const weightBytes = 124.44e6 * 4;
    results.bandwidth = {};
    for (const T of counts) {
      await setThreads(T);
      const gbps = core.readBandwidth(256, 5);
      results.bandwidth[T] = { gbps, boundMs: weightBytes / gbps / 1e6, decodeOverBound: decodeMs[T] / (weightBytes / gbps / 1e6) };
    }
    console.log(`read bandwidth, GB/s: ${counts.map((T) => `${T}: ${results.bandwidth[T].gbps.toFixed(1)} (decoding ${results.bandwidth[T].decodeOverBound.toFixed(2)}× the bound)`).join(', ')}`);
  }
  await setThreads(most);
  model.dispose();
  writeFileSync(outFile, `${JSON.stringify(results, null, 1)}\n`);
  console.log(`\nwrote ${outFile}`);
}

function report(name, ms, s1, s2, prediction) {
  const f = (x) => x.toFixed(2);
  console.log(`\n## ${name}`);
  console.log(`measured: ${Object.entries(ms).map(([T, t]) => `${T} threads ${f(t)} ms (${f(ms[1] / t)}×)`).join(', ')}`);
  console.log(`1 thread profiled: ${f(s1.totalMs)} ms, outside parallel regions ${f(s1.serialMs)} ms (${f(100 * s1.serialMs / s1.totalMs)} %), ${s1.regions} regions`);
  console.log(`2 threads profiled: ${f(s2.totalMs)} ms; imbalance at the barriers ${f(s2.imbalanceMs)} ms, hand-off ${f(s2.handoffMs)} ms (${f(1000 * prediction.handoffPerRegion)} µs a region)`);
  console.log('| phase | ms (1 thread) | outside regions | regions | imbalance (2 threads) |');
  console.log('|---|---|---|---|---|');
  const two = Object.fromEntries(s2.phases.map((p) => [p.name, p]));
  for (const p of s1.phases) console.log(`| ${p.name} | ${f(p.ms)} | ${f(p.serial)} | ${p.regions} | ${f(two[p.name]?.imbalance ?? 0)} |`);
  const [T, last] = Object.entries(prediction.at).at(-1);
  console.log(`| at ${T} threads, phase | outside regions | regions | tasks | regions' predicted time (hand-offs included) | their work ÷ ${T} |`);
  console.log('|---|---|---|---|---|---|');
  for (const p of last.phases) if (p.serialMs > 0.005 || p.regions) console.log(`| ${p.name} | ${p.serialMs.toFixed(3)} | ${p.regions} | ${p.tasks} | ${p.splitMs.toFixed(3)} | ${p.evenMs.toFixed(3)} |`);
  console.log(`predicted: ${Object.entries(prediction.at).map(([T, p]) => `${T} threads ${f(p.ms)} ms (${f(p.speedup)}×, serial ${f(100 * p.serialShare)} %)`).join(', ')}`);
  if (prediction.turnMs !== undefined) {
    console.log(`a turn of the event loop: ${f(1000 * prediction.turnMs)} µs, taken every ${prediction.turnEveryMs} ms; ` +
      `charged every step instead: ${Object.entries(prediction.at).map(([T, p]) => `${T} threads ${f(p.msTurningEveryStep)} ms (${f(p.speedupTurningEveryStep)}×)`).join(', ')}`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
