// The Embind registration of the model half of pretrained checkpoints (embind_pretrained.h).
#include "embind_pretrained.h"

EMSCRIPTEN_BINDINGS(multihead_pretrained) {
  using bindings::PretrainedCore;
  emscripten::class_<PretrainedCore>("PretrainedCore")
      .constructor<>()
      .function("setConfig", &PretrainedCore::setConfig)
      .function("stage", &PretrainedCore::stage)
      .function("addShard", &PretrainedCore::addShard)
      .function("addGguf", &PretrainedCore::addGguf)
      .function("needsMore", &PretrainedCore::needsMore)
      .function("ggufMetadata", &PretrainedCore::ggufMetadata)
      .function("ggufConfig", &PretrainedCore::ggufConfig)
      .function("readGgufMetadata", &PretrainedCore::readGgufMetadata)
      .function("shardBytes", &PretrainedCore::shardBytes)
      .function("plan", &PretrainedCore::plan)
      .function("bytesNeeded", &PretrainedCore::bytesNeeded)
      .function("bytesAvailable", &PretrainedCore::bytesAvailable)
      .function("feed", &PretrainedCore::feed)
      .function("finish", &PretrainedCore::finish)
      .function("error", &PretrainedCore::error)
      .function("config", &PretrainedCore::config)
      .function("modelType", &PretrainedCore::modelType)
      .function("parameterCount", &PretrainedCore::parameterCount)
      .function("weightBytes", &PretrainedCore::weightBytes)
      .function("matrixType", &PretrainedCore::matrixType)
      .function("hookNames", &PretrainedCore::hookNames)
      .class_function("supportedModelTypes", &PretrainedCore::supportedModelTypes)
      .function("view", &PretrainedCore::view);
}
