// Reading config.json's fields with messages a user can act on: the first problem found is kept
// in `error`, and a missing field with no default names itself.
#pragma once

#include <cmath>
#include <string>

#include "io/json.h"

namespace mh {

struct ConfigFields {
  const json::Value& root;
  std::string error;

  const json::Value* get(const char* key) const {
    const json::Value* v = root.find(key);
    return v && !v->is_null() ? v : nullptr;
  }
  // A whole number 1 … max; fallback < 0 means the field is required.
  int integer(const char* key, int fallback = -1, int max = 1 << 24) {
    const json::Value* v = get(key);
    if (!v) {
      if (fallback < 0 && error.empty()) error = std::string("config.json has no \"") + key + "\"";
      return fallback < 0 ? 1 : fallback;
    }
    if (!v->is_number() || v->number < 1 || v->number > max || std::floor(v->number) != v->number) {
      if (error.empty())
        error = std::string("config.json's \"") + key + "\" must be a whole number from 1 to " + std::to_string(max);
      return 1;
    }
    return static_cast<int>(v->number);
  }
  double number(const char* key, double fallback) {
    const json::Value* v = get(key);
    if (!v) return fallback;
    if (!v->is_number() || !std::isfinite(v->number)) {
      if (error.empty()) error = std::string("config.json's \"") + key + "\" must be a number";
      return fallback;
    }
    return v->number;
  }
  bool boolean(const char* key, bool fallback) const {
    const json::Value* v = get(key);
    return v && v->type == json::Type::kBool ? v->boolean : fallback;
  }
  std::string text(const char* key, const std::string& fallback) const {
    const json::Value* v = get(key);
    return v && v->is_string() ? v->string : fallback;
  }
};

}  // namespace mh
