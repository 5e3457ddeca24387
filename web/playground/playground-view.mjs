// The training playground as one mountable view: used by web/playground.html and by the widget
// (<multihead-attention view="playground">). It owns a Web Worker (train-worker.mjs) that trains;
// this file only draws what the worker reports and sends it the user's buttons.
import { drawCurves } from './curves.mjs';
import { CompareRuns } from './playground-compare.mjs';
import { argmax, drawHeads, h, option, percent, tokenLabels } from './playground-draw.mjs';
import {
  D_CHOICES, LR_CHOICES, PLAYGROUND_TASKS, TASK_NAMES, presetFor, shapeProblem, trainerOptions,
} from './playground-state.mjs';

const WORKER_URL = new URL('./train-worker.mjs', import.meta.url);
const LOSS_COLOR = '#1a73e8', HELD_OUT_COLOR = '#e8710a', ACCURACY_COLOR = '#188038';

const CSS = `
.pg { display: grid; gap: 10px; }
.pg-controls { display: flex; flex-wrap: wrap; gap: 6px 14px; align-items: center; }
.pg-controls label { display: inline-flex; gap: 4px; align-items: center; }
.pg select, .pg input, .pg button { font: inherit; color: inherit; background: transparent;
  border: 1px solid var(--multihead-border-color, var(--border, #d0d4da)); border-radius: 6px; padding: 3px 8px; }
.pg input[type=number] { width: 6em; }
.pg button { cursor: pointer; }
.pg button.primary { border-color: var(--multihead-accent, var(--accent, #1a5fb4)); font-weight: 600; min-width: 5.5em; }
.pg :focus-visible { outline: 3px solid var(--multihead-focus, var(--focus, #e01b24)); outline-offset: 2px; }
.pg-explain { margin: 0; max-width: 75ch; }
.pg-status { margin: 0; font-variant-numeric: tabular-nums; }
.pg-message:empty { display: none; }
.pg-message { background: var(--warn-bg, #fff4ce); color: var(--warn-fg, #5c4400); padding: 6px 10px; border-radius: 6px; }
.pg-curves { display: grid; gap: 10px; grid-template-columns: repeat(auto-fit, minmax(240px, 1fr)); }
.pg figure { margin: 0; min-width: 0; }
.pg figcaption { font-size: 0.85em; display: flex; flex-wrap: wrap; gap: 4px 12px; }
.pg .key::before { content: ''; display: inline-block; width: 12px; height: 3px; margin-right: 4px; vertical-align: middle; background: var(--swatch); }
.pg .key.training { --swatch: ${LOSS_COLOR}; }
.pg .key.held-out { --swatch: ${HELD_OUT_COLOR}; }
.pg .key.accuracy { --swatch: ${ACCURACY_COLOR}; }
.pg canvas.curve { display: block; width: 100%; height: 150px; color: inherit; }
.pg-sample { display: flex; flex-wrap: wrap; gap: 4px; align-items: flex-start; }
.pg-sample .tok { display: inline-grid; text-align: center; min-width: 1.9em; font-family: ui-monospace, monospace; font-size: 0.85em;
  border: 1px solid var(--multihead-border-color, var(--border, #d0d4da)); border-radius: 4px; padding: 1px 3px; }
.pg-sample .tok small { font-size: 0.75em; opacity: 0.8; }
.pg-sample .tok .ok { color: #188038; }
.pg-sample .tok .bad { color: #d93025; }
@media (prefers-color-scheme: dark) { .pg-sample .tok .ok { color: #81c995; } .pg-sample .tok .bad { color: #f28b82; } }
.pg-heads { display: grid; gap: 10px; }
.pg-layer { display: grid; gap: 10px; grid-template-columns: repeat(auto-fill, minmax(var(--multihead-head-min-width, 130px), 1fr)); }
.pg-heads canvas { display: block; width: 100%; color: inherit; }
.pg-compare { display: grid; gap: 12px; grid-template-columns: repeat(auto-fit, minmax(260px, 1fr)); }
.pg-compare[hidden], .pg-compare-box[hidden] { display: none; }
.pg-compare-box { display: grid; gap: 8px; border-top: 1px solid var(--multihead-border-color, var(--border, #d0d4da)); padding-top: 8px; }
.pg-compare-box h3 { font-size: 1em; margin: 0; }
.pg-run h4 { font-size: 0.95em; margin: 0 0 4px; }
.pg-run .result { font-variant-numeric: tabular-nums; margin: 4px 0; }
`;

/** The playground's stylesheet (constructed, so it works under a strict CSP and in shadow roots). */
export const playgroundSheet = new CSSStyleSheet();
playgroundSheet.replaceSync(CSS);

export class PlaygroundView {
  /**
   * @param {Element | ShadowRoot} root where the view is built
   * @param {{ state: object, onStateChange?: (state: object) => void, compare?: boolean }} options
   */
  constructor(root, { state, onStateChange = () => {}, compare = true }) {
    this.state = { ...state };
    this.onStateChange = onStateChange;
    this.worker = null;
    this.history = null;
    this.latest = null;
    this.build(root, compare);
    this.reset({ runTo: this.state.step });
  }

  build(root, compare) {
    const select = (key, values, label = (v) => String(v)) => {
      const el = h('select', { 'data-key': key }, ...values.map((v) => option(v, label(v))));
      el.addEventListener('change', () => this.change(key, key === 'task' ? el.value : Number(el.value)));
      return el;
    };
    this.ui = {
      task: select('task', TASK_NAMES, (t) => PLAYGROUND_TASKS[t].title),
      layers: select('layers', [1, 2]),
      heads: select('heads', [1, 2, 3, 4, 5, 6, 7, 8]),
      d: select('d', D_CHOICES),
      lr: select('lr', LR_CHOICES),
      seed: h('input', { type: 'number', min: '0', max: '2147483647', step: '1', 'data-key': 'seed', 'aria-label': 'Seed' }),
      play: h('button', { class: 'primary', type: 'button', 'data-action': 'play', text: 'Play' }),
      step: h('button', { type: 'button', 'data-action': 'step', text: 'Step', title: 'One Adam step' }),
      reset: h('button', { type: 'button', 'data-action': 'reset', text: 'Reset', title: 'New weights from the seed' }),
      explain: h('p', { class: 'pg-explain' }),
      status: h('p', { class: 'pg-status', role: 'status', 'aria-live': 'off' }),
      message: h('p', { class: 'pg-message', role: 'alert' }),
      loss: h('canvas', { class: 'curve', role: 'img', 'aria-label': 'Training and held-out loss over steps' }),
      accuracy: h('canvas', { class: 'curve', role: 'img', 'aria-label': 'Held-out accuracy over steps' }),
      sample: h('div', { class: 'pg-sample', 'aria-label': 'The sample sequence' }),
      samplePrev: h('button', { type: 'button', 'data-action': 'sample-prev', text: '‹', 'aria-label': 'Previous sample' }),
      sampleNext: h('button', { type: 'button', 'data-action': 'sample-next', text: '›', 'aria-label': 'Next sample' }),
      sampleIndex: h('span', { class: 'pg-sample-index' }),
      heads_: h('div', { class: 'pg-heads' }),
    };
    const u = this.ui;
    u.seed.addEventListener('change', () => {
      const v = Number(u.seed.value);
      if (Number.isInteger(v) && v >= 0 && v <= 2147483647) this.change('seed', v);
      else u.seed.value = String(this.state.seed);
    });
    u.play.addEventListener('click', () => this.togglePlay());
    u.step.addEventListener('click', () => this.post({ type: 'step', count: 1 }));
    u.reset.addEventListener('click', () => this.reset());
    u.samplePrev.addEventListener('click', () => this.showSample(this.state.sample - 1));
    u.sampleNext.addEventListener('click', () => this.showSample(this.state.sample + 1));
    const label = (text, el) => h('label', {}, text, el);
    const key = (text, kind) => h('span', { class: `key ${kind}`, text });
    const lossKeys = [key('training loss (per step)', 'training'), key('held-out loss', 'held-out')];
    const accKey = key('held-out accuracy (dashed: target)', 'accuracy');

    this.element = h('div', { class: 'pg', 'data-ready': 'false' },
      h('div', { class: 'pg-controls' },
        label('Task', u.task), label('Layers', u.layers), label('Heads', u.heads), label('d_model', u.d),
        label('Learning rate', u.lr), label('Seed', u.seed), u.play, u.step, u.reset),
      u.explain, u.message, u.status,
      h('div', { class: 'pg-curves' },
        h('figure', {}, u.loss, h('figcaption', {}, ...lossKeys)),
        h('figure', {}, u.accuracy, h('figcaption', {}, accKey))),
      h('div', { class: 'pg-controls' }, h('strong', { text: 'Sample (held out):' }), u.samplePrev, u.sampleIndex, u.sampleNext),
      u.sample,
      u.heads_);
    if (compare) {
      this.compare = new CompareRuns(WORKER_URL, ACCURACY_COLOR, () => this.state);
      this.element.append(this.compare.element);
    }
    root.append(this.element);
    this.syncControls();
  }

  syncControls() {
    const u = this.ui, s = this.state;
    for (const k of ['task', 'layers', 'heads', 'd', 'lr']) u[k].value = String(s[k]);
    u.seed.value = String(s.seed);
    u.explain.textContent = PLAYGROUND_TASKS[s.task].explanation;
    if (this.compare) this.compare.element.hidden = s.task !== 'balanced-key';
  }

  change(key, value) {
    this.state = key === 'task' ? presetFor(value, this.state) : { ...this.state, [key]: value, step: 0 };
    if (key === 'lr' && this.latest) {  // the learning rate changes the run in place: no reset
      this.post({ type: 'learningRate', value });
      this.state.step = this.latest.steps;
      this.syncControls();
      this.onStateChange(this.state);
      return;
    }
    this.syncControls();
    this.reset();
  }

  /** Applies a whole new state (e.g. from the URL) and replays its steps. */
  setState(state) {
    this.state = { ...state };
    this.syncControls();
    this.reset({ runTo: state.step });
  }

  ensureWorker() {
    if (!this.worker) {
      this.worker = new Worker(WORKER_URL, { type: 'module' });
      this.worker.onmessage = ({ data }) => this.onReport(data);
      this.worker.onerror = (event) => this.showMessage(`The training worker failed: ${event.message ?? 'unknown error'}`);
    }
    return this.worker;
  }

  post(message) {
    this.ensureWorker().postMessage(message);
  }

  reset({ runTo = 0 } = {}) {
    const problem = shapeProblem(this.state);
    this.showMessage(problem ? `Pick heads that divide d_model: ${problem}.` : '');
    if (problem) return;
    this.history = { steps: [], losses: [], evalSteps: [], evalLosses: [], evalAccuracies: [] };
    this.playStartedAt = null;
    this.reached = null;
    this.latest = null;
    this.element.dataset.ready = 'false';
    this.post({ type: 'reset', options: trainerOptions(this.state), sample: this.state.sample, runTo });
    this.onStateChange(this.state);
  }

  togglePlay() {
    if (this.latest?.playing) {
      this.post({ type: 'pause' });
    } else {
      this.playStartedAt ??= { time: performance.now(), step: this.latest?.steps ?? 0 };
      this.post({ type: 'play' });
      this.setPlaying(true);
    }
  }

  setPlaying(playing) {
    this.ui.play.textContent = playing ? 'Pause' : 'Play';
    this.ui.play.setAttribute('aria-pressed', String(playing));
    this.element.dataset.playing = String(playing);
  }

  showSample(index) {
    const count = this.latest?.config.heldOut ?? 256;
    this.state.sample = (index + count) % count;
    this.post({ type: 'sample', index: this.state.sample });
    this.onStateChange(this.state);
  }

  showMessage(text) {
    this.ui.message.textContent = text;
  }

  onReport(report) {
    if (report.type === 'error') {
      this.showMessage(report.message);
      this.setPlaying(false);
      return;
    }
    if (report.error) this.showMessage(report.error);
    const hist = this.history;
    if (!hist) return;
    const first = report.steps - report.losses.length;
    report.losses.forEach((l, i) => { hist.steps.push(first + i + 1); hist.losses.push(l); });
    if (hist.evalSteps.at(-1) !== report.steps) {
      hist.evalSteps.push(report.steps);
      hist.evalLosses.push(report.evaluation.loss);
      hist.evalAccuracies.push(report.evaluation.accuracy);
    }
    const target = PLAYGROUND_TASKS[this.state.task].target;
    if (!this.reached && report.evaluation.accuracy >= target) {
      const started = this.playStartedAt;
      this.reached = { step: report.steps, seconds: started ? (performance.now() - started.time) / 1000 : null };
      if (this.reached.seconds !== null) this.element.dataset.secondsToTarget = this.reached.seconds.toFixed(2);
      this.element.dataset.stepToTarget = String(report.steps);
    }
    this.latest = report;
    this.state.step = report.steps;
    this.setPlaying(report.playing);
    this.render(report);
    if (!report.playing) this.onStateChange(this.state);
    else this.onStateChange(this.state, { throttle: true });
  }

  render(report) {
    const hist = this.history, u = this.ui, e = this.element;
    const target = PLAYGROUND_TASKS[this.state.task].target;
    const seconds = report.trainMs + report.reportMs > 0 ? report.losses.length / ((report.trainMs + report.reportMs) / 1000) : 0;
    const parts = [
      `step ${report.steps.toLocaleString('en')}`,
      `held-out accuracy ${percent(report.evaluation.accuracy)} (target ${percent(target)})`,
      `loss ${report.evaluation.loss.toFixed(3)}`,
      `${report.config.parameterCount.toLocaleString('en')} parameters`,
    ];
    if (report.playing && report.losses.length) parts.push(`${Math.round(seconds).toLocaleString('en')} steps/s`);
    if (this.reached) {
      parts.push(this.reached.seconds !== null
        ? `reached the target at step ${this.reached.step.toLocaleString('en')}, ${this.reached.seconds.toFixed(1)} s after play`
        : `reached the target at step ${this.reached.step.toLocaleString('en')}`);
    }
    u.status.textContent = parts.join(' · ');
    e.dataset.ready = 'true';
    e.dataset.steps = String(report.steps);
    e.dataset.accuracy = report.evaluation.accuracy.toFixed(4);
    e.dataset.loss = report.evaluation.loss.toFixed(4);
    e.dataset.reports = String(Number(e.dataset.reports ?? 0) + 1);
    // Share of the worker's time spent training (the rest: evaluating + the sample for the page).
    if (report.losses.length) e.dataset.trainShare = (report.trainMs / (report.trainMs + report.reportMs)).toFixed(3);

    const xMax = Math.max(100, report.steps);
    const maxLoss = Math.max(3, ...hist.evalLosses.slice(0, 1));
    drawCurves(u.loss, {
      xMax, yMin: 1e-3, yMax: maxLoss, yLog: true, yFormat: (v) => String(v),
      series: [
        { xs: hist.steps, ys: hist.losses, color: LOSS_COLOR, width: 1 },
        { xs: hist.evalSteps, ys: hist.evalLosses, color: HELD_OUT_COLOR, width: 2 },
      ],
    });
    drawCurves(u.accuracy, {
      xMax, yMin: 0, yMax: 1, yFormat: (v) => `${Math.round(v * 100)}%`, target,
      series: [{ xs: hist.evalSteps, ys: hist.evalAccuracies, color: ACCURACY_COLOR, width: 2 }],
    });

    u.sampleIndex.textContent = `${report.sampleIndex + 1} / ${report.config.heldOut}`;
    const { tokens, targets, probabilities } = report.sample;
    const vocab = report.config.vocabSize;
    const labels = tokenLabels(report);
    u.sample.replaceChildren(...tokens.map((t, i) => {
      const cell = h('span', { class: 'tok', title: labels[i] }, h('span', { text: labels[i] }));
      if (targets[i] >= 0) {
        const predicted = argmax(probabilities.subarray(i * vocab, (i + 1) * vocab));
        const ok = predicted === targets[i];
        cell.append(h('small', { class: ok ? 'ok' : 'bad', text: `→${report.vocabulary[predicted]}${ok ? '' : ` (${report.vocabulary[targets[i]]})`}` }));
      }
      return cell;
    }));
    drawHeads(u.heads_, report, labels);
  }

  /** Stops the workers (the widget calls this when removed from the page). */
  destroy() {
    this.worker?.terminate();
    this.worker = null;
    this.compare?.destroy();
  }
}
