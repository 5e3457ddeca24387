// "One head versus two heads, side by side": the balanced-key task trained twice at once, one
// Web Worker each, with only the number of heads different (see PLAYGROUND_TASKS['balanced-key']).
import { drawCurves } from './curves.mjs';
import { drawHeads, h, percent, tokenLabels } from './playground-draw.mjs';
import { PLAYGROUND_TASKS, trainerOptions } from './playground-state.mjs';

export const COMPARE_STEPS = 1500;

export class CompareRuns {
  /**
   * @param {URL} workerUrl the training worker
   * @param {string} color the accuracy curves' colour
   * @param {() => object} getState the playground's state (its seed and sample are used)
   */
  constructor(workerUrl, color, getState) {
    this.workerUrl = workerUrl;
    this.color = color;
    this.getState = getState;
    this.workers = [];
    this.element = this.build();
  }

  build() {
    const run = (heads) => {
      const box = h('div', { class: 'pg-run', 'data-heads': String(heads) },
        h('h4', { text: heads === 1 ? 'One head' : 'Two heads' }),
        h('canvas', { class: 'curve', role: 'img', 'aria-label': `Held-out accuracy with ${heads} head${heads > 1 ? 's' : ''}` }),
        h('p', { class: 'result', text: 'not run yet' }),
        h('div', { class: 'pg-heads' }));
      return box;
    };
    this.runs = [run(1), run(2)];
    this.button = h('button', { type: 'button', class: 'primary', 'data-action': 'compare',
      text: `Train both for ${COMPARE_STEPS.toLocaleString('en')} steps` });
    this.button.addEventListener('click', () => this.run(this.getState()));
    this.box = h('div', { class: 'pg-compare-box', 'aria-label': 'One head versus two heads' },
      h('h3', { text: 'One head versus two heads, side by side' }),
      h('p', { class: 'pg-explain', text: 'The same task, seed, layer and d_model; only the number of heads differs. '
        + 'Both train at the same time (one worker each).' }),
      h('div', {}, this.button),
      h('div', { class: 'pg-compare' }, ...this.runs));
    return this.box;
  }

  /** Trains both runs from `state`'s seed and sample. */
  run(state) {
    this.button.disabled = true;
    let finished = 0;
    this.runs.forEach((box, i) => {
      const heads = i + 1;
      const worker = this.workers[i] ?? (this.workers[i] = new Worker(this.workerUrl, { type: 'module' }));
      const curve = { xs: [], ys: [] };
      const result = box.querySelector('.result');
      result.textContent = 'training…';
      box.dataset.accuracy = '';
      worker.onmessage = ({ data }) => {
        if (data.type === 'error') { result.textContent = data.message; return; }
        curve.xs.push(data.steps);
        curve.ys.push(data.evaluation.accuracy);
        drawCurves(box.querySelector('canvas'), {
          xMax: COMPARE_STEPS, yMin: 0, yMax: 1, yFormat: (v) => `${Math.round(v * 100)}%`, target: 1 / 3,
          series: [{ xs: curve.xs, ys: curve.ys, color: this.color, width: 2 }],
        });
        result.textContent = `step ${data.steps.toLocaleString('en')}: held-out accuracy ${percent(data.evaluation.accuracy)} (chance: 33.3%, dashed)`;
        drawHeads(box.querySelector('.pg-heads'), data, tokenLabels(data));
        if (!data.playing && data.steps >= COMPARE_STEPS) {
          box.dataset.accuracy = data.evaluation.accuracy.toFixed(4);
          finished += 1;
          if (finished === 2) this.button.disabled = false;
        }
      };
      const options = { ...trainerOptions({ ...state, ...PLAYGROUND_TASKS['balanced-key'].preset }), task: 'balanced-key', heads };
      worker.postMessage({ type: 'reset', options, sample: state.sample, runTo: COMPARE_STEPS });
    });
  }

  destroy() {
    for (const w of this.workers) w?.terminate();
    this.workers = [];
  }
}
