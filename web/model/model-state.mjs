// The trained-model view's state, kept in the URL hash like the rest of the page: the text, the
// query position whose predictions are shown, the heads switched off, and what the grid shows.
export const MAX_MODEL_TEXT_CHARS = 5000;

export const MODEL_DEMOS = [
  'It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife.',
  'Mr. Darcy bowed, and Elizabeth said nothing. Mr. Darcy bowed again, and Elizabeth',
  'Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy disposition',
  'captain wentworth walked to the window and sat down . captain wentworth walked to the',
  'She was not in the habit of saying what she did not mean; and she did not mean',
];

export const VIEWS = ['heads', 'rollout'];

export const MODEL_DEFAULTS = Object.freeze({ text: MODEL_DEMOS[1], pos: -1, off: [], view: 'heads' });

/** Returns { state, warnings } from a location.hash string; layers and heads bound `off`. */
export function parseModelHash(hash, { layers = 2, heads = 4 } = {}) {
  const params = new URLSearchParams(String(hash).replace(/^#/, ''));
  const state = { ...MODEL_DEFAULTS, off: [] };
  const warnings = [];
  const reject = (key, value, why) => warnings.push(`Ignored ${key}=${JSON.stringify(String(value).slice(0, 40))} from the link: ${why}.`);
  if (params.has('text')) {
    let v = params.get('text');
    if (v.length > MAX_MODEL_TEXT_CHARS) { reject('text', v, `longer than ${MAX_MODEL_TEXT_CHARS} characters, cut there`); v = v.slice(0, MAX_MODEL_TEXT_CHARS); }
    state.text = v;
  }
  if (params.has('pos')) {
    const v = Number(params.get('pos'));
    if (Number.isInteger(v) && v >= -1 && v < 4096) state.pos = v;
    else reject('pos', params.get('pos'), 'use a token position (0, 1, …) or -1 for the last token');
  }
  if (params.has('off') && params.get('off') !== '') {
    for (const item of params.get('off').split(',').slice(0, layers * heads)) {
      const m = /^(\d+)\.(\d+)$/.exec(item);
      const layer = m ? Number(m[1]) : -1, head = m ? Number(m[2]) : -1;
      if (m && layer >= 1 && layer <= layers && head >= 1 && head <= heads) {
        if (!state.off.some(([l, h]) => l === layer - 1 && h === head - 1)) state.off.push([layer - 1, head - 1]);
      } else {
        reject('off', item, `name a head as layer.head, from 1.1 to ${layers}.${heads}`);
      }
    }
  }
  if (params.has('view')) {
    const v = params.get('view');
    if (VIEWS.includes(v)) state.view = v;
    else reject('view', v, `use ${VIEWS.join(' or ')}`);
  }
  return { state, warnings };
}

/** The hash for a state (heads are written 1-based, as the page labels them: off=1.2,2.4). */
export function toModelHash(state) {
  const params = new URLSearchParams();
  params.set('text', state.text);
  params.set('pos', String(state.pos));
  params.set('off', state.off.map(([l, h]) => `${l + 1}.${h + 1}`).join(','));
  params.set('view', state.view);
  return `#${params.toString()}`;
}
