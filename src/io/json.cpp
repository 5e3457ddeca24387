#include "io/json.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace mh::json {

const Value* Value::find(const std::string& key) const {
  if (type != Type::kObject) return nullptr;
  for (const auto& [name, value] : object)
    if (name == key) return &value;
  return nullptr;
}

namespace {

constexpr int kMaxDepth = 64;

struct Parser {
  const char* s;
  size_t n, i = 0;
  std::string error;

  bool fail(const char* what) {
    if (error.empty()) error = std::string(what) + " at byte " + std::to_string(i);
    return false;
  }
  void skip_space() {
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  }
  bool literal(const char* word) {
    const size_t len = std::strlen(word);
    if (n - i < len || std::memcmp(s + i, word, len) != 0) return fail("unexpected character");
    i += len;
    return true;
  }
  static void put_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  bool hex4(unsigned& out) {
    if (n - i < 4) return fail("truncated \\u escape");
    out = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s[i++];
      out <<= 4;
      if (c >= '0' && c <= '9') out |= c - '0';
      else if (c >= 'a' && c <= 'f') out |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') out |= c - 'A' + 10;
      else return fail("bad \\u escape");
    }
    return true;
  }
  bool string(std::string& out) {
    ++i;  // the opening quote
    while (true) {
      if (i >= n) return fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s[i]);
      if (c == '"') { ++i; return true; }
      if (c < 0x20) return fail("control character in string");
      if (c != '\\') { out += static_cast<char>(c); ++i; continue; }
      if (++i >= n) return fail("unterminated string");
      const char e = s[i++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xD800 && cp < 0xDC00 && n - i >= 6 && s[i] == '\\' && s[i + 1] == 'u') {
            i += 2;
            unsigned low = 0;
            if (!hex4(low)) return false;
            if (low >= 0xDC00 && low < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            else { put_utf8(out, 0xFFFD); cp = low; }
          }
          if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD;  // a lone surrogate
          put_utf8(out, cp);
          break;
        }
        default: return fail("bad escape in string");
      }
    }
  }
  bool number(double& out) {
    const size_t start = i;
    if (i < n && s[i] == '-') ++i;
    if (i >= n || !(s[i] >= '0' && s[i] <= '9')) return fail("bad number");
    if (s[i] == '0') ++i;
    else while (i < n && s[i] >= '0' && s[i] <= '9') ++i;
    if (i < n && s[i] == '.') {
      ++i;
      if (i >= n || !(s[i] >= '0' && s[i] <= '9')) return fail("bad number");
      while (i < n && s[i] >= '0' && s[i] <= '9') ++i;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
      if (i >= n || !(s[i] >= '0' && s[i] <= '9')) return fail("bad number");
      while (i < n && s[i] >= '0' && s[i] <= '9') ++i;
    }
    // strtod needs a terminated string; numbers are short, so copy (a 1000-digit one is refused).
    if (i - start > 512) return fail("number too long");
    char buf[520];
    std::memcpy(buf, s + start, i - start);
    buf[i - start] = 0;
    out = std::strtod(buf, nullptr);
    return true;
  }
  bool value(Value& v, int depth) {
    if (depth > kMaxDepth) return fail("nesting deeper than 64 levels");
    skip_space();
    if (i >= n) return fail("unexpected end of text");
    const char c = s[i];
    if (c == '{') {
      v.type = Type::kObject;
      ++i;
      skip_space();
      if (i < n && s[i] == '}') { ++i; return true; }
      while (true) {
        skip_space();
        if (i >= n || s[i] != '"') return fail("expected a quoted key");
        std::string key;
        if (!string(key)) return false;
        skip_space();
        if (i >= n || s[i] != ':') return fail("expected ':'");
        ++i;
        v.object.emplace_back(std::move(key), Value());
        if (!value(v.object.back().second, depth + 1)) return false;
        skip_space();
        if (i < n && s[i] == ',') { ++i; continue; }
        if (i < n && s[i] == '}') { ++i; return true; }
        return fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      v.type = Type::kArray;
      ++i;
      skip_space();
      if (i < n && s[i] == ']') { ++i; return true; }
      while (true) {
        v.array.emplace_back();
        if (!value(v.array.back(), depth + 1)) return false;
        skip_space();
        if (i < n && s[i] == ',') { ++i; continue; }
        if (i < n && s[i] == ']') { ++i; return true; }
        return fail("expected ',' or ']'");
      }
    }
    if (c == '"') { v.type = Type::kString; return string(v.string); }
    if (c == 't') { v.type = Type::kBool; v.boolean = true; return literal("true"); }
    if (c == 'f') { v.type = Type::kBool; return literal("false"); }
    if (c == 'n') { v.type = Type::kNull; return literal("null"); }
    // Python's json writes these for non-finite floats; config.json files on the hub carry them.
    if (c == 'N') { v.type = Type::kNumber; v.number = NAN; return literal("NaN"); }
    if (c == 'I') { v.type = Type::kNumber; v.number = INFINITY; return literal("Infinity"); }
    if (c == '-' && i + 1 < n && s[i + 1] == 'I') {
      ++i;
      v.type = Type::kNumber;
      v.number = -INFINITY;
      return literal("Infinity");
    }
    v.type = Type::kNumber;
    return number(v.number);
  }
};

}  // namespace

std::string parse(const char* text, size_t size, Value& out) {
  Parser p{text, size, 0, std::string()};
  out = Value();
  if (p.value(out, 0)) {
    p.skip_space();
    if (p.i != p.n) p.fail("text after the end of the JSON value");
  }
  if (!p.error.empty()) out = Value();
  return p.error;
}

}  // namespace mh::json
