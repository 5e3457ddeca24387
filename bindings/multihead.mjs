// multihead: multi-head attention in WebAssembly, and the models around it. This file only
// re-exports; each part of the API is a module of its own (docs/api.md):
//   runtime.mjs          loading the wasm build, threads, runtime facts
//   attention-layer.mjs  one multi-head attention layer with its own weights
//   language-model.mjs   the project's trained language model (.mhlm)
//   trainer.mjs          the toy-task trainer behind the playground
//   pretrained.mjs       Hugging Face checkpoints (hub.mjs: hub ids and file listings)
export { loadMultihead, oneThreadReason, relaxedSimdAvailable, runtimeInfo, setThreads, threadsAvailable } from './runtime.mjs';
export { MAX_TOKENS } from './checks.mjs';
export { createMultiHeadAttention, MultiHeadAttention } from './attention-layer.mjs';
export { loadLanguageModel, LanguageModel } from './language-model.mjs';
export { createTrainer, Trainer, TOY_TASKS } from './trainer.mjs';
export { loadPretrained, PretrainedModel, supportedModelTypes } from './pretrained.mjs';
export { EncoderDecoderModel } from './encoder-decoder.mjs';
export { readGgufMetadata } from './gguf.mjs';
export { ModelContext } from './model-context.mjs';
export { hubUrl, isHubId, listCheckpointFiles, resolveSource } from './hub.mjs';
export { Tokenizer, loadTokenizer } from './tokenizers/tokenizer.mjs';
export { tokenizerFromGguf } from './tokenizers/gguf.mjs';
