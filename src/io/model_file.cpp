#include "io/model_file.h"

#include <cmath>
#include <cstring>

namespace mh {

namespace {
void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
uint32_t get_u32(const uint8_t* p) {
  return p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
}  // namespace

std::vector<uint8_t> save_model(const Decoder& model, const Tokenizer& tokenizer) {
  const DecoderConfig& c = model.config();
  std::vector<uint8_t> out{'M', 'H', 'L', 'M'};
  put_u32(out, 1);
  for (int v : {c.vocab, c.d_model, c.num_heads, c.layers, c.context, c.d_ff}) put_u32(out, v);
  std::string joined;
  for (int i = 0; i < tokenizer.size(); ++i) joined += (i ? "\n" : "") + tokenizer.piece(i);
  put_u32(out, static_cast<uint32_t>(joined.size()));
  out.insert(out.end(), joined.begin(), joined.end());
  for (float w : model.params()) {
    const uint16_t h = float_to_half(w);
    out.push_back(static_cast<uint8_t>(h));
    out.push_back(static_cast<uint8_t>(h >> 8));
  }
  return out;
}

std::string load_model(LoadedModel& out, const uint8_t* bytes, size_t size) {
  constexpr size_t kHeader = 4 + 4 + 6 * 4 + 4;
  if (size < kHeader || std::memcmp(bytes, "MHLM", 4) != 0)
    return "not a multihead model file (.mhlm): it does not start with \"MHLM\"";
  if (get_u32(bytes + 4) != 1) return "unsupported .mhlm version (this build reads version 1)";
  DecoderConfig c;
  int* fields[] = {&c.vocab, &c.d_model, &c.num_heads, &c.layers, &c.context, &c.d_ff};
  for (int i = 0; i < 6; ++i) {
    const uint32_t v = get_u32(bytes + 8 + 4 * i);
    if (v > 1u << 20) return "corrupt .mhlm header: a size is out of range";
    *fields[i] = static_cast<int>(v);
  }
  const std::string problem = validate_decoder_config(c);
  if (!problem.empty()) return "corrupt .mhlm header: " + problem;
  const uint32_t vocab_bytes = get_u32(bytes + 32);
  if (vocab_bytes > size - kHeader) return "truncated .mhlm file (vocabulary)";
  std::vector<std::string> vocab(1);
  for (uint32_t i = 0; i < vocab_bytes; ++i) {
    const char ch = static_cast<char>(bytes[kHeader + i]);
    if (ch == '\n') vocab.emplace_back(); else vocab.back() += ch;
  }
  if (static_cast<int>(vocab.size()) != c.vocab || vocab[0] != "<unk>")
    return "corrupt .mhlm file: the vocabulary does not match the header";
  auto decoder = std::make_unique<Decoder>(c, /*initialise=*/false);
  const int64_t total = decoder->layout().total;
  const uint8_t* w = bytes + kHeader + vocab_bytes;
  if (size - kHeader - vocab_bytes != static_cast<size_t>(total) * 2)
    return "truncated or oversized .mhlm file: parameters do not match the header";
  std::vector<float>& params = decoder->params();
  for (int64_t i = 0; i < total; ++i) {
    params[i] = half_to_float(static_cast<uint16_t>(w[2 * i] | (w[2 * i + 1] << 8)));
    if (!std::isfinite(params[i])) return "corrupt .mhlm file: a parameter is not finite";
  }
  out.decoder = std::move(decoder);
  out.tokenizer = std::make_unique<Tokenizer>(std::move(vocab));
  return "";
}

}  // namespace mh
