// The "Your model" page's state in the URL hash, as on the other pages: the text (and the second
// sentence of a pair), the view, the selected head, the switched-off heads, the position whose
// prediction is shown, the hub model id (local files cannot live in a URL) and the weights' type in
// memory (loadPretrained's weightType: a link to a hub model then loads it the same way), and for
// an image model the demo picture shown (a picture of the user's own cannot live in a URL); for an
// encoder-decoder the target text (output; text is the source), which attention (view: cross,
// encoder or decoder) and whether a head or a mean over heads is enlarged (avg: layer, all).
import { MODES } from './your-model-view.mjs';
import { PATCH_WHAT, WHY_PANELS } from './why-view.mjs';
import { DEMO_IMAGES } from './image-view.mjs';
import { ENCDEC_AVERAGES, ENCDEC_KINDS } from './encdec-view.mjs';
import { DEFAULT_TEXT } from './defaults.mjs';

export const MAX_TEXT_CHARS = 20000;
export const WEIGHT_TYPES = ['f16', 'bf16'];  // '' (absent): as stored
export { DEFAULT_TEXT };

/** { state, warnings } from location.hash. */
export function parseYourModelHash(hash) {
  const params = new URLSearchParams(String(hash).replace(/^#/, ''));
  const state = { text: DEFAULT_TEXT, pair: '', pos: -1, off: [], sel: [0, 0], mode: 'attention', model: '', weights: '',
    why: '', target: '', contrast: '', corrupt: '', patch: 'heads', image: '', output: '', view: 'cross', avg: '' };
  const warnings = [];
  const reject = (key, value, why) => warnings.push(`Ignored ${key}=${JSON.stringify(String(value).slice(0, 40))} from the link: ${why}.`);
  for (const key of ['text', 'pair', 'output']) {
    if (!params.has(key)) continue;
    let v = params.get(key);
    if (v.length > MAX_TEXT_CHARS) { reject(key, v, `longer than ${MAX_TEXT_CHARS} characters, cut there`); v = v.slice(0, MAX_TEXT_CHARS); }
    state[key] = v;
  }
  if (params.has('mode')) {
    if (MODES.includes(params.get('mode'))) state.mode = params.get('mode');
    else reject('mode', params.get('mode'), `use ${MODES.join(', ')}`);
  }
  const head = (text) => {
    const m = /^(\d{1,3})\.(\d{1,3})$/.exec(text);
    return m && Number(m[1]) >= 1 && Number(m[2]) >= 1 ? [Number(m[1]) - 1, Number(m[2]) - 1] : null;
  };
  if (params.has('head')) {
    const sel = head(params.get('head'));
    if (sel) state.sel = sel;
    else reject('head', params.get('head'), 'name a head as layer.head, like 2.3');
  }
  if (params.get('off')) {
    for (const item of params.get('off').split(',').slice(0, 4096)) {
      const pair = head(item);
      if (pair) { if (!state.off.some(([l, h]) => l === pair[0] && h === pair[1])) state.off.push(pair); } else reject('off', item, 'name heads as layer.head, like 2.3');
    }
  }
  if (params.has('pos')) {
    const v = Number(params.get('pos'));
    if (Number.isInteger(v) && v >= -1 && v < 1 << 20) state.pos = v;
    else reject('pos', params.get('pos'), 'use a token position (0, 1, …) or -1 for the last token');
  }
  if (params.has('model')) {
    const v = params.get('model');
    if (/^[A-Za-z0-9][\w.-]*(\/[\w.-]+)?$/.test(v) || /^https?:\/\/[^\s]+$/.test(v)) state.model = v;
    else reject('model', v, 'use a Hugging Face model id (like gpt2) or a URL');
  }
  // "Why this prediction": the panel, the target and contrast tokens, the corrupted prompt, what to patch.
  if (params.has('why')) {
    if (WHY_PANELS.includes(params.get('why'))) state.why = params.get('why');
    else reject('why', params.get('why'), `use ${WHY_PANELS.join(', ')}`);
  }
  for (const key of ['target', 'contrast']) if (params.has(key)) state[key] = params.get(key).slice(0, 100);
  if (params.has('corrupt')) state.corrupt = params.get('corrupt').slice(0, MAX_TEXT_CHARS);
  if (params.has('patch')) {
    if (PATCH_WHAT.includes(params.get('patch'))) state.patch = params.get('patch');
    else reject('patch', params.get('patch'), `use ${PATCH_WHAT.join(', ')}`);
  }
  if (params.has('image')) {
    if (DEMO_IMAGES.includes(params.get('image'))) state.image = params.get('image');
    else reject('image', params.get('image'), `use one of the demo pictures: ${DEMO_IMAGES.join(', ')}`);
  }
  if (params.has('view')) {
    if (ENCDEC_KINDS.includes(params.get('view'))) state.view = params.get('view');
    else reject('view', params.get('view'), `use ${ENCDEC_KINDS.join(', ')}`);
  }
  if (params.has('avg')) {
    if (ENCDEC_AVERAGES.includes(params.get('avg'))) state.avg = params.get('avg');
    else reject('avg', params.get('avg'), `use ${ENCDEC_AVERAGES.filter(Boolean).join(' or ')} (or leave it out: one head)`);
  }
  if (params.has('weights')) {
    const v = params.get('weights');
    if (WEIGHT_TYPES.includes(v)) state.weights = v;
    else reject('weights', v, `use ${WEIGHT_TYPES.join(' or ')} (or leave it out: as stored)`);
  }
  return { state, warnings };
}

export function toYourModelHash(state) {
  const params = new URLSearchParams();
  if (state.model) params.set('model', state.model);
  if (state.weights) params.set('weights', state.weights);
  params.set('text', state.text);
  if (state.pair) params.set('pair', state.pair);
  params.set('mode', state.mode);
  params.set('head', `${state.sel[0] + 1}.${state.sel[1] + 1}`);
  if (state.off.length) params.set('off', state.off.map(([l, h]) => `${l + 1}.${h + 1}`).join(','));
  params.set('pos', String(state.pos));
  if (state.why) params.set('why', state.why);
  for (const key of ['target', 'contrast', 'corrupt']) if (state[key]) params.set(key, state[key]);
  if (state.why === 'patching') params.set('patch', state.patch);
  if (state.image) params.set('image', state.image);
  if (state.encdec) {
    params.set('output', state.output);
    params.set('view', state.view);
    if (state.avg) params.set('avg', state.avg);
  }
  return `#${params.toString()}`;
}
