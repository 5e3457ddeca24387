// Compiled with tsc --noEmit by the test command: the published types must describe the API.
import {
  createMultiHeadAttention, createTrainer, loadMultihead, runtimeInfo, setThreads, threadsAvailable, loadLanguageModel, TOY_TASKS, type ForwardResult, type HeadTrace, type LanguageModel,
  type LanguageModelRun, type Trainer, type TrainerSample, loadPretrained, readGgufMetadata, tokenizerFromGguf, type PretrainedModel, type PretrainedRun, type EncoderDecoderModel, type EncoderDecoderRun, type LogitLens,
  type Encoding, type LoadProgress, supportedModelTypes, type ModelContext, type Activation, type PixelValues,
} from 'multihead';

async function main(): Promise<void> {
  await loadMultihead({ threads: threadsAvailable() ? 'auto' : 1 });
  const threads: number = (await runtimeInfo()).threads + (await setThreads(1));
  void threads;
  // @ts-expect-error: threads is 'auto' or a number
  await loadMultihead({ threads: 'many' });
  const mha = await createMultiHeadAttention({ dModel: 64, heads: 8, kvHeads: 2, seed: 1 });
  const x = new Float32Array(5 * 64);
  const result: ForwardResult = mha.forward(x, { causal: true, returnAttention: true });
  const weights: Float32Array | undefined = result.attentions;
  const trace: HeadTrace = mha.trace(x, { head: 1, keyPaddingMask: new Uint8Array(5) });
  const cross = mha.forwardCross(x, new Float32Array(7 * 64), { mask: new Float32Array(35) });
  mha.setWeights({ wq: mha.getWeights().wq });
  const count: number = mha.parameterCount + mha.config.headDim + trace.scores.length + cross.output.length;
  void weights; void count;
  // @ts-expect-error: forward needs an array
  mha.forward('text');
  mha.dispose();

  const model: LanguageModel = await loadLanguageModel(new Uint8Array(0));
  const { ids, pieces } = model.tokenize('It is a truth');
  const run: LanguageModelRun = model.run(ids, { disabledHeads: [[0, 1]] });
  const best = model.topPredictions(run, ids.length - 1, 3)[0];
  const shown: string = `${pieces[0].text} ${best.token} ${best.probability} ${model.config.maxPositions}`;
  void shown;
  // @ts-expect-error: heads are [layer, head] pairs
  model.run(ids, { disabledHeads: [1] });
  model.dispose();

  const trainer: Trainer = await createTrainer({ task: 'balanced-key', layers: 1, heads: 2 });
  const losses: Float32Array = trainer.train(10);
  const { accuracy } = trainer.evaluate();
  const sample: TrainerSample = trainer.sample(0);
  trainer.learningRate = 1e-3;
  const summary: string = `${losses[0]} ${accuracy} ${sample.tokens.join(' ')} ${trainer.steps} ${TOY_TASKS[0]}`;
  void summary;
  // @ts-expect-error: not a task
  await createTrainer({ task: 'translate' });
  trainer.dispose();

  const controller = new AbortController();
  const gpt2: PretrainedModel = await loadPretrained('https://example.invalid/gpt2/resolve/main/', {
    onProgress: (p: LoadProgress) => void (p.loaded / p.total),
    signal: controller.signal,
  });
  const enc: Encoding = gpt2.tokenize('Hello world', 'a pair');
  const out: PretrainedRun = gpt2.run(enc.ids, { tokenTypeIds: enc.tokenTypeIds, attentions: { layers: [0], heads: [1, 2] }, valueNorms: true });
  const logits: Float32Array | null = out.logits;
  const [layersShown, headsShown, rows, cols] = out.attentionShape;
  void [logits, layersShown, headsShown, rows, cols, gpt2.config.kvHeads, gpt2.decode(enc.ids)];
  for await (const step of gpt2.generate(enc.ids, { maxNewTokens: 4, temperature: 0.8, topK: 40, seed: 1 })) {
    const row: Float32Array = step.attentions;
    void [row, step.text, step.id];
  }
  // @ts-expect-error: layers is a list of layer indices
  gpt2.run(enc.ids, { attentions: { layers: 'all' } });
  await loadPretrained(new Map([['config.json', new Uint8Array(0)]]));
  // One GGUF file: a hub repository's file, the bytes, a File; its metadata alone.
  await loadPretrained('Qwen/Qwen2.5-0.5B-Instruct-GGUF', { file: 'qwen2.5-0.5b-instruct-q4_k_m.gguf' });
  await loadPretrained(new Uint8Array(0));
  await loadPretrained(new File([], 'model.gguf'));
  const ggufMetadata: Record<string, unknown> = await readGgufMetadata(new Uint8Array(0), 1024);
  const ggufTokenizer = tokenizerFromGguf(ggufMetadata);
  const ends: readonly number[] = ggufTokenizer.eosIds;
  void [ends, ggufTokenizer.bosId, ggufTokenizer.encode('text').ids];
  // An encoder-decoder: named as loadPretrained's type argument.
  const t5 = await loadPretrained<EncoderDecoderModel>('t5-small');
  const isEncoderDecoder: true = t5.config.encoderDecoder;
  const source = t5.tokenize('translate English to German: Hello');
  const seq2seq: EncoderDecoderRun = t5.run(source.ids, { decoderInputIds: t5.tokenizeTarget('Hallo').ids });
  const crossAttentions: Float32Array | null = seq2seq.crossAttentions;
  void [isEncoderDecoder, crossAttentions, seq2seq.crossAttentionShape[3], t5.config.decoderStartTokenId];
  const decoderInputIds = [t5.config.decoderStartTokenId ?? 0];
  const decoderLens: LogitLens = t5.logitLens(source.ids, { decoderInputIds, topK: 3 });
  const crossHeads: Float64Array = t5.attribute(source.ids, { decoderInputIds, target: 5 }).crossHeads;
  void [decoderLens.shape, crossHeads];
  const names: string[] = t5.hookNames();
  const captured = t5.run(source.ids, { decoderInputIds: [0], capture: ['decoder.blocks.*.cross_attn.hook_pattern'] }).activations;
  void [names, captured?.['decoder.blocks.0.cross_attn.hook_pattern']?.shape];
  for await (const step of t5.generate(source.ids, { maxNewTokens: 8, minNewTokens: 2 })) void [step.crossAttention, step.text];
  // @ts-expect-error: run() of an encoder-decoder needs decoderInputIds
  t5.run(source.ids, {});
  t5.dispose();
  gpt2.dispose();
}
void main;

// The interpretability methods (docs/api.md, "Why this prediction").
export async function interpret(model: PretrainedModel, ids: number[]) {
  const lens = model.logitLens(ids, { topK: 3, positions: [ids.length - 1], targets: [5] });
  const top: number = lens.ids[0];
  const attribution = model.attribute(ids, { target: 5, contrast: 7 });
  const head: number = attribution.heads[0] + attribution.total + attribution.normBias;
  const patched = await model.patch(ids, ids.slice().reverse(), { target: 5, what: 'residual', onProgress: ({ done }) => done });
  const recovered: number = patched.recovered[0];
  const { contributions } = model.contributions(ids);
  return top + head + recovered + contributions[0];
}

// Named activations and run contexts (docs/hooks.md).
export async function hooks(model: PretrainedModel, ids: number[]) {
  const types: string[] = await supportedModelTypes();
  const names: string[] = model.hookNames();
  const out = model.run(ids, {
    capture: ['blocks.*.hook_resid_post'],
    intervene: {
      'blocks.0.attn.hook_z': (a: Activation) => { a.data.fill(0); },
      'blocks.1.hook_resid_mid': { positions: [0], values: new Float32Array(model.config.dModel) },
    },
  });
  const first: Float32Array | undefined = out.activations?.['blocks.0.hook_resid_post'].data;
  const context: ModelContext = model.createContext();
  const again: PretrainedRun = context.run(ids, { logits: [ids.length - 1], reusePrefix: true });
  context.dispose();
  const kind: string = model.config.modelType;
  // @ts-expect-error: capture takes a list of names
  model.run(ids, { capture: 'hook_embed' });
  return [types, names, first, again, kind];
}

// Image models (docs/models.md, "Image models").
export async function vision(model: PretrainedModel, bitmap: ImageBitmap) {
  const { pixelValues, height, width }: PixelValues = await model.preprocess({ data: new Uint8ClampedArray(4), width: 1, height: 1 });
  const out: PretrainedRun = model.run(pixelValues, { height, width, hiddenStates: true });
  const grid: { rows: number; cols: number } | undefined = out.patchGrid;
  const labels: readonly string[] | null | undefined = model.config.labels;
  await model.preprocess(bitmap);
  void [grid, labels, model.patchGrid, model.config.imageSize];
  // @ts-expect-error: an image run needs the image's height and width
  model.run(pixelValues, {});
}
