#include "io/hf_config.h"

#include <cmath>

#include "nn/families/family.h"

namespace mh {

namespace {

// Folds a rope_scaling / rope_parameters block into the frequencies (transformers' rope init
// functions); "" or what is unsupported.
std::string apply_rope_scaling(const json::Value* scaling, int max_positions, std::vector<float>& inv_freq) {
  if (!scaling || !scaling->is_object()) return "";
  ConfigFields f{*scaling, ""};
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

std::string rope_from(double theta, const json::Value* scaling, const TransformerConfig& c, double partial,
                      std::vector<float>& out) {
  const int rope_dims = static_cast<int>(c.head_dim * partial) / 2 * 2;
  if (!(theta > 0) || rope_dims < 2) return "config.json's rope settings are not usable (rope_theta must be > 0)";
  out = rope_frequencies(static_cast<float>(theta), rope_dims);
  return apply_rope_scaling(scaling, c.max_positions, out);
}

std::string read_rope(ConfigFields& f, TransformerConfig& c) {
  // rope_theta at the top (most hub checkpoints) or inside rope_parameters (transformers 5);
  // scaling in rope_scaling or, again, rope_parameters; the rotated share of each head in
  // partial_rotary_factor (also inside rope_parameters in transformers 5).
  const json::Value* params = f.get("rope_parameters");
  double theta = f.number("rope_theta", 10000.0);
  double partial = f.number("partial_rotary_factor", 1.0);
  if (params && params->is_object()) {
    ConfigFields p{*params, ""};
    theta = p.number("rope_theta", theta);
    partial = p.number("partial_rotary_factor", partial);
    if (!p.error.empty()) return p.error;
  }
  if (!f.error.empty()) return f.error;
  if (!(partial > 0 && partial <= 1)) return "config.json's partial_rotary_factor must be in (0, 1]";
  const json::Value* scaling = f.get("rope_scaling");
  return rope_from(theta, scaling ? scaling : params, c, partial, c.rope_inv_freq);
}

std::string read_layer_types(ConfigFields& f, TransformerConfig& c, const std::vector<uint8_t>& fallback) {
  c.sliding_layers = fallback;
  const json::Value* types = f.get("layer_types");
  if (!types) return "";
  if (!types->is_array() || static_cast<int>(types->array.size()) != c.layers)
    return "config.json's \"layer_types\" must list one type for each of the " + std::to_string(c.layers) + " layers";
  c.sliding_layers.assign(static_cast<size_t>(c.layers), 0);
  for (int l = 0; l < c.layers; ++l) {
    const json::Value& t = types->array[l];
    if (t.is_string() && t.string == "sliding_attention") c.sliding_layers[l] = 1;
    else if (!t.is_string() || t.string != "full_attention")
      return "layer " + std::to_string(l) + "'s type in config.json's \"layer_types\" is not supported (only "
             "full_attention and sliding_attention)";
  }
  return "";
}

std::string read_hf_config(const json::Value& root, TransformerConfig& c) {
  c = TransformerConfig();
  if (!root.is_object()) return "config.json is not a JSON object";
  ConfigFields f{root, ""};
  c.model_type = f.text("model_type", "");
  if (c.model_type.empty())
    return "config.json has no \"model_type\": this does not look like a transformers checkpoint";
  c.family = family_for_model_type(c.model_type);
  if (!c.family && c.model_type == "gemma3")
    return "this is a Gemma 3 multimodal checkpoint (model_type \"gemma3\", text and images): only Gemma 3's text "
           "models (model_type \"gemma3_text\": gemma-3-270m, gemma-3-1b) are supported";
  if (!c.family)
    return "unsupported architecture \"" + c.model_type + "\" (model_type in config.json): supported are " +
           supported_model_types();
  std::string error = c.family->read_config(f, c);
  if (!f.error.empty()) return f.error;  // a missing or malformed field comes before what it implies
  if (!error.empty()) return error;
  if (c.kv_heads == 0) c.kv_heads = c.heads;
  if (c.head_dim == 0) {
    if (c.d_model % c.heads != 0)
      return "hidden size " + std::to_string(c.d_model) + " is not divisible by " + std::to_string(c.heads) + " heads";
    c.head_dim = c.d_model / c.heads;
  }
  if (c.heads % c.kv_heads != 0)
    return std::to_string(c.heads) + " attention heads cannot share " + std::to_string(c.kv_heads) +
           " key/value heads evenly";
  if (c.head_dim > 1024) return "head size " + std::to_string(c.head_dim) + " is over 1024";
  return "";
}

}  // namespace mh
