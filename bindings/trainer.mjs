// multihead: the JavaScript API over the toy-task trainer (bindings/embind_trainer.cpp), which the
// playground drives from a Web Worker. This file only checks and marshals; the
// tasks, the model, the backward pass and Adam are C++ (src/training/toy_tasks.h, src/training/toy_trainer.h).
import { fail } from './checks.mjs';
import { withOldNames } from './deprecated.mjs';
import { release, track } from './registry.mjs';
import { loadMultihead } from './runtime.mjs';

/** The toy tasks, in the core's order (src/training/toy_tasks.h). */
export const TOY_TASKS = Object.freeze(['copy', 'reverse', 'sort', 'previous-token', 'balanced-key']);

const DEFAULTS = Object.freeze({ task: 'copy', layers: 2, heads: 4, dModel: 32, learningRate: 3e-3, seed: 1, batch: 32 });
const MAX_STEPS_PER_CALL = 100000;

function integer(name, value) {
  if (!Number.isInteger(value)) fail(`${name} must be an integer, got ${value}`);
  return value;
}

/**
 * A tiny attention-only decoder and its training on one toy task, seeded: the same settings give
 * the same weights, batches and losses on every run.
 * @param {{ task?: string, layers?: number, heads?: number, dModel?: number, learningRate?: number,
 *           seed?: number, batch?: number }} [options]
 * @returns {Promise<Trainer>}
 */
export async function createTrainer(options = {}) {
  if (options === null || typeof options !== 'object') fail('createTrainer takes an options object');
  for (const key of Object.keys(options)) {
    if (!(key in DEFAULTS)) fail(`unknown option "${key}" (options: ${Object.keys(DEFAULTS).join(', ')})`);
  }
  const settings = { ...DEFAULTS, ...options };
  const task = TOY_TASKS.indexOf(settings.task);
  if (task < 0) fail(`task must be one of ${TOY_TASKS.join(', ')}; got ${JSON.stringify(settings.task)}`);
  for (const name of ['layers', 'heads', 'dModel', 'batch']) integer(name, settings[name]);
  if (!Number.isSafeInteger(settings.seed) || settings.seed < 0) fail(`seed must be a non-negative integer, got ${settings.seed}`);
  if (typeof settings.learningRate !== 'number' || !Number.isFinite(settings.learningRate)) {
    fail(`learningRate must be a finite number, got ${settings.learningRate}`);
  }
  const core = await loadMultihead();
  const trainer = new core.Trainer();
  const error = trainer.configure(task, settings.layers, settings.heads, settings.dModel,
    settings.learningRate, settings.seed, settings.batch);
  if (error) {
    trainer.delete();
    fail(error);
  }
  return new Trainer(core, trainer, settings);
}

export class Trainer {
  #core;
  #trainer;
  #learningRate;

  /** @private Use createTrainer(). */
  constructor(core, trainer, settings) {
    this.#core = core;
    this.#trainer = trainer;
    this.#learningRate = settings.learningRate;
    const config = { ...settings, ...trainer.shape(), parameterCount: trainer.parameterCount() };
    this.config = Object.freeze(withOldNames(config, { vocab: 'vocabSize' }));
    this.vocabulary = Object.freeze(Array.from({ length: this.config.vocabSize }, (_, id) => core.toyTokenName(id)));
    track(this, trainer);
  }

  #live() {
    if (!this.#trainer) fail('this Trainer was disposed; create another with createTrainer()');
    return this.#trainer;
  }

  /** Adam steps taken so far. */
  get steps() {
    return this.#live().steps();
  }

  /** The learning rate of the next steps (Adam's moments are kept when it changes). */
  get learningRate() {
    return this.#learningRate;
  }

  set learningRate(value) {
    if (typeof value !== 'number' || !(value > 0 && value <= 1)) fail(`learningRate must be in (0, 1], got ${value}`);
    this.#live().setLearningRate(value);
    this.#learningRate = value;
  }

  /**
   * Takes `count` Adam steps, each on a fresh batch.
   * @returns {Float32Array} each step's training loss (nats per scored token, before its update)
   */
  train(count = 1) {
    integer('count', count);
    if (count < 1 || count > MAX_STEPS_PER_CALL) fail(`count must be from 1 to ${MAX_STEPS_PER_CALL}, got ${count}`);
    const trainer = this.#live();
    const error = trainer.train(count);
    const losses = trainer.view('losses').slice();
    if (error) fail(error);
    return losses;
  }

  /** Loss and accuracy (fraction of answer tokens predicted right) on the held-out sequences. */
  evaluate() {
    const trainer = this.#live();
    const error = trainer.evaluate();
    if (error) fail(error);
    return { loss: trainer.evaluation(0), accuracy: trainer.evaluation(1) };
  }

  /**
   * Runs held-out sequence `index` through the model as it is now.
   * @returns {{ ids: Int32Array, tokens: string[], targets: Int32Array, features: Float32Array,
   *   attentions: Float32Array, probabilities: Float32Array }} attentions: layers × heads × seq × seq;
   *   probabilities: seq × vocabSize (next token after each position); targets −1 where not scored;
   *   features: seq × config.features (the balanced-key criteria; empty for other tasks)
   */
  sample(index = 0) {
    integer('index', index);
    if (index < 0 || index >= this.config.heldOut) fail(`index must be from 0 to ${this.config.heldOut - 1}, got ${index}`);
    const trainer = this.#live();
    const error = trainer.sample(index);
    if (error) fail(error);
    const ids = trainer.view('tokens').slice();
    const attentions = trainer.view('attentions').slice();
    return {
      ids,
      tokens: Array.from(ids, (id) => this.vocabulary[id]),
      targets: trainer.view('targets').slice(),
      features: trainer.view('features').slice(),
      attentions,
      probabilities: trainer.view('probabilities').slice(),
      attention: attentions,  // the 0.1 name (deprecated): the same array
    };
  }

  /** Frees the trainer's wasm memory now. */
  dispose() {
    if (!this.#trainer) return;
    release(this, this.#trainer);
    this.#trainer = null;
  }
}
