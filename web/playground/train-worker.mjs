// The playground's training loop, off the main thread: Adam steps in slices of about a tenth of a
// second, each followed by a report (the new losses, held-out loss and accuracy, and the model's
// attention on the sample), so the page redraws ~10 times a second while nearly all the time
// goes to training.
import { createTrainer } from '../../bindings/multihead.mjs';

const SLICE_MS = 100;          // training time between reports
const CHUNK_MS = 8;            // steps per train() call are sized to about this
const AUTO_PAUSE_STEPS = 50000;

let trainer = null;
let playing = false;
let stopAt = Infinity;         // pause when this step is reached (a link's step, "run to")
let sampleIndex = 0;
let stepsPerChunk = 4;
let pending = [];              // losses not reported yet
let trainMs = 0, reportMs = 0; // since the last report
let loopScheduled = false;
let generation = 0;            // bumps on reset, so a stale loop from the old trainer stops

function trainChunk(count) {
  const t0 = performance.now();
  const losses = trainer.train(count);
  const ms = performance.now() - t0;
  trainMs += ms;
  for (const l of losses) pending.push(l);
  // Adapt the chunk so one call stays near CHUNK_MS whatever the model size.
  const perStep = ms / count;
  stepsPerChunk = Math.max(1, Math.min(500, Math.round(CHUNK_MS / Math.max(perStep, 1e-3))));
}

function report(extra = {}) {
  const t0 = performance.now();
  const evaluation = trainer.evaluate();
  const sample = trainer.sample(sampleIndex);
  const ms = performance.now() - t0;
  const losses = Float32Array.from(pending);
  const message = {
    type: 'report', steps: trainer.steps, losses, evaluation, sample, sampleIndex,
    playing, trainMs, reportMs: ms, config: trainer.config, vocabulary: trainer.vocabulary, ...extra,
  };
  pending = [];
  trainMs = 0;
  reportMs = ms;
  self.postMessage(message, [losses.buffer, sample.attentions.buffer, sample.probabilities.buffer]);
}

function loop(mine) {
  loopScheduled = false;
  if (!playing || mine !== generation || !trainer) return;
  const t0 = performance.now();
  try {
    while (performance.now() - t0 < SLICE_MS && trainer.steps < stopAt) {
      trainChunk(Math.min(stepsPerChunk, stopAt - trainer.steps));
    }
  } catch (error) {
    playing = false;
    report({ error: error.message });
    return;
  }
  if (trainer.steps >= stopAt || trainer.steps >= AUTO_PAUSE_STEPS) {
    playing = false;
    stopAt = Infinity;
  }
  report();
  schedule();
}

function schedule() {
  if (playing && !loopScheduled) {
    loopScheduled = true;
    const mine = generation;
    setTimeout(() => loop(mine), 0);  // lets pause/step messages in between slices
  }
}

const handlers = {
  async reset({ options, sample = 0, runTo = 0, play = false }) {
    generation += 1;
    const mine = generation;
    playing = false;
    trainer?.dispose();
    trainer = null;
    pending = [];
    const created = await createTrainer(options);
    if (mine !== generation) { created.dispose(); return; }
    trainer = created;
    sampleIndex = Math.min(sample, trainer.config.heldOut - 1);
    stepsPerChunk = 4;
    report({ reset: true });
    if (runTo > 0 || play) {
      stopAt = runTo > 0 ? runTo : Infinity;
      playing = true;
      schedule();
    }
  },
  play() {
    if (!trainer) return;
    stopAt = Infinity;
    playing = true;
    schedule();
  },
  pause() {
    if (!trainer) return;
    playing = false;
    stopAt = Infinity;
    report();
  },
  step({ count = 1 }) {
    if (!trainer) return;
    playing = false;
    trainChunk(count);
    report();
  },
  learningRate({ value }) {
    if (trainer) trainer.learningRate = value;
  },
  sample({ index }) {
    sampleIndex = index;
    if (trainer && !playing) report();
  },
};

self.onmessage = async ({ data }) => {
  try {
    await handlers[data.type](data);
  } catch (error) {
    playing = false;
    self.postMessage({ type: 'error', message: error.message });
  }
};
