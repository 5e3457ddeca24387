// Tokenizer rules, the fp16 conversion and the .mhlm round trip, head metrics on hand-built cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "nn/decoder.h"
#include "interpret/head_metrics.h"
#include "io/model_file.h"
#include "io/tokenizer.h"

namespace {

std::vector<std::string> texts(const std::string& s) {
  std::vector<std::string> out;
  for (const mh::TextPiece& p : mh::split_text(s)) out.push_back(p.text);
  return out;
}

TEST(Tokenizer, SplitsWordsSuffixesPunctuationAndDashes) {
  using V = std::vector<std::string>;
  EXPECT_EQ(texts("Emma's sister don't--she _said_, \"No!\""),
            (V{"emma", "'s", "sister", "don", "'t", "--", "she", "said", ",", "\"", "no", "!", "\""}));
  // Curly quotes and the em dash (UTF-8) map to their ASCII forms; numbers are one piece.
  EXPECT_EQ(texts("\xE2\x80\x9CIt\xE2\x80\x99s 1811\xE2\x80\x94\xE2\x80\x9D"),
            (V{"\"", "it", "'s", "1811", "--", "\""}));
  // A quote that opens a word is punctuation, not a suffix; a lone dash stays "-".
  EXPECT_EQ(texts("'Tis well-known"), (V{"'", "tis", "well", "-", "known"}));
  EXPECT_TRUE(texts(" \n\t ").empty());
}

TEST(Tokenizer, ByteRangesPointIntoTheOriginalText) {
  const std::string s = "Caf\xC3\xA9 \xE2\x80\x9Cnoir\xE2\x80\x9D";
  const auto pieces = mh::split_text(s);
  ASSERT_EQ(pieces.size(), 4u);
  EXPECT_EQ(s.substr(pieces[0].begin, pieces[0].end - pieces[0].begin), "Caf\xC3\xA9");
  EXPECT_EQ(pieces[0].text, "caf\xC3\xA9");  // non-ASCII letters stay in the word
  EXPECT_EQ(s.substr(pieces[1].begin, pieces[1].end - pieces[1].begin), "\xE2\x80\x9C");
  EXPECT_EQ(pieces[2].text, "noir");
}

TEST(Tokenizer, VocabularyByFrequencyAndUnknownWords) {
  const auto vocab = mh::Tokenizer::build_vocab("b a b c b a d", 3);
  EXPECT_EQ(vocab, (std::vector<std::string>{"<unk>", "b", "a"}));
  const mh::Tokenizer t(vocab);
  EXPECT_EQ(t.encode("A b zebra"), (std::vector<int32_t>{2, 1, 0}));
}

TEST(Half, KnownEncodingsAndRounding) {
  // Hand-computed IEEE binary16 bit patterns.
  EXPECT_EQ(mh::float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(mh::float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(mh::float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(mh::float_to_half(1e6f), 0x7C00);             // overflow → +inf
  EXPECT_EQ(mh::float_to_half(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(mh::float_to_half(std::ldexp(1.0f, -26)), 0x0000);  // below half of it → 0
  EXPECT_EQ(mh::float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie → even
  EXPECT_EQ(mh::float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie → even (up)
  EXPECT_TRUE(std::isnan(mh::half_to_float(mh::float_to_half(NAN))));
  // Every finite half survives half → float → half.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00) continue;
    ASSERT_EQ(mh::float_to_half(mh::half_to_float(static_cast<uint16_t>(h))), h) << h;
  }
}

TEST(ModelFile, RoundTripAndCorruptFiles) {
  mh::DecoderConfig c;
  c.vocab = 5; c.d_model = 8; c.num_heads = 2; c.layers = 1; c.context = 6;
  mh::Decoder model(c);
  model.init(9);
  const mh::Tokenizer tok({"<unk>", "the", "cat", "'s", "."});
  const auto bytes = mh::save_model(model, tok);
  mh::LoadedModel loaded;
  ASSERT_EQ(mh::load_model(loaded, bytes.data(), bytes.size()), "");
  EXPECT_EQ(loaded.tokenizer->vocab(), tok.vocab());
  for (size_t i = 0; i < model.params().size(); ++i)  // fp16: 11 significant bits
    EXPECT_NEAR(loaded.decoder->params()[i], model.params()[i], std::fabs(model.params()[i]) * 1e-3 + 1e-7);
  auto bad = bytes;
  bad[0] = 'X';
  EXPECT_NE(mh::load_model(loaded, bad.data(), bad.size()).find("MHLM"), std::string::npos);
  EXPECT_NE(mh::load_model(loaded, bytes.data(), bytes.size() - 2).find("truncated"), std::string::npos);
  EXPECT_NE(mh::load_model(loaded, bytes.data(), 10), "");
}

TEST(HeadMetrics, RolesOfHandMadeScores) {
  EXPECT_EQ(mh::head_role({0.9f, 0.05f, 0.95f, 0.0f}), "previous token");
  EXPECT_EQ(mh::head_role({0.1f, 0.1f, 0.3f, 0.6f}), "induction");
  EXPECT_EQ(mh::head_role({0.1f, 0.7f, 0.2f, 0.0f}), "first token");
  EXPECT_EQ(mh::head_role({0.2f, 0.1f, 0.8f, 0.0f}), "local window");
  EXPECT_EQ(mh::head_role({0.2f, 0.2f, 0.3f, 0.1f}), "mixed");
}

TEST(HeadMetrics, ScoresOfAUniformHead) {
  // With W_Q = 0 and b_Q = 0 every score is 0, so the causal head attends uniformly:
  // A[i][j] = 1/(i+1). Hand-computed: first-token = previous-token = mean over i ≥ 1 of 1/(i+1).
  mh::DecoderConfig c;
  c.vocab = 7; c.d_model = 4; c.num_heads = 1; c.layers = 1; c.context = 8;
  mh::Decoder model(c);
  model.init(2);
  const auto& o = model.layout().layers[0];
  std::fill(model.params().begin() + o.wq, model.params().begin() + o.wq + 16, 0.0f);
  std::vector<int32_t> text(8, 3);
  const auto scores = mh::measure_heads(model, text.data(), 8, 8, 1, 1);
  double first = 0, prev = 0;
  for (int i = 1; i < 8; ++i) { first += 1.0 / (i + 1); prev += 1.0 / (i + 1); }
  EXPECT_NEAR(scores[0].first_token, first / 7, 1e-5);
  EXPECT_NEAR(scores[0].previous_token, prev / 7, 1e-5);
  // Induction on 4 + 4 random tokens: row 4 + k attends 1/(5 + k) to key k + 1.
  double induction = 0;
  for (int k = 0; k < 3; ++k) induction += 1.0 / (5 + k);
  EXPECT_NEAR(scores[0].induction, induction / 3, 1e-5);
}

}  // namespace
