#include "io/hf_config.h"

#include <cmath>

namespace mh {

const char* const kSupportedModelTypes = "gpt2, bert, llama, qwen2, mistral";

namespace {

// Field access with the error messages a user can act on.
struct Fields {
  const json::Value& root;
  std::string error;

  const json::Value* get(const char* key) const {
    const json::Value* v = root.find(key);
    return v && !v->is_null() ? v : nullptr;
  }
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
  bool boolean(const char* key, bool fallback) {
    const json::Value* v = get(key);
    return v && v->type == json::Type::kBool ? v->boolean : fallback;
  }
  std::string text(const char* key, const std::string& fallback) {
    const json::Value* v = get(key);
    return v && v->is_string() ? v->string : fallback;
  }
};

bool activation_from(const std::string& name, Activation& out) {
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") out = Activation::kGeluTanh;
  else if (name == "gelu") out = Activation::kGeluErf;
  else if (name == "relu") out = Activation::kRelu;
  else if (name == "silu" || name == "swish") out = Activation::kSilu;
  else return false;
  return true;
}

// Folds a rope_scaling / rope_parameters block into the frequencies (transformers' rope init
// functions); "" or what is unsupported.
std::string apply_rope_scaling(const json::Value* scaling, int max_positions, std::vector<float>& inv_freq) {
  if (!scaling || !scaling->is_object()) return "";
  Fields f{*scaling, ""};
  std::string type = f.text("rope_type", f.text("type", "default"));
  if (type == "default" || type == "dynamic") return f.error;  // dynamic: unchanged within max positions
  const double factor = f.number("factor", 1.0);
  if (type == "linear") {
    for (float& v : inv_freq) v = static_cast<float>(v / factor);
    return f.error;
  }
  if (type == "llama3") {
    const double low = f.number("low_freq_factor", 1.0), high = f.number("high_freq_factor", 4.0);
    const double old_context = f.number("original_max_position_embeddings", max_positions);
    const double low_wavelen = old_context / low, high_wavelen = old_context / high;
    for (float& v : inv_freq) {
      const double wavelen = 2 * M_PI / v;
      if (wavelen > low_wavelen) {
        v = static_cast<float>(v / factor);
      } else if (wavelen >= high_wavelen) {
        const double smooth = (old_context / wavelen - low) / (high - low);
        v = static_cast<float>((1 - smooth) * v / factor + smooth * v);
      }
    }
    return f.error;
  }
  return "rope scaling of type \"" + type + "\" is not supported (supported: default, linear, dynamic, llama3)";
}

std::string check_heads(const TransformerConfig& c) {
  if (c.head_dim * c.heads != c.d_model && c.family != Family::kLlama)
    return "hidden size " + std::to_string(c.d_model) + " is not divisible by " + std::to_string(c.heads) + " heads";
  if (c.heads % c.kv_heads != 0)
    return std::to_string(c.heads) + " attention heads cannot share " + std::to_string(c.kv_heads) +
           " key/value heads evenly";
  if (c.head_dim > 1024) return "head size " + std::to_string(c.head_dim) + " is over 1024";
  return "";
}

}  // namespace

std::vector<float> rope_frequencies(float theta, int dims) {
  std::vector<float> inv(static_cast<size_t>(dims / 2));
  for (int i = 0; i < dims / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(dims);
    inv[i] = 1.0f / static_cast<float>(std::pow(static_cast<double>(theta), static_cast<double>(exponent)));
  }
  return inv;
}

std::string read_hf_config(const std::string& text, TransformerConfig& out) {
  json::Value root;
  std::string error = json::parse(text.data(), text.size(), root);
  if (!error.empty()) return "config.json is not valid JSON (" + error + ")";
  return read_hf_config(root, out);
}

std::string read_hf_config(const json::Value& root, TransformerConfig& c) {
  c = TransformerConfig();
  if (!root.is_object()) return "config.json is not a JSON object";
  Fields f{root, ""};
  c.model_type = f.text("model_type", "");
  if (c.model_type.empty())
    return "config.json has no \"model_type\": this does not look like a transformers checkpoint";
  std::string act;
  if (c.model_type == "gpt2") {
    c.family = Family::kGpt2;
    c.layers = f.integer("n_layer", -1, 1024);
    c.heads = f.integer("n_head", -1, 1024);
    c.d_model = f.integer("n_embd", -1, 1 << 16);
    c.d_ff = f.integer("n_inner", 4 * c.d_model);
    c.vocab = f.integer("vocab_size", -1, 1 << 22);
    c.max_positions = f.get("n_positions") ? f.integer("n_positions", -1) : f.integer("n_ctx", -1);
    c.norm_eps = static_cast<float>(f.number("layer_norm_epsilon", 1e-5));
    act = f.text("activation_function", "gelu_new");
    c.qkv_bias = c.o_bias = c.mlp_bias = true;
    c.tied = f.boolean("tie_word_embeddings", true);
    if (!f.boolean("scale_attn_weights", true)) c.attention_scale = 1.0f;
    c.scale_by_layer = f.boolean("scale_attn_by_inverse_layer_idx", false);
    if (f.boolean("add_cross_attention", false)) return "GPT-2 with cross-attention (an encoder-decoder) is not supported";
  } else if (c.model_type == "bert") {
    c.family = Family::kBert;
    c.causal = false;
    c.layers = f.integer("num_hidden_layers", -1, 1024);
    c.heads = f.integer("num_attention_heads", -1, 1024);
    c.d_model = f.integer("hidden_size", -1, 1 << 16);
    c.d_ff = f.integer("intermediate_size", -1, 1 << 18);
    c.vocab = f.integer("vocab_size", -1, 1 << 22);
    c.max_positions = f.integer("max_position_embeddings", 512);
    c.type_vocab = f.integer("type_vocab_size", 2, 1 << 10);
    c.norm_eps = static_cast<float>(f.number("layer_norm_eps", 1e-12));
    act = f.text("hidden_act", "gelu");
    c.qkv_bias = c.o_bias = c.mlp_bias = true;
    c.tied = f.boolean("tie_word_embeddings", true);
    const std::string position = f.text("position_embedding_type", "absolute");
    if (position != "absolute")
      return "BERT with position_embedding_type \"" + position + "\" is not supported (only \"absolute\")";
    if (f.boolean("is_decoder", false)) return "BERT as a decoder (is_decoder: true) is not supported";
  } else if (c.model_type == "llama" || c.model_type == "qwen2" || c.model_type == "mistral") {
    c.family = Family::kLlama;
    c.layers = f.integer("num_hidden_layers", -1, 1024);
    c.heads = f.integer("num_attention_heads", -1, 1024);
    c.kv_heads = f.integer("num_key_value_heads", c.heads, 1024);
    c.d_model = f.integer("hidden_size", -1, 1 << 16);
    c.d_ff = f.integer("intermediate_size", -1, 1 << 18);
    c.vocab = f.integer("vocab_size", -1, 1 << 22);
    c.max_positions = f.integer("max_position_embeddings", c.model_type == "llama" ? 2048 : 32768);
    c.norm_eps = static_cast<float>(f.number("rms_norm_eps", 1e-6));
    act = f.text("hidden_act", "silu");
    if (act != "silu") return "a " + c.model_type + " model with hidden_act \"" + act + "\" is not supported (only silu)";
    c.head_dim = f.get("head_dim") ? f.integer("head_dim", -1, 1024) : c.d_model / std::max(c.heads, 1);
    if (!f.get("head_dim") && c.d_model % std::max(c.heads, 1) != 0)
      return "hidden size " + std::to_string(c.d_model) + " is not divisible by " + std::to_string(c.heads) + " heads";
    c.tied = f.boolean("tie_word_embeddings", false);
    c.mlp_bias = f.boolean("mlp_bias", false);
    if (c.model_type == "qwen2") {
      c.qkv_bias = true;
      if (f.boolean("use_sliding_window", false))
        return "Qwen2 with use_sliding_window: true is not supported";
    } else {
      c.qkv_bias = c.o_bias = f.boolean("attention_bias", false);
    }
    if (c.model_type == "mistral" && f.get("sliding_window")) c.sliding_window = f.integer("sliding_window", -1, 1 << 30);
    // Rotary positions: rope_theta at the top (most hub checkpoints) or inside rope_parameters
    // (transformers 5); scaling in rope_scaling or, again, rope_parameters.
    const json::Value* params = f.get("rope_parameters");
    double theta = f.number("rope_theta", 10000.0);
    if (params && params->is_object()) {
      Fields p{*params, ""};
      theta = p.number("rope_theta", theta);
      if (!p.error.empty()) return p.error;
    }
    const double partial = f.number("partial_rotary_factor", 1.0);
    const int rope_dims = static_cast<int>(c.head_dim * partial) / 2 * 2;
    if (!(theta > 0) || rope_dims < 2) return "config.json's rope settings are not usable (rope_theta must be > 0)";
    c.rope_inv_freq = rope_frequencies(static_cast<float>(theta), rope_dims);
    const json::Value* scaling = f.get("rope_scaling");
    std::string error = apply_rope_scaling(scaling ? scaling : params, c.max_positions, c.rope_inv_freq);
    if (!error.empty()) return error;
  } else {
    return "unsupported architecture \"" + c.model_type + "\" (model_type in config.json): supported are " +
           kSupportedModelTypes;
  }
  if (!f.error.empty()) return f.error;
  if (c.kv_heads == 0) c.kv_heads = c.heads;
  if (c.head_dim == 0) c.head_dim = c.d_model / c.heads;
  if (!activation_from(act, c.activation))
    return "activation \"" + act + "\" is not supported (supported: gelu, gelu_new, gelu_pytorch_tanh, relu, silu)";
  return check_heads(c);
}

}  // namespace mh
