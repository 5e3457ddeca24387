// The GGUF reader (io/gguf.h): the four fixture models (tests/fixtures/gguf, made by llama.cpp's
// tools; their expected.json lists every tensor), files written here with every metadata type, and
// hostile files — truncated anywhere, absurd counts and lengths, bad tensors — each of which must
// give an error that says what is wrong, never a crash (this file runs under ASan + UBSan too).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "gguf_support.h"
#include "io/gguf.h"
#include "io/json.h"

namespace {

using mh::gguf::File;
using test::GgufWriter;
namespace ggml = mh::ggml;

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::string fixture_path(const std::string& model, const std::string& file) {
  return std::string(MH_GGUF_FIXTURES_DIR) + "/" + model + "/" + file;
}

const char* const kFixtures[] = {"llama-q8_0", "qwen2-q4_0", "llama-q4_k_m", "gpt2-f16"};

std::string parse(const std::vector<uint8_t>& bytes, File& f) {
  return mh::gguf::parse_file(bytes.data(), bytes.size(), f);
}

// The error parsing `bytes` gives: asserts it is one and contains `what`.
void expect_error(const std::vector<uint8_t>& bytes, const std::string& what) {
  File f;
  const std::string e = parse(bytes, f);
  EXPECT_NE(e.find(what), std::string::npos) << "wanted \"" << what << "\", got \"" << e << "\"";
}

struct Tensor {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type;
  uint64_t offset;
};

// A file with two metadata entries (three with a non-default alignment), these tensor infos, and
// `data_bytes` of data after the aligned header.
std::vector<uint8_t> build(const std::vector<Tensor>& tensors, uint64_t data_bytes, uint64_t alignment = 32) {
  GgufWriter w;
  w.header(tensors.size(), alignment == 32 ? 2 : 3);
  w.key("general.architecture", 8);
  w.str("llama");
  w.key("tokenizer.ggml.tokens", 9);
  w.u32(8);
  w.u64(3);
  for (const char* s : {"a", "b", "<0x0A>"}) w.str(s);
  if (alignment != 32) {
    w.key("general.alignment", 4);
    w.u32(static_cast<uint32_t>(alignment));
  }
  for (const Tensor& t : tensors) w.tensor(t.name, t.ne, t.type, t.offset);
  w.pad(alignment);
  for (uint64_t i = 0; i < data_bytes; ++i) w.u8(static_cast<uint8_t>(i * 37 + 11));
  return w.bytes;
}

// F32 [8] (32 bytes), Q8_0 [32, 2] (68) and Q4_K [256] (144), each at the next aligned offset.
std::vector<uint8_t> small_file(uint64_t alignment = 32) {
  const uint64_t q8 = (32 + alignment - 1) / alignment * alignment;
  const uint64_t q4k = (q8 + 68 + alignment - 1) / alignment * alignment;
  return build({{"a", {8}, ggml::kF32, 0}, {"blk.0.b", {32, 2}, ggml::kQ8_0, q8}, {"c", {256}, ggml::kQ4_K, q4k}},
               q4k + 144, alignment);
}

TEST(Gguf, SmallFile) {
  for (uint64_t alignment : {32, 64, 1}) {
    const std::vector<uint8_t> bytes = small_file(alignment);
    File f;
    ASSERT_EQ(parse(bytes, f), "") << alignment;
    EXPECT_EQ(f.version, 3u);
    EXPECT_EQ(f.alignment, alignment);
    EXPECT_EQ(f.data_start % alignment, 0u);
    ASSERT_EQ(f.tensors.size(), 3u);
    const mh::gguf::TensorInfo* b = f.find("blk.0.b");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->n_dims, 2);
    EXPECT_EQ(b->ne[0], 32);
    EXPECT_EQ(b->ne[1], 2);
    EXPECT_EQ(b->ne[2], 1);
    EXPECT_EQ(b->elements(), 64);
    EXPECT_EQ(b->bytes, 68u);
    EXPECT_EQ(b->begin, f.data_start + b->offset);
    EXPECT_EQ(f.tensors[2].begin + 144, bytes.size());
    EXPECT_EQ(f.find("d"), nullptr);
    // The F32 tensor's bytes come back as they are.
    std::vector<float> out(8);
    ASSERT_EQ(mh::gguf::dequantize(f.tensors[0], bytes.data() + f.tensors[0].begin, out.data()), "");
    EXPECT_EQ(std::memcmp(out.data(), bytes.data() + f.tensors[0].begin, 32), 0);
  }
}

TEST(Gguf, EveryMetadataType) {
  GgufWriter w;
  w.header(0, 21, 2);
  w.key("u8", 0); w.u8(200);
  w.key("i8", 1); w.u8(0xFB);
  w.key("u16", 2); w.raw(60000, 2);
  w.key("i16", 3); w.raw(static_cast<uint16_t>(-30000), 2);
  w.key("u32", 4); w.u32(4000000000u);
  w.key("i32", 5); w.u32(static_cast<uint32_t>(-2000000000));
  w.key("f32", 6); w.f32(0.1f);
  w.key("bool", 7); w.u8(1);
  w.key("string", 8); w.str("h\xC3\xA9llo");
  w.key("u64", 10); w.u64(1ull << 40);
  w.key("u64.huge", 10); w.u64((1ull << 63) + 1);
  w.key("i64", 11); w.u64(static_cast<uint64_t>(-(1ll << 40)));
  w.key("f64", 12); w.f64(1e300);
  w.key("a.u8", 9); w.u32(0); w.u64(3); w.u8(1); w.u8(2); w.u8(255);
  w.key("a.i32", 9); w.u32(5); w.u64(2); w.u32(static_cast<uint32_t>(-7)); w.u32(9);
  w.key("a.f32", 9); w.u32(6); w.u64(2); w.f32(0.25f); w.f32(-1.5f);
  w.key("a.bool", 9); w.u32(7); w.u64(2); w.u8(0); w.u8(1);
  w.key("a.string", 9); w.u32(8); w.u64(2); w.str("x"); w.str("");
  w.key("a.u64", 9); w.u32(10); w.u64(2); w.u64(5); w.u64(~0ull);
  w.key("a.f64", 9); w.u32(12); w.u64(1); w.f64(-2.5);
  w.key("a.a.string", 9); w.u32(9); w.u64(2);
  w.u32(8); w.u64(2); w.str("a"); w.str("b");
  w.u32(8); w.u64(1); w.str("c");
  File f;
  ASSERT_EQ(parse(w.bytes, f), "");
  EXPECT_EQ(f.version, 2u);
  EXPECT_EQ(f.tensors.size(), 0u);
  const mh::gguf::Metadata& m = f.metadata;
  EXPECT_EQ(m.values().size(), 21u);
  int64_t i = 0;
  const std::pair<const char*, int64_t> ints[] = {{"u8", 200}, {"i8", -5}, {"u16", 60000}, {"i16", -30000},
      {"u32", 4000000000}, {"i32", -2000000000}, {"u64", 1ll << 40}, {"i64", -(1ll << 40)}};
  for (const auto& [key, want] : ints) {
    EXPECT_EQ(m.get_int(key, i), "") << key;
    EXPECT_EQ(i, want) << key;
  }
  EXPECT_NE(m.get_int("u64.huge", i).find("above 2^63"), std::string::npos);
  double x = 0;
  EXPECT_EQ(m.get_float("f32", x), "");
  EXPECT_EQ(x, static_cast<double>(0.1f));
  EXPECT_EQ(m.get_float("f64", x), "");
  EXPECT_EQ(x, 1e300);
  EXPECT_EQ(m.get_float("i16", x), "");
  EXPECT_EQ(x, -30000.0);
  bool b = false;
  EXPECT_EQ(m.get_bool("bool", b), "");
  EXPECT_TRUE(b);
  std::string s;
  EXPECT_EQ(m.get_string("string", s), "");
  EXPECT_EQ(s, "h\xC3\xA9llo");
  std::vector<int64_t> is;
  EXPECT_EQ(m.get_ints("a.u8", is), "");
  EXPECT_EQ(is, (std::vector<int64_t>{1, 2, 255}));
  EXPECT_EQ(m.get_ints("a.i32", is), "");
  EXPECT_EQ(is, (std::vector<int64_t>{-7, 9}));
  EXPECT_NE(m.get_ints("a.u64", is).find("above 2^63"), std::string::npos);
  std::vector<double> fs;
  EXPECT_EQ(m.get_floats("a.f32", fs), "");
  EXPECT_EQ(fs, (std::vector<double>{0.25, -1.5}));
  EXPECT_EQ(m.get_floats("a.f64", fs), "");
  EXPECT_EQ(fs, (std::vector<double>{-2.5}));
  EXPECT_EQ(m.get_floats("a.i32", fs), "");
  EXPECT_EQ(fs, (std::vector<double>{-7, 9}));
  std::vector<std::string> ss;
  EXPECT_EQ(m.get_strings("a.string", ss), "");
  EXPECT_EQ(ss, (std::vector<std::string>{"x", ""}));
  EXPECT_EQ(m.find("a.bool")->integers, (std::vector<int64_t>{0, 1}));
  const mh::gguf::Value* nested = m.find("a.a.string");
  ASSERT_NE(nested, nullptr);
  EXPECT_EQ(nested->element, mh::gguf::ValueType::kArray);
  ASSERT_EQ(nested->size(), 2u);
  EXPECT_EQ(nested->arrays[0].strings, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(nested->arrays[1].strings, (std::vector<std::string>{"c"}));
  // Missing: an error when required, else the default stays. Another type: always an error.
  EXPECT_EQ(m.get_int("nope", i), "GGUF metadata key \"nope\" is missing");
  i = 42;
  EXPECT_EQ(m.get_int("nope", i, false), "");
  EXPECT_EQ(i, 42);
  EXPECT_EQ(m.get_int("string", i, false), "GGUF metadata key \"string\" is a string, not an integer");
  EXPECT_EQ(m.get_strings("a.i32", ss), "GGUF metadata key \"a.i32\" is an array of int32, not an array of strings");
  EXPECT_NE(m.get_string("a.string", s), "");
  EXPECT_NE(m.get_bool("u8", b), "");
  EXPECT_NE(m.get_float("string", x), "");
  EXPECT_NE(m.get_ints("a.f32", is), "");
  EXPECT_NE(m.get_floats("a.string", fs), "");
}

TEST(Gguf, HostileHeaders) {
  auto header_only = [](uint64_t tensors, uint64_t kvs, uint32_t version = 3) {
    GgufWriter w;
    w.header(tensors, kvs, version);
    for (int i = 0; i < 64; ++i) w.u8(0);
    return w.bytes;
  };
  expect_error({}, "fewer than a GGUF header");
  expect_error({'G', 'G', 'U'}, "fewer than a GGUF header");
  expect_error({'G', 'G', 'M', 'L', 0, 0, 0, 0}, "not a GGUF file: it starts with bytes 47 47 4d 4c");
  expect_error(header_only(0, 0, 1), "version 1 is not supported");
  expect_error(header_only(0, 0, 4), "version 4 is not supported");
  expect_error(header_only(0, 0, 0x03000000), "big-endian");
  expect_error(header_only(0, 0, 0), "version 0 is not supported");
  expect_error(header_only(1ull << 60, 0), "claims 1152921504606846976 entries for tensor infos");
  expect_error(header_only(0, 1ull << 60), "entries for metadata entries");
  expect_error(header_only(0, ~0ull), "claims");
  auto one_entry = [](uint32_t type, std::initializer_list<uint64_t> u64s, uint32_t array_type = 0) {
    GgufWriter w;
    w.header(0, 1);
    w.key("k", type);
    if (type == 9) w.u32(array_type);
    for (uint64_t v : u64s) w.u64(v);
    for (int i = 0; i < 24; ++i) w.u8(0);
    return w.bytes;
  };
  expect_error(one_entry(8, {1ull << 40}), "metadata key \"k\" claims 1099511627776 bytes for a string");
  expect_error(one_entry(9, {1ull << 40}, 0), "claims 1099511627776 entries for an array");
  expect_error(one_entry(9, {1ull << 61}, 8), "entries for an array");
  expect_error(one_entry(9, {~0ull}, 12), "entries for an array");
  expect_error(one_entry(13, {}), "unknown value type 13");
  expect_error(one_entry(9, {1}, 77), "array of unknown value type 77");
  {  // 40 M uint8 values are in the file, but would take 320 MB as the reader keeps them
    GgufWriter w;
    w.header(0, 1);
    w.key("k", 9);
    w.u32(0);
    w.u64(40u << 20);
    w.bytes.resize(w.bytes.size() + (40u << 20));
    expect_error(w.bytes, "its header would take more than 256 MiB of memory (at metadata key \"k\")");
  }
  {  // arrays of arrays of … five deep
    GgufWriter w;
    w.header(0, 1);
    w.key("k", 9);
    for (int i = 0; i < 5; ++i) w.u32(9), w.u64(1);
    w.u32(0);
    w.u64(0);
    expect_error(w.bytes, "nests arrays more than");
  }
  {
    GgufWriter w;
    w.header(0, 2);
    w.key("k", 7); w.u8(1);
    w.key("k", 7); w.u8(0);
    expect_error(w.bytes, "metadata key \"k\" appears twice");
  }
  {
    GgufWriter w;
    w.header(0, 1);
    w.key("", 7); w.u8(1);
    expect_error(w.bytes, "empty key");
  }
  for (uint32_t alignment : {0u, 48u}) {
    GgufWriter w;
    w.header(0, 1);
    w.key("general.alignment", 4);
    w.u32(alignment);
    expect_error(w.bytes, "general.alignment is not a positive power of two");
  }
  {
    GgufWriter w;
    w.header(0, 1);
    w.key("general.alignment", 8);
    w.str("32");
    expect_error(w.bytes, "general.alignment");
  }
}

TEST(Gguf, HostileTensors) {
  expect_error(build({{"t", {1, 1, 1, 1, 1}, ggml::kF32, 0}}, 64), "tensor \"t\" has 5 dimensions; GGUF allows at most 4");
  expect_error(build({{"t", {4, 0}, ggml::kF32, 0}}, 64), "tensor \"t\" has a dimension of size 0");
  expect_error(build({{"t", {1ull << 32, 1ull << 32}, ggml::kF32, 0}}, 64), "more elements than a 64-bit count");
  expect_error(build({{"t", {1ull << 62, 2}, ggml::kF32, 0}}, 64), "more elements than a 64-bit count");
  expect_error(build({{"t", {1ull << 61, 2}, ggml::kF32, 0}}, 64), "absurd size");
  expect_error(build({{"t", {~0ull}, ggml::kF32, 0}}, 64), "more elements");
  expect_error(build({{"t", {1ull << 40}, ggml::kF32, 0}}, 64), "runs past the end of the file");
  expect_error(build({{"blk.0.attn_q.weight", {32}, 99, 0}}, 64),
               "tensor \"blk.0.attn_q.weight\" has ggml type 99, which this reader does not know");
  expect_error(build({{"t", {32}, 31, 0}}, 64), "ggml type 31");
  expect_error(build({{"t", {33, 2}, ggml::kQ8_0, 0}}, 128), "rows of 33 elements, not a whole number of Q8_0's 32-element blocks");
  expect_error(build({{"t", {8}, ggml::kF32, 0}}, 16), "it is truncated");
  expect_error(build({{"t", {8}, ggml::kF32, 1ull << 62}}, 64), "runs past the end of the file");
  expect_error(build({{"t", {8}, ggml::kF32, ~0ull - 31}}, 64), "runs past the end of the file");
  expect_error(build({{"t", {8}, ggml::kF32, 16}}, 64), "tensor \"t\" is at offset 16, not a multiple of the alignment (32)");
  expect_error(build({{"a", {16}, ggml::kF32, 0}, {"b", {8}, ggml::kF32, 32}}, 128), "tensors \"a\" and \"b\" overlap");
  expect_error(build({{"a", {8}, ggml::kF32, 32}, {"b", {8}, ggml::kF32, 32}}, 128), "overlap");
  expect_error(build({{"a", {8}, ggml::kF32, 0}, {"a", {8}, ggml::kF32, 32}}, 128), "two tensors are named \"a\"");
  // A type the reader knows but cannot dequantize parses; dequantizing it names the tensor.
  const std::vector<uint8_t> q2k = build({{"blk.0.attn_q.weight", {256}, ggml::kQ2_K, 0}}, 84);
  File f;
  ASSERT_EQ(parse(q2k, f), "");
  std::vector<float> out(256);
  EXPECT_EQ(mh::gguf::dequantize(f.tensors[0], q2k.data() + f.tensors[0].begin, out.data()),
            "GGUF tensor blk.0.attn_q.weight has type Q2_K, which is not supported (supported: " +
                ggml::supported_types() + ")");
}

// Every prefix of a file is refused, saying it is truncated; a prefix that holds the whole header
// parses when the whole file's size is given, and a shorter one asks for more (checked at every
// 7th length: the messages differ, the path through the header is the same).
void check_prefixes(const std::vector<uint8_t>& bytes, uint64_t header_end, uint64_t stride) {
  File f;
  for (uint64_t n = 0; n < bytes.size(); n += n < header_end + 64 ? 1 : stride) {
    const std::string e = mh::gguf::parse_file(bytes.data(), n, f);
    ASSERT_NE(e, "") << n;
    if (n % 7 != 0 && n != header_end && n + 1 != header_end) continue;
    const std::string from_prefix = mh::gguf::parse(bytes.data(), n, bytes.size(), f);
    if (n >= header_end) ASSERT_EQ(from_prefix, "") << n;
    else if (n >= 24) ASSERT_NE(from_prefix.find("pass more of the file"), std::string::npos) << n << ": " << from_prefix;
  }
}

// Where the tensor infos end: the shortest prefix that parses given the whole file's size (the
// padding before the data section is not needed).
uint64_t header_end(const std::vector<uint8_t>& bytes) {
  File f;
  EXPECT_EQ(parse(bytes, f), "");
  uint64_t n = f.data_start;
  while (n > 0 && mh::gguf::parse(bytes.data(), n - 1, bytes.size(), f).empty()) --n;
  return n;
}

TEST(Gguf, EveryTruncation) {
  const std::vector<uint8_t> bytes = small_file();
  check_prefixes(bytes, header_end(bytes), 1);
  // A fixture: every length through its header (28 KB of vocabulary), then a stride through its data.
  const std::vector<uint8_t> model = read_bytes(fixture_path("gpt2-f16", "model.gguf"));
  check_prefixes(model, header_end(model), 4099);
}

// The fuzzer's seeds (written by tests/fuzz/make-gguf-corpus.mjs, a writer independent of this one).
TEST(Gguf, FuzzSeedsParse) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(MH_GGUF_CORPUS_DIR)) {
    const std::vector<uint8_t> bytes = read_bytes(entry.path().string());
    File f;
    EXPECT_EQ(parse(bytes, f), "") << entry.path();
    for (const mh::gguf::TensorInfo& t : f.tensors) {
      std::vector<float> out(static_cast<size_t>(t.elements()));
      EXPECT_EQ(mh::gguf::dequantize(t, bytes.data() + t.begin, out.data()).empty(), t.type != ggml::kQ2_K) << t.name;
    }
    ++files;
  }
  EXPECT_GE(files, 6);
}

TEST(GgufFixtures, HeadersMatchExpected) {
  for (const char* name : kFixtures) {
    SCOPED_TRACE(name);
    const std::vector<uint8_t> bytes = read_bytes(fixture_path(name, "model.gguf"));
    const std::vector<uint8_t> text = read_bytes(fixture_path(name, "expected.json"));
    ASSERT_FALSE(bytes.empty());
    mh::json::Value expected;
    ASSERT_EQ(mh::json::parse(reinterpret_cast<const char*>(text.data()), text.size(), expected), "");
    File f;
    ASSERT_EQ(parse(bytes, f), "");
    EXPECT_EQ(f.version, expected.find("gguf_version")->number);
    EXPECT_EQ(f.alignment, expected.find("alignment")->number);
    EXPECT_EQ(f.data_start % 32, 0u);
    const mh::json::Value& tensors = *expected.find("tensors");
    ASSERT_EQ(f.tensors.size(), tensors.object.size());
    for (const auto& [tname, want] : tensors.object) {
      const mh::gguf::TensorInfo* t = f.find(tname);
      ASSERT_NE(t, nullptr) << tname;
      EXPECT_EQ(ggml::type_name(t->type), want.find("type")->string) << tname;
      const std::vector<mh::json::Value>& ne = want.find("ne")->array;
      ASSERT_EQ(t->n_dims, static_cast<int>(ne.size())) << tname;
      for (size_t d = 0; d < ne.size(); ++d) EXPECT_EQ(t->ne[d], ne[d].number) << tname;
    }
    const mh::gguf::Metadata& m = f.metadata;
    std::string architecture, model;
    int64_t file_type = -1;
    EXPECT_EQ(m.get_string("general.architecture", architecture), "");
    EXPECT_EQ(architecture, expected.find("architecture")->string);
    EXPECT_EQ(m.get_int("general.file_type", file_type), "");
    EXPECT_EQ(file_type, expected.find("file_type")->number);
    // The vocabulary: one token (and token type) per row of token_embd; SentencePiece scores for
    // llama, byte-level BPE merges for the others.
    std::vector<std::string> tokens, merges;
    std::vector<int64_t> token_types;
    std::vector<double> scores;
    EXPECT_EQ(m.get_strings("tokenizer.ggml.tokens", tokens), "");
    EXPECT_EQ(static_cast<int64_t>(tokens.size()), f.find("token_embd.weight")->ne[1]);
    EXPECT_EQ(m.get_ints("tokenizer.ggml.token_type", token_types), "");
    EXPECT_EQ(token_types.size(), tokens.size());
    EXPECT_EQ(m.get_string("tokenizer.ggml.model", model), "");
    if (architecture == "llama") {
      EXPECT_EQ(model, "llama");
      EXPECT_EQ(m.get_floats("tokenizer.ggml.scores", scores), "");
      EXPECT_EQ(scores.size(), tokens.size());
      EXPECT_EQ(tokens[1], "<s>");
      bool add_bos = false;
      EXPECT_EQ(m.get_bool("tokenizer.ggml.add_bos_token", add_bos), "");
      EXPECT_TRUE(add_bos);
      int64_t vocab = 0;
      EXPECT_EQ(m.get_int("llama.vocab_size", vocab), "");
      EXPECT_EQ(vocab, static_cast<int64_t>(tokens.size()));
    } else {
      EXPECT_EQ(model, "gpt2");
      EXPECT_EQ(m.get_strings("tokenizer.ggml.merges", merges), "");
      EXPECT_EQ(merges.size(), 743u);
      EXPECT_EQ(merges[0], "h e");
      EXPECT_EQ(tokens[0], "<|endoftext|>");
    }
    int64_t layers = 0;
    EXPECT_EQ(m.get_int(architecture + ".block_count", layers), "");
    EXPECT_TRUE(f.find("blk." + std::to_string(layers - 1) + ".attn_norm.weight"));
  }
}

// One tensor of each type in each fixture, dequantized whole; its first, middle and last blocks
// recomputed by the test's own decoder, bit for bit.
TEST(GgufFixtures, RealTensorsDequantize) {
  int checked = 0;
  for (const char* name : kFixtures) {
    const std::vector<uint8_t> bytes = read_bytes(fixture_path(name, "model.gguf"));
    File f;
    ASSERT_EQ(parse(bytes, f), "");
    std::vector<uint32_t> seen;
    for (const mh::gguf::TensorInfo& t : f.tensors) {
      if (std::find(seen.begin(), seen.end(), t.type) != seen.end()) continue;
      seen.push_back(t.type);
      SCOPED_TRACE(std::string(name) + " " + t.name);
      std::vector<float> out(static_cast<size_t>(t.elements()));
      const uint8_t* data = bytes.data() + t.begin;
      ASSERT_EQ(mh::gguf::dequantize(t, data, out.data()), "");
      const ggml::TypeInfo& info = *ggml::type_info(t.type);
      const int64_t blocks = t.elements() / info.block;
      for (int64_t block : {int64_t{0}, blocks / 2, blocks - 1})
        for (int64_t e = 0; e < info.block; ++e) {
          const int64_t i = block * info.block + e;
          const float want = static_cast<float>(test::reference_element(t.type, data + block * info.bytes, static_cast<int>(e)));
          ASSERT_EQ(std::memcmp(&out[i], &want, 4), 0) << "element " << i << ": " << out[i] << " vs " << want;
        }
      for (float v : out) ASSERT_TRUE(std::isfinite(v));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 10);  // F32 in all four; Q8_0; Q4_0, Q6_K; Q4_K, Q6_K; F16
}

}  // namespace
