#include "io/gguf_model.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "io/ggml_types.h"

namespace mh {

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c < 0x20) continue;  // keys and names never hold them; dropping keeps the JSON valid
    out += static_cast<char>(c);
  }
  return out + "\"";
}

std::string number(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", x);
  return buffer;
}

// A scalar metadata value as a JSON literal, or "" (and why, in `error`) for an array or a
// value JSON cannot hold.
std::string literal(const std::string& key, const gguf::Value& v, std::string& error) {
  using gguf::ValueType;
  switch (v.type) {
    case ValueType::kString: return quoted(v.string);
    case ValueType::kBool: return v.integer ? "true" : "false";
    case ValueType::kF32: case ValueType::kF64:
      if (std::isfinite(v.number)) return number(v.number);
      error = "its metadata " + key + " is not a finite number";
      return "";
    case ValueType::kArray:
      error = "its metadata " + key + " is an array (one value a layer?), which is not supported: every layer must have the same";
      return "";
    default:
      if (v.integer < 0 && v.type == ValueType::kU64) {
        error = "its metadata " + key + " is absurdly large";
        return "";
      }
      return std::to_string(v.integer);
  }
}

// `name` against a pattern whose one "#" stands for a layer number: the number, or -1.
int match_layer(const std::string& pattern, const std::string& name) {
  const size_t hash = pattern.find('#');
  if (hash == std::string::npos) return pattern == name ? 0 : -1;
  const std::string before = pattern.substr(0, hash), after = pattern.substr(hash + 1);
  if (name.size() <= before.size() + after.size() || name.compare(0, before.size(), before) != 0 ||
      name.compare(name.size() - after.size(), after.size(), after) != 0)
    return -1;
  const std::string digits = name.substr(before.size(), name.size() - before.size() - after.size());
  if (digits.empty() || digits.size() > 5 || (digits.size() > 1 && digits[0] == '0')) return -1;
  for (char c : digits)
    if (c < '0' || c > '9') return -1;
  return std::stoi(digits);
}

std::string with_layer(std::string pattern, int layer) {
  const size_t hash = pattern.find('#');
  if (hash != std::string::npos) pattern.replace(hash, 1, std::to_string(layer));
  return pattern;
}

// The metadata an architecture's keys do not cover but that changes the computation.
std::string read_rope_keys(const gguf::Metadata& m, const std::string& arch, int64_t head_dim,
                           std::map<std::string, std::string>& config) {
  int64_t rope_dims = head_dim;
  if (std::string e = m.get_int(arch + ".rope.dimension_count", rope_dims, false); !e.empty()) return e;
  if (rope_dims != head_dim)
    return "it rotates " + std::to_string(rope_dims) + " of each head's " + std::to_string(head_dim) +
           " dimensions (" + arch + ".rope.dimension_count): partial rotary is not supported in GGUF files";
  std::string type = "none";
  double factor = 1;
  if (std::string e = m.get_string(arch + ".rope.scaling.type", type, false); !e.empty()) return e;
  if (std::string e = m.get_float(arch + ".rope.scaling.factor", factor, false); !e.empty()) return e;
  if (m.has(arch + ".rope.scale_linear")) {  // older files
    if (std::string e = m.get_float(arch + ".rope.scale_linear", factor); !e.empty()) return e;
    type = "linear";
  }
  if (type == "linear" && factor != 1) {
    if (!(factor > 0 && std::isfinite(factor))) return "its " + arch + ".rope.scaling.factor must be > 0";
    config["rope_scaling"] = "{\"rope_type\": \"linear\", \"factor\": " + number(factor) + "}";
  } else if (type != "none" && type != "linear") {
    return "its rotary scaling \"" + type + "\" (" + arch + ".rope.scaling.type) is not supported (only linear)";
  }
  return "";
}

}  // namespace

std::vector<int64_t> GgufTensor::shape() const {
  std::vector<int64_t> out;
  for (int d = info->n_dims - 1; d >= 0; --d) out.push_back(info->ne[d]);
  if (out.empty()) out.push_back(1);
  return out;
}

std::string read_gguf_model(const uint8_t* bytes, uint64_t size, uint64_t file_size, GgufModel& out) {
  out = GgufModel();
  if (std::string error = gguf::parse(bytes, size, file_size, out.file); !error.empty()) return error;
  const gguf::Metadata& m = out.file.metadata;
  std::string arch;
  if (std::string e = m.get_string("general.architecture", arch); !e.empty()) return e;
  out.architecture = gguf_architecture(arch);
  if (!out.architecture)
    return "its architecture \"" + arch + "\" (general.architecture) is not supported: supported GGUF architectures are " +
           supported_gguf_architectures();
  const GgufArchitecture& a = *out.architecture;

  std::map<std::string, std::string> config;
  config["model_type"] = quoted(a.model_type);
  for (const GgufName& key : a.keys) {
    const std::string name = arch + "." + key.gguf;
    const gguf::Value* v = m.find(name);
    if (!v) continue;
    std::string error;
    const std::string value = literal(name, *v, error);
    if (!error.empty()) return error;
    config[key.hub] = value;
  }
  int64_t experts = 0;
  if (std::string e = m.get_int(arch + ".expert_count", experts, false); !e.empty()) return e;
  if (experts > 0) return "it is a mixture of experts (" + arch + ".expert_count), which is not supported";

  // The heads, for the rotary rows the `llama` converter permuted (per head of head_dim).
  int64_t heads = 0, kv_heads = 0, d = 0, head_dim = 0;
  if (std::string e = m.get_int(arch + ".attention.head_count", heads); !e.empty()) return e;
  if (std::string e = m.get_int(arch + ".embedding_length", d); !e.empty()) return e;
  kv_heads = heads;
  if (std::string e = m.get_int(arch + ".attention.head_count_kv", kv_heads, false); !e.empty()) return e;
  if (heads <= 0 || kv_heads <= 0 || d <= 0) return "its head counts and embedding length must be positive";
  head_dim = d / heads;
  if (std::string e = m.get_int(arch + ".attention.key_length", head_dim, false); !e.empty()) return e;
  if (head_dim <= 0 || head_dim > 1024) return "its " + arch + ".attention.key_length is not a usable head size";
  if (std::string e = read_rope_keys(m, arch, head_dim, config); !e.empty()) return e;

  // Tensors: each one the architecture names, mapped; any other is refused, so nothing the file
  // computes with is silently left out.
  int64_t layers = 0;
  if (std::string e = m.get_int(arch + ".block_count", layers); !e.empty()) return e;
  for (const gguf::TensorInfo& t : out.file.tensors) {
    const ggml::TypeInfo* type = ggml::type_info(t.type);
    if (!type || !type->dequantizable)
      return "tensor \"" + t.name + "\" is stored as " + ggml::type_name(t.type) +
             ", which is not supported (supported: " + ggml::supported_types() + ")";
    GgufTensor mapped{&t, ""};
    if (t.name == kGgufRopeFactors) {
      mapped.hub_name = kGgufRopeFactors;
    } else {
      for (const GgufName& n : a.tensors) {
        const int layer = match_layer(n.gguf, t.name);
        if (layer < 0) continue;
        if (layer >= layers)
          return "tensor \"" + t.name + "\" belongs to a layer past the " + std::to_string(layers) + " of " + arch +
                 ".block_count: the file is corrupt";
        mapped.hub_name = with_layer(n.hub, layer);
        mapped.transposed = n.transposed;
        if (n.rotary_pairs) {
          const bool keys = t.name.find("attn_k") != std::string::npos;
          mapped.rotary_heads = static_cast<int>(keys ? kv_heads : heads);
          mapped.head_dim = static_cast<int>(head_dim);
          const int64_t features = t.n_dims == 1 ? t.ne[0] : t.ne[1];
          if (features != mapped.rotary_heads * head_dim || head_dim % 2 != 0)
            return "tensor \"" + t.name + "\" has " + std::to_string(features) + " outputs, not " +
                   std::to_string(mapped.rotary_heads) + " heads of " + std::to_string(head_dim) +
                   ": the file does not match its metadata";
        }
        break;
      }
    }
    if (mapped.hub_name.empty())
      return "tensor \"" + t.name + "\" is not one a GGUF " + arch +
             " model has here: the file holds a part this reader does not implement";
    if (t.n_dims > 2) return "tensor \"" + t.name + "\" has " + std::to_string(t.n_dims) + " dimensions (at most 2 expected)";
    out.tensors.push_back(mapped);
  }

  // What the tensors say: the vocabulary, a tied head, biases.
  const GgufTensor* embedding = nullptr;
  for (const GgufTensor& t : out.tensors)
    if (t.info->name == "token_embd.weight") embedding = &t;
  if (!embedding) return "it has no token_embd.weight tensor: it is not a language model this reader knows";
  config["vocab_size"] = std::to_string(embedding->info->ne[1]);
  config["tie_word_embeddings"] = out.file.find("output.weight") ? "false" : "true";
  config["attention_bias"] = out.file.find("blk.0.attn_q.bias") ? "true" : "false";
  config["mlp_bias"] = out.file.find("blk.0.ffn_up.bias") ? "true" : "false";
  for (const char* token : {"bos", "eos"}) {
    int64_t id = -1;
    if (std::string e = m.get_int(std::string("tokenizer.ggml.") + token + "_token_id", id, false); !e.empty()) return e;
    if (id >= 0) config[std::string(token) + "_token_id"] = std::to_string(id);
  }


  out.config_json = "{";
  for (const auto& [key, value] : config) out.config_json += (out.config_json.size() > 1 ? ", " : "") + quoted(key) + ": " + value;
  out.config_json += "}";
  return "";
}

}  // namespace mh
