// The shipped model format (".mhlm"): a trained Decoder and its Tokenizer in one little-endian file.
//   bytes 0–3  "MHLM"           u32 version (1)
//   u32 × 6    vocab, d_model, num_heads, layers, context, d_ff
//   u32        vocab_bytes, then the vocabulary: vocab pieces joined by '\n' (UTF-8)
//   u16 × total  the parameters in decoder_layout order, as IEEE half floats (fp16)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/half.h"
#include "nn/decoder.h"
#include "io/tokenizer.h"

namespace mh {

std::vector<uint8_t> save_model(const Decoder& model, const Tokenizer& tokenizer);

struct LoadedModel {
  std::unique_ptr<Decoder> decoder;
  std::unique_ptr<Tokenizer> tokenizer;
};
// "" and a model, or a message saying what is wrong with the bytes.
std::string load_model(LoadedModel& out, const uint8_t* bytes, size_t size);

}  // namespace mh
