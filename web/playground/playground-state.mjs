// The playground's state, kept in the URL hash like the rest of the page (TensorFlow Playground
// style): task, model size, learning rate, seed, the step reached and the sample shown. A link
// reproduces the view exactly, because training is seeded: the page replays the steps.
export const PLAYGROUND_TASKS = Object.freeze({
  copy: {
    title: 'Copy',
    explanation: 'The model sees six letters, a bar, and must write the six letters again. To '
      + 'predict the next answer letter, a head looks back exactly seven places, to the letter it '
      + 'is copying: watch one head\'s heatmap become a clean diagonal stripe. Only the answer '
      + 'letters (after the bar) are scored.',
    target: 0.99,
  },
  reverse: {
    title: 'Reverse',
    explanation: 'Six letters, a bar, then the same letters backwards. Each answer letter comes '
      + 'from a different distance back, so the head that solves it draws an anti-diagonal: the '
      + 'first answer looks at the last prompt letter, the last answer at the first.',
    target: 0.99,
  },
  sort: {
    title: 'Sort',
    explanation: 'Six letters, a bar, then the letters in alphabetical order (repeats kept). No '
      + 'fixed offset works here: a head has to find, among the prompt, the smallest letter not '
      + 'yet written, so its attention depends on the letters themselves, not on positions.',
    target: 0.97,
  },
  'previous-token': {
    title: 'Previous-token retrieval',
    explanation: 'Eight different letters, then "?" and one of them: answer the letter that came '
      + 'just before it. One layer cannot do this. In layer 1 a head learns to look one place back '
      + '(a previous-token head), so each position also carries its predecessor; in layer 2 a '
      + 'head finds the earlier copy of the asked letter and reads that predecessor out. It '
      + 'takes a few thousand steps: the loss sits on a plateau, then drops when the two heads '
      + 'click together.',
    target: 0.95,
    preset: { layers: 2, heads: 4, d: 32, lr: 0.003 },
  },
  'balanced-key': {
    title: 'Balanced key',
    explanation: 'Three keys, each a label with two scores (criteria) between 0 and 1: one is '
      + 'strong on the first only, one on the second only, and one is fair on both, exactly '
      + 'halfway between the other two. After "?", answer the fair one: the key whose weaker '
      + 'score is best. A head scores keys by a linear function of their features, and halfway '
      + 'between two keys a linear score is the mean of theirs: never the highest, never the '
      + 'lowest. So one head cannot single it out (it stays near 1 in 3, chance). Two heads '
      + 'can: each finds one of the one-sided keys and votes it down, leaving the balanced one. '
      + 'This model has no layer norm before attention, so that argument holds exactly.',
    target: 0.95,
    preset: { layers: 1, heads: 2, d: 32, lr: 0.001 },
  },
});

export const TASK_NAMES = Object.keys(PLAYGROUND_TASKS);
export const D_CHOICES = [16, 32, 64];
export const LR_CHOICES = [0.0003, 0.001, 0.003, 0.01, 0.03];
export const MAX_STEP_IN_LINK = 20000;  // a link replays its steps; keep that to a few seconds

export const PLAYGROUND_DEFAULTS = Object.freeze({
  task: 'copy', layers: 2, heads: 4, d: 32, lr: 0.003, seed: 1, step: 0, sample: 0,
});

/** The settings a task starts from when picked (its preset, or the defaults). */
export function presetFor(task, state) {
  const preset = PLAYGROUND_TASKS[task]?.preset ?? { layers: 2, heads: 4, d: 32, lr: 0.003 };
  return { ...state, task, ...preset, step: 0, sample: 0 };
}

/** "" when heads divides d_model, else why not (the trainer would refuse it). */
export function shapeProblem(state) {
  return state.d % state.heads === 0 ? '' : `d_model ${state.d} is not divisible by ${state.heads} heads`;
}

/** Returns { state, warnings } from a location.hash string. */
export function parsePlaygroundHash(hash) {
  const params = new URLSearchParams(String(hash).replace(/^#/, ''));
  const state = { ...PLAYGROUND_DEFAULTS };
  const warnings = [];
  const reject = (key, why) => warnings.push(`Ignored ${key}=${JSON.stringify(String(params.get(key)).slice(0, 40))} from the link: ${why}.`);
  const int = (key, lo, hi) => {
    if (!params.has(key)) return;
    const v = Number(params.get(key));
    if (Number.isInteger(v) && v >= lo && v <= hi) state[key] = v;
    else reject(key, `use a whole number from ${lo} to ${hi}`);
  };
  if (params.has('task')) {
    const v = params.get('task');
    if (TASK_NAMES.includes(v)) Object.assign(state, presetFor(v, state));
    else reject('task', `use one of ${TASK_NAMES.join(', ')}`);
  }
  int('layers', 1, 2);
  int('heads', 1, 8);
  if (params.has('d')) {
    const v = Number(params.get('d'));
    if (D_CHOICES.includes(v)) state.d = v;
    else reject('d', `use ${D_CHOICES.join(', ')}`);
  }
  if (params.has('lr')) {
    const v = Number(params.get('lr'));
    if (Number.isFinite(v) && v > 0 && v <= 0.1) state.lr = v;
    else reject('lr', 'use a learning rate between 0 and 0.1');
  }
  int('seed', 0, 2 ** 31 - 1);
  int('step', 0, MAX_STEP_IN_LINK);
  int('sample', 0, 255);
  const problem = shapeProblem(state);
  if (problem) {
    warnings.push(`The link's ${problem}; using ${PLAYGROUND_DEFAULTS.heads} heads.`);
    state.heads = PLAYGROUND_DEFAULTS.heads;
    if (shapeProblem(state)) state.d = PLAYGROUND_DEFAULTS.d;
  }
  return { state, warnings };
}

/** The hash for a state. */
export function toPlaygroundHash(state) {
  const params = new URLSearchParams();
  for (const key of ['task', 'layers', 'heads', 'd', 'lr', 'seed', 'step', 'sample']) params.set(key, String(state[key]));
  return `#${params.toString()}`;
}

/** The trainer options (bindings/trainer.mjs) for a state. */
export function trainerOptions(state) {
  return { task: state.task, layers: state.layers, heads: state.heads, dModel: state.d, learningRate: state.lr, seed: state.seed };
}
