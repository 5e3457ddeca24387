// How fast a GGUF file loads through loadPretrained(...), in Node (a path) and in Debian's Chromium
// (by URL, and as a dropped File), with the machine's first-touch rate measured in the same run:
// a VM whose fresh pages fault slowly (this one: ~0.3 GB/s) spends much of a load there, which a
// laptop would not, so each load's estimated fault time (its heap growth at that rate) is reported
// beside it.
//
// Each load runs in a fresh process (Node) or page (Chromium), as a user's first load does: a new
// heap, V8's baseline code, the GEMM tuning a first checkpoint runs (core/gemm_tuning.h).
// After each load, 8 tokens run and the logits' hash is recorded: equal hashes, the same weights.
//
// Usage: node bench/gguf-load.mjs [--rounds 3] [--only TEXT] [--before DIR] [--browser] [--no-node]
//          [--threads auto|1] [--file] [--out bench/gguf-load-results.json] | --summarize FILE
//   --before DIR  a copy of the repository (bindings/, dist/, scripts/serve.mjs, bench/) to time
//                 against this one, interleaved: each round loads each file with both, the order
//                 alternating between rounds.
//   --browser     Chromium too (a page per load, by URL from scripts/serve.mjs: fetch streaming);
//   --file        and in Chromium also as a File (an <input type=file>, as a dropped file is read).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { machine } from './machine.mjs';
import { firstTouch } from './first-touch.mjs';
import { median } from './stats.mjs';

const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const value = (name, fallback) => (flag(name) ? args[args.indexOf(name) + 1] : fallback);

// The same 8 tokens for every file (ids below every vocabulary here), and a 32-bit FNV-1a of the logits' bits.
const IDS = [13, 7932, 15851, 23770, 31689, 39608, 47527, 4];
function hash(floats) {
  const words = new Uint32Array(floats.buffer, floats.byteOffset, floats.length);
  let h = 0x811c9dc5;
  for (const w of words) h = Math.imul(h ^ w, 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

async function child() {
  if (flag('--faults')) {
    console.log(JSON.stringify(firstTouch()));
    return;
  }
  const root = value('--root'), file = value('--path'), threads = value('--threads', 'auto');
  const api = await import(pathToFileURL(resolve(root, 'bindings/multihead.mjs')).href);
  const core = await api.loadMultihead({ threads: threads === 'auto' ? 'auto' : Number(threads) });
  // Each loader call's time, summed (as the page does: bench/browser/gguf-load-page.mjs).
  const stages = { plan: 0, feed: 0, finish: 0 };
  for (const name of Object.keys(stages)) {
    const method = core.PretrainedCore.prototype[name];
    core.PretrainedCore.prototype[name] = function timed(...a) {
      const t = performance.now();
      try { return method.apply(this, a); } finally { stages[name] += performance.now() - t; }
    };
  }
  const heap = async () => { const r = await api.runtimeInfo(); return { heapBytes: r.heapBytes, allocatedBytes: r.allocatedBytes }; };
  const before = await heap(), info = await api.runtimeInfo();
  const t0 = performance.now();
  const model = await api.loadPretrained(resolve(file));
  const loadMs = performance.now() - t0;
  const after = await heap();
  const { logits } = model.run(Int32Array.from(IDS));
  const inWasm = stages.plan + stages.feed + stages.finish;
  console.log(JSON.stringify({ loadMs, planMs: stages.plan, feedMs: stages.feed, finishMs: stages.finish, otherMs: loadMs - inWasm,
    heapBefore: before, heapAfter: after, weightBytes: model.config.weightBytes,
    threads: info.threads, relaxedSimd: info.relaxedSimd, logitsHash: hash(logits) }));
  model.dispose();
}

function runChild(childArgs) {
  const out = execFileSync(process.execPath, [new URL(import.meta.url).pathname, '--child', ...childArgs],
    { encoding: 'utf8', maxBuffer: 1 << 24 });
  return JSON.parse(out.trim().split('\n').pop());
}

const mbps = (bytes, ms) => (bytes / 1e6) / (ms / 1000);
const load = () => os.loadavg()[0];

async function main() {
  const rounds = Number(value('--rounds', 3));
  const only = value('--only', '');
  const threads = value('--threads', 'auto');
  const outFile = value('--out', 'bench/gguf-load-results.json');
  const variants = [{ name: 'this', root: resolve('.') }];
  if (flag('--before')) variants.unshift({ name: 'before', root: resolve(value('--before')) });
  const FILES = ['build/gguf-peer/llama-3.2-1b-q4_k.gguf', 'build/gguf-bench/llama-3-2-1b-q4_0.gguf',
    'build/gguf-bench/llama-3-2-1b-q8_0.gguf', 'build/gguf-peer/qwen3-4b-q4_k_m.gguf']
    .filter((f) => f.includes(only) && existsSync(f));
  const environments = [...(flag('--no-node') ? [] : ['node']), ...(flag('--browser') ? ['chromium-url'] : []),
    ...(flag('--browser') && flag('--file') ? ['chromium-file'] : [])];
  const rows = [], touches = [];
  let browser = null;
  const servers = [];
  if (flag('--browser')) {
    const { chromium } = await import('@playwright/test');
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
        '--no-first-run', '--disable-sync', '--disable-dev-shm-usage'] });
    variants.forEach((v, i) => {
      v.port = 4290 + i;
      servers.push(spawn(process.execPath, [resolve(v.root, 'scripts/serve.mjs'), '--port', String(v.port)], { stdio: 'ignore' }));
    });
  }
  const inPage = async (v, fn, arg) => {
    const page = await browser.newPage();
    page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
    for (let attempt = 0; ; attempt += 1) {
      try { await page.goto(`http://127.0.0.1:${v.port}/bench/browser/gguf-load.html`); break; } catch (e) {
        if (attempt > 20) throw e;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    await page.waitForFunction(() => window.ready === true, null, { timeout: 60000 });
    try { return await fn(page, arg); } finally { await page.close(); }
  };
  try {
    for (let round = 0; round < rounds; round += 1) {
      const touch = { round, node: runChild(['--faults']), load: load() };
      if (browser) touch.chromium = await inPage(variants[variants.length - 1], (page) => page.evaluate(() => window.firstTouch()));
      touches.push(touch);
      console.log(`round ${round + 1}: first touch ${touch.node.wasmMemory.firstMBps.toFixed(0)} MB/s in Node` +
        (touch.chromium ? `, ${touch.chromium.sharedWasmMemory.firstMBps.toFixed(0)} MB/s in Chromium (shared wasm memory)` : ''));
      for (const file of FILES) {
        const fileBytes = statSync(file).size;
        for (const environment of environments) {
          const order = round % 2 ? [...variants].reverse() : variants;
          for (const v of order) {
            const loadBefore = load();
            let r;
            if (environment === 'node') r = runChild(['--root', v.root, '--path', file, '--threads', threads]);
            else {
              r = await inPage(v, async (page, f) => {
                if (environment === 'chromium-file') await page.setInputFiles('#file', f);
                return page.evaluate((o) => window.loadFile(o), { url: `/${f}`, ids: IDS, asFile: environment === 'chromium-file' });
              }, file);
            }
            if (r.failed) throw new Error(`${v.name} ${environment} ${file}: ${r.error}`);
            const row = { round, variant: v.name, environment, file, fileBytes, loadAverage: [loadBefore, load()],
              time: new Date().toISOString(), ...r, MBps: mbps(fileBytes, r.loadMs) };
            rows.push(row);
            console.log(`  ${environment} ${v.name.padEnd(6)} ${file.split('/').pop()}: ${(r.loadMs / 1000).toFixed(2)} s, ` +
              `${row.MBps.toFixed(0)} MB/s (plan ${(r.planMs / 1000).toFixed(2)}, feed ${(r.feedMs / 1000).toFixed(2)}, ` +
              `finish ${(r.finishMs / 1000).toFixed(2)}, other ${(r.otherMs / 1000).toFixed(2)} s), ` +
              `logits ${r.logitsHash}, load avg ${loadBefore.toFixed(2)}`);
          }
        }
      }
    }
  } finally {
    await browser?.close();
    for (const s of servers) s.kill();
  }
  writeFileSync(outFile, `${JSON.stringify({ machine: machine(), threads, rounds, firstTouch: touches, rows }, null, 2)}\n`);
  summarize(outFile);
}

// Medians per (environment, variant, file) over a results file's rows, added to it as `summary`:
// - the first touch on one thread here: the heap's growth at the run's median first-touch cost
//   (Node's wasm memory for Node, Chromium's shared wasm memory for pages). plan() does that touch,
//   with every thread since 1fafbe3, so `planMs` is what it took within the load;
// - MB/s without plan: what a machine whose fresh pages cost little would approach;
// - `speedup`: the median over rounds of before ÷ this within a round (the two loads of a round
//   run back to back, so a slow stretch of the shared machine weighs on both).
function summarize(file) {
  const results = JSON.parse(readFileSync(file, 'utf8'));
  const { rows, firstTouch: touches } = results;
  const faultNs = { node: median(touches.map((t) => t.node.wasmMemory.faultNsPerByte)),
    chromium: touches[0].chromium ? median(touches.map((t) => t.chromium.sharedWasmMemory.faultNsPerByte)) : null };
  const summary = [];
  const keys = [...new Set(rows.map((r) => `${r.environment}\t${r.file}`))];
  for (const key of keys) {
    const [environment, path] = key.split('\t');
    for (const variant of [...new Set(rows.map((r) => r.variant))]) {
      const mine = rows.filter((r) => r.environment === environment && r.file === path && r.variant === variant);
      if (!mine.length) continue;
      const ms = median(mine.map((r) => r.loadMs));
      const grown = median(mine.map((r) => r.heapAfter.allocatedBytes - r.heapBefore.allocatedBytes));
      const faultMs = (grown * (faultNs[environment === 'node' ? 'node' : 'chromium'] ?? 0)) / 1e6;
      const stageMedians = Object.fromEntries(['planMs', 'feedMs', 'finishMs', 'otherMs'].map((k) => [k, median(mine.map((r) => r[k]))]));
      const before = rows.filter((r) => r.environment === environment && r.file === path && r.variant === 'before');
      const ratios = variant === 'this' ? mine.map((r) => before.find((b) => b.round === r.round)).map((b, i) => b && b.loadMs / mine[i].loadMs).filter(Boolean) : [];
      summary.push({ environment, file: path, variant, loads: mine.length, medianMs: ms, MBps: mbps(mine[0].fileBytes, ms),
        MBpsWithoutPlan: mbps(mine[0].fileBytes, median(mine.map((r) => r.loadMs - r.planMs))), ...stageMedians,
        speedup: ratios.length ? median(ratios) : null, heapGrowthBytes: grown, oneThreadFirstTouchMs: faultMs,
        loadAverages: mine.map((r) => r.loadAverage[0]), logitsHashes: [...new Set(mine.map((r) => r.logitsHash))] });
    }
  }
  console.log('\nmedians:');
  for (const x of summary) {
    console.log(`  ${x.environment.padEnd(13)} ${x.variant.padEnd(6)} ${x.file.split('/').pop().padEnd(26)} ` +
      `${(x.medianMs / 1000).toFixed(2)} s ${x.MBps.toFixed(0).padStart(4)} MB/s (${x.MBpsWithoutPlan.toFixed(0)} without plan)` +
      `${x.speedup ? ` ${x.speedup.toFixed(2)}×` : ''}  plan ${(x.planMs / 1000).toFixed(2)} feed ${(x.feedMs / 1000).toFixed(2)} ` +
      `finish ${(x.finishMs / 1000).toFixed(2)} other ${(x.otherMs / 1000).toFixed(2)}; first touch on one thread ~${(x.oneThreadFirstTouchMs / 1000).toFixed(2)} s;` +
      ` logits ${x.logitsHashes.join(' ')}`);
  }
  writeFileSync(file, `${JSON.stringify({ ...results, faultNsPerByte: faultNs, summary }, null, 2)}\n`);
  console.log(`wrote ${file}`);
}

if (flag('--summarize')) summarize(value('--summarize'));
else if (flag('--child')) await child();
else await main();
