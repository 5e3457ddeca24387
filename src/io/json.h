// A small JSON reader for the files a checkpoint brings (config.json, a safetensors header, a shard
// index). Strict RFC 8259, with limits that turn hostile input into an error rather than a crash:
// nesting ≤ 64 levels, and every number kept as a double (integers exact up to 2^53, which is
// plenty for tensor offsets: a safetensors offset past that is rejected as absurd anyway).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mh::json {

enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

struct Value {
  Type type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Value> array;
  // Objects keep their keys in file order (a safetensors header's order is its tensors' order).
  std::vector<std::pair<std::string, Value>> object;

  bool is_null() const { return type == Type::kNull; }
  bool is_number() const { return type == Type::kNumber; }
  bool is_string() const { return type == Type::kString; }
  bool is_object() const { return type == Type::kObject; }
  bool is_array() const { return type == Type::kArray; }
  // The member called key, or null when this is not an object or has no such member.
  const Value* find(const std::string& key) const;
};

// "" and the parsed value, or a message naming the byte offset where the text stops being JSON.
std::string parse(const char* text, size_t size, Value& out);

}  // namespace mh::json
