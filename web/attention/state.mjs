// The whole view lives in the URL hash (like TensorFlow Playground): parse it defensively, write
// it back on every change. Anything out of range is replaced by a valid value and reported.

export const D_MODELS = [16, 32, 64, 128, 256, 512];
export const HEAD_COUNTS = [1, 2, 4, 8, 16];
export const MAX_TEXT_CHARS = 20000;

export const DEMO_SENTENCES = [
  'The cat sat on the mat',
  "The animal didn't cross the street because it was too tired",
  'The bank that the river flows by is closed',
  'The lawyer who the witness saw left',
  'The cat, which was very fluffy, sat on the mat.',
  'I saw the man with the telescope',
];

export const DEFAULTS = Object.freeze({
  text: DEMO_SENTENCES[0], text2: 'Le chat est assis sur le tapis',
  d: 64, h: 4, kv: 4, seed: 42, temp: 1, causal: false, pe: true, cross: false,
  weights: 'random', head: 0, embed: false,
});

/** Head counts that divide d_model: the only valid splits. */
export function validHeads(d) { return HEAD_COUNTS.filter((h) => d % h === 0 && d / h >= 2); }
/** Key/value head counts for h query heads: h (MHA), divisors (GQA), 1 (MQA). */
export function validKvHeads(h) { return HEAD_COUNTS.filter((k) => h % k === 0 && k <= h); }

/** Returns { state, warnings } from a location.hash string. */
export function parseHash(hash) {
  const params = new URLSearchParams(String(hash).replace(/^#/, ''));
  const state = { ...DEFAULTS };
  const warnings = [];
  const reject = (key, value, why) => warnings.push(`Ignored ${key}=${JSON.stringify(String(value).slice(0, 40))} from the link: ${why}.`);

  const text = (key) => {
    if (!params.has(key)) return;
    let v = params.get(key);
    if (v.length > MAX_TEXT_CHARS) { reject(key, v, `longer than ${MAX_TEXT_CHARS} characters, cut there`); v = v.slice(0, MAX_TEXT_CHARS); }
    state[key] = v;
  };
  text('text');
  text('text2');

  const choice = (key, allowed) => {
    if (!params.has(key)) return;
    const v = Number(params.get(key));
    if (allowed.includes(v)) state[key] = v;
    else reject(key, params.get(key), `use one of ${allowed.join(', ')}`);
  };
  choice('d', D_MODELS);
  choice('h', validHeads(state.d));
  if (!validHeads(state.d).includes(state.h)) state.h = validHeads(state.d).includes(DEFAULTS.h) ? DEFAULTS.h : validHeads(state.d)[0];
  state.kv = state.h;
  choice('kv', validKvHeads(state.h));

  const number = (key, min, max, integer) => {
    if (!params.has(key)) return;
    const v = Number(params.get(key));
    if (Number.isFinite(v) && v >= min && v <= max && (!integer || Number.isInteger(v))) state[key] = v;
    else reject(key, params.get(key), `use ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
  };
  number('seed', 0, 2 ** 31 - 1, true);
  number('temp', 0.05, 20, false);
  number('head', 0, state.h - 1, true);
  if (state.head >= state.h) state.head = 0;

  const flag = (key) => {
    if (!params.has(key)) return;
    const v = params.get(key);
    if (v === '1' || v === '0') state[key] = v === '1';
    else reject(key, v, 'use 1 or 0');
  };
  flag('causal');
  flag('pe');
  flag('cross');
  flag('embed');
  if (params.has('weights')) {
    const v = params.get('weights');
    if (v === 'random' || v === 'archetype') state.weights = v;
    else reject('weights', v, 'use random or archetype');
  }
  // Hand-built heads need one K/V head per query head and positions in X.
  if (state.weights === 'archetype') { state.kv = state.h; state.pe = true; }
  return { state, warnings };
}

/** The hash for a state. Every key is written, so a link keeps its view if defaults change. */
export function toHash(state) {
  const params = new URLSearchParams();
  for (const key of Object.keys(DEFAULTS)) {
    const value = state[key];
    if (key === 'text2' && !state.cross) continue;
    params.set(key, typeof value === 'boolean' ? (value ? '1' : '0') : String(value));
  }
  return `#${params.toString()}`;
}
