// Word-level tokenizer shared by training (native) and the page (wasm): the same C++ splits the
// text in both, so the browser sees exactly the tokens the model was trained on.
//
// Splitting: ASCII letters are lowercased; a run of letters is a word, except that an apostrophe
// between letters starts a new piece ("don't" → "don" "'t", "Emma's" → "emma" "'s"); a run of digits
// is a number; a run of two or more dashes (or an em dash) is "--"; any other non-space character is
// a piece of its own. Underscores (Project Gutenberg's italics) and whitespace are dropped. Curly
// quotes become straight ones. Other non-ASCII letters stay inside their word (which is then
// usually unknown). A piece not in the vocabulary becomes id 0, "<unk>", and keeps its text.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace mh {

struct TextPiece {
  std::string text;   // normalised (lowercase) form, what the vocabulary holds
  int32_t begin, end;  // byte range in the original UTF-8 text
};

// The pieces of text, in order (see above).
std::vector<TextPiece> split_text(const std::string& text);

class Tokenizer {
 public:
  static constexpr int32_t kUnknown = 0;
  // vocab[0] must be "<unk>"; the others distinct pieces.
  explicit Tokenizer(std::vector<std::string> vocab);
  // The most frequent pieces of text, "<unk>" first: at most size entries; ties by byte order.
  static std::vector<std::string> build_vocab(const std::string& text, int size);

  int32_t id(const std::string& piece) const;  // kUnknown if absent
  const std::string& piece(int32_t id) const { return vocab_[id]; }
  int size() const { return static_cast<int>(vocab_.size()); }
  const std::vector<std::string>& vocab() const { return vocab_; }
  std::vector<int32_t> encode(const std::string& text) const;

 private:
  std::vector<std::string> vocab_;
  std::unordered_map<std::string, int32_t> ids_;
};

}  // namespace mh
