// Unit tests of the page's pure modules (no DOM): URL state, tokenizer, statistics, offline list.
import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULTS, parseHash, toHash, validHeads, validKvHeads } from '../../web/attention/state.mjs';
import { tokenize, embed } from '../../web/attention/tokens.mjs';
import { headEntropy, meanJensenShannon, mostAttended } from '../../web/common/stats.mjs';

describe('URL state', () => {
  it('round-trips every setting', () => {
    const state = { ...DEFAULTS, text: 'Ünïcode & <tags> #hash', d: 128, h: 8, kv: 2, seed: 77, temp: 0.5, causal: true, pe: false, cross: true, text2: 'b', head: 5 };
    expect(parseHash(toHash(state))).toEqual({ state, warnings: [] });
  });
  it('rejects absurd values with a message and keeps a valid view', () => {
    const { state, warnings } = parseHash('#h=1e9&d=-1&seed=abc&temp=1e400&causal=yes&head=99&weights=<script>');
    expect(state).toMatchObject({ h: DEFAULTS.h, d: DEFAULTS.d, seed: DEFAULTS.seed, temp: DEFAULTS.temp, causal: false, head: 0, weights: 'random' });
    expect(warnings).toHaveLength(7);
    expect(warnings.join(' ')).toMatch(/Ignored h="1e9"/);
  });
  it('only offers valid head splits', () => {
    expect(validHeads(16)).toEqual([1, 2, 4, 8]);
    expect(validKvHeads(8)).toEqual([1, 2, 4, 8]);
    expect(parseHash('#d=16&h=16').state.h).toBe(4);  // 16 heads of 1 dimension are refused
  });
  it('cuts a 1 MB sentence and says so', () => {
    const { state, warnings } = parseHash(`#text=${'a'.repeat(1 << 20)}`);
    expect(state.text.length).toBe(20000);
    expect(warnings[0]).toMatch(/longer than 20000 characters/);
  });
});

describe('tokenizer and embeddings', () => {
  it('keeps contractions, splits punctuation', () => {
    expect(tokenize("The animal didn't cross, because it was tired.")).toEqual(['The', 'animal', "didn't", 'cross', ',', 'because', 'it', 'was', 'tired', '.']);
    expect(tokenize('   ')).toEqual([]);
  });
  it('gives the same word the same vector regardless of case, others differ', () => {
    const x = embed(['The', 'cat', 'the'], 8);
    expect(Array.from(x.subarray(0, 8))).toEqual(Array.from(x.subarray(16, 24)));
    expect(Array.from(x.subarray(0, 8))).not.toEqual(Array.from(x.subarray(8, 16)));
  });
});

describe('head statistics', () => {
  // Two heads, 2 queries × 2 keys: head 0 uniform, head 1 one-hot.
  const a = Float32Array.from([0.5, 0.5, 0.5, 0.5, 1, 0, 0, 1]);
  it('entropy and focus', () => {
    expect(headEntropy(a, 0, 2, 2).entropy).toBeCloseTo(Math.log(2), 6);
    expect(headEntropy(a, 0, 2, 2).focus).toBeCloseTo(0, 6);
    expect(headEntropy(a, 1, 2, 2)).toEqual({ entropy: 0, focus: 1 });
  });
  it('most attended key', () => {
    expect(mostAttended(a, 1, 2, 2)).toEqual([{ key: 0, weight: 1 }, { key: 1, weight: 1 }]);
  });
  it('Jensen–Shannon divergence of uniform vs one-hot over 2 keys', () => {
    // JS(p, q) with p = (½, ½), q = (1, 0): m = (¾, ¼); ½·KL(p‖m) + ½·KL(q‖m)
    const hand = 0.5 * (0.5 * Math.log(0.5 / 0.75) + 0.5 * Math.log(0.5 / 0.25)) + 0.5 * Math.log(1 / 0.75);
    expect(meanJensenShannon(a, 2, 2, 2)).toBeCloseTo(hand, 6);
  });
});

describe('offline support', () => {
  it('the service worker precaches every file of the site (the list the build generates)', () => {
    const self = {};
    new Function('self', readFileSync('web/precache.js', 'utf8'))(self);  // written by npm run build:wasm
    const listed = new Set(self.PRECACHE);
    expect(self.PRECACHE_VERSION).toMatch(/^[0-9a-f]{16}$/);
    // Every page, module, worker and style of web/ and every module of bindings/, found here by
    // listing the folders (the generator follows imports instead: a file no page reaches fails).
    const site = (dir, base) => readdirSync(dir, { recursive: true })
      .filter((f) => /\.(mjs|js|css|html)$/.test(f) && !/^(sw|precache)\.js$/.test(f))
      .map((f) => `${base}/${f.split('\\').join('/')}`);
    // …and the image view's demo pictures, fetched by name (web/your-model/image-view.mjs).
    const pictures = ['cat', 'ball', 'boats'].map((name) => `./your-model/images/${name}.png`);
    const expected = [...site('web', '.'), ...site('bindings', '../bindings'), './model/austen.mhlm', './model/austen.json', ...pictures];
    expect(expected.length).toBeGreaterThan(40);
    for (const f of expected) expect(listed.has(f), f).toBe(true);
    for (const f of listed) if (f !== './') expect(existsSync(join('web', f)), f).toBe(true);
    const sw = readFileSync('sw.js', 'utf8');
    expect(sw).toContain("importScripts('./web/precache.js')");
    // The wasm builds, named by the build the browser will load (relaxed SIMD or not, threads and not).
    for (const f of ['./dist/multihead_core${suffix}.mjs', './dist/multihead_core${suffix}.wasm',
      './dist/multihead_core_mt${suffix}.worker.js']) expect(sw).toContain(`\`${f}\``);
    expect(sw).toContain("relaxed ? '_relaxed' : ''");
  });
});
