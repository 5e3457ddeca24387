#include "io/tokenizer.h"

#include <algorithm>

namespace mh {

namespace {
bool is_letter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
char lower(unsigned char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : static_cast<char>(c); }

// Length in bytes of the UTF-8 sequence starting with lead byte c (1 for invalid bytes).
int utf8_length(unsigned char c) {
  if (c >= 0xF0 && c < 0xF8) return 4;
  if (c >= 0xE0) return c < 0xF0 ? 3 : 1;
  if (c >= 0xC0) return 2;
  return 1;
}
}  // namespace

std::vector<TextPiece> split_text(const std::string& s) {
  std::vector<TextPiece> out;
  const int n = static_cast<int>(s.size());
  // What the character at i is, after mapping curly quotes and the em dash to ASCII.
  auto ascii_at = [&](int i, int* len) -> char {
    const unsigned char c = s[i];
    *len = i + utf8_length(c) <= n ? utf8_length(c) : 1;
    if (*len == 3 && c == 0xE2 && static_cast<unsigned char>(s[i + 1]) == 0x80) {
      const unsigned char t = s[i + 2];
      if (t == 0x98 || t == 0x99) return '\'';  // ‘ ’
      if (t == 0x9C || t == 0x9D) return '"';   // “ ”
      if (t == 0x94 || t == 0x93) return '-';   // — –
    }
    return *len == 1 ? static_cast<char>(c) : 0;  // 0: another non-ASCII character
  };
  auto wordish = [&](int i) { int len; const char a = ascii_at(i, &len); return is_letter(a) || a == 0; };
  int i = 0;
  while (i < n) {
    int len;
    const char a = ascii_at(i, &len);
    if (is_space(a) || a == '_') { i += len; continue; }
    TextPiece piece{"", i, i};
    // An apostrophe right after a word and before a letter starts a suffix piece ("'s", "'t").
    bool suffix = false;
    if (a == '\'' && i + len < n && !out.empty() && out.back().end == i &&
        is_letter(out.back().text.back())) {
      int next_len;
      suffix = is_letter(ascii_at(i + len, &next_len));
    }
    if (is_letter(a) || a == 0 || suffix) {
      int j = i;
      if (suffix) { piece.text = "'"; j += len; }
      while (j < n && wordish(j)) {
        int l;
        const char c = ascii_at(j, &l);
        if (c) piece.text += lower(c); else piece.text.append(s, j, l);
        j += l;
      }
      piece.end = j;
    } else if (is_digit(a)) {
      int j = i;
      while (j < n && is_digit(s[j])) piece.text += s[j++];
      piece.end = j;
    } else if (a == '-') {
      int j = i, dashes = 0;
      for (int l; j < n && ascii_at(j, &l) == '-'; j += l) dashes += (l == 3) ? 2 : 1;
      piece.text = dashes >= 2 ? "--" : "-";
      piece.end = j;
    } else {
      piece.text = a;
      piece.end = i + len;
    }
    out.push_back(std::move(piece));
    i = out.back().end;
  }
  return out;
}

Tokenizer::Tokenizer(std::vector<std::string> vocab) : vocab_(std::move(vocab)) {
  for (size_t i = 0; i < vocab_.size(); ++i) ids_.emplace(vocab_[i], static_cast<int32_t>(i));
}

std::vector<std::string> Tokenizer::build_vocab(const std::string& text, int size) {
  std::unordered_map<std::string, int64_t> counts;
  for (TextPiece& p : split_text(text)) ++counts[p.text];
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<std::string> vocab{"<unk>"};
  for (size_t i = 0; i < sorted.size() && static_cast<int>(vocab.size()) < size; ++i)
    vocab.push_back(sorted[i].first);
  return vocab;
}

int32_t Tokenizer::id(const std::string& piece) const {
  const auto it = ids_.find(piece);
  return it == ids_.end() ? kUnknown : it->second;
}

std::vector<int32_t> Tokenizer::encode(const std::string& text) const {
  std::vector<int32_t> ids;
  for (const TextPiece& p : split_text(text)) ids.push_back(id(p.text));
  return ids;
}

}  // namespace mh
