// GPT-Neo (model_type "gpt_neo": the TinyStories models, GPT-Neo 125M … 2.7B): GPT-2's blocks with
// nn.Linear weights, Q/K/V without biases, attention scores that are not divided by √head_dim, and
// layers that alternate as attention_types says between global attention and a local one that sees
// only the last window_size tokens. GPTNeoForCausalLM's names carry "transformer.", GPTNeoModel's none.
#include "nn/families/gpt2.h"

namespace mh {
namespace {

// config.json's attention_types, [[["global", "local"], 12]], expanded: one flag per layer, 1 = local.
std::string read_attention_types(ConfigFields& f, TransformerConfig& c) {
  std::vector<std::string> kinds;
  if (const json::Value* types = f.get("attention_types"); types && types->is_array()) {
    for (const json::Value& group : types->array) {
      if (!group.is_array() || group.array.size() != 2 || !group.array[0].is_array() || !group.array[1].is_number())
        return "config.json's \"attention_types\" must be a list of [[kinds…], repeats]";
      for (int r = 0; r < static_cast<int>(group.array[1].number) && static_cast<int>(kinds.size()) <= c.layers; ++r)
        for (const json::Value& kind : group.array[0].array) kinds.push_back(kind.is_string() ? kind.string : "");
    }
  } else if (const json::Value* layers = f.get("attention_layers"); layers && layers->is_array()) {
    for (const json::Value& kind : layers->array) kinds.push_back(kind.is_string() ? kind.string : "");
  } else {
    kinds.assign(static_cast<size_t>(c.layers), "global");
  }
  if (static_cast<int>(kinds.size()) != c.layers)
    return "config.json's \"attention_types\" name " + std::to_string(kinds.size()) + " layers, but the model has " +
           std::to_string(c.layers);
  for (const std::string& kind : kinds) {
    if (kind != "global" && kind != "local")
      return "attention type \"" + kind + "\" in config.json is not supported (only global and local)";
    c.sliding_layers.push_back(kind == "local");
  }
  return "";
}

std::string read_config(ConfigFields& f, TransformerConfig& c) {
  c.layers = f.integer("num_layers", -1, 1024);
  c.heads = f.integer("num_heads", -1, 1024);
  c.d_model = f.integer("hidden_size", -1, 1 << 16);
  c.d_ff = f.integer("intermediate_size", 4 * c.d_model, 1 << 18);
  c.vocab = f.integer("vocab_size", -1, 1 << 22);
  c.max_positions = f.integer("max_position_embeddings", 2048);
  c.norm_eps = static_cast<float>(f.number("layer_norm_epsilon", 1e-5));
  const std::string act = f.text("activation_function", "gelu_new");
  if (!activation_from(act, c.activation))
    return "activation \"" + act + "\" is not supported (supported: gelu, gelu_new, gelu_pytorch_tanh, relu, silu)";
  c.o_bias = c.mlp_bias = true;
  c.tied = f.boolean("tie_word_embeddings", true);
  c.attention_scale = 1.0f;  // GPT-Neo never scaled its scores
  c.sliding_window = f.integer("window_size", 256, 1 << 30);
  return read_attention_types(f, c);
}

std::vector<ParamSpec> params(const TransformerConfig& c) {
  std::vector<ParamSpec> p;
  const int64_t d = c.d_model, ff = c.d_ff;
  const Layout T = Layout::kTranspose;  // nn.Linear: [out][in]
  p.push_back(token_embedding(c, "wte.weight"));
  p.push_back(rows_table(mat("positions", {"wpe.weight"}, c.max_positions, d)));
  for (int l = 0; l < c.layers; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    norm(p, layer_name(l, "norm1"), h + "ln_1", d);
    p.push_back(mat(layer_name(l, "wq"), {h + "attn.attention.q_proj.weight"}, d, d, T));
    p.push_back(mat(layer_name(l, "wk"), {h + "attn.attention.k_proj.weight"}, d, d, T));
    p.push_back(mat(layer_name(l, "wv"), {h + "attn.attention.v_proj.weight"}, d, d, T));
    p.push_back(mat(layer_name(l, "wo"), {h + "attn.attention.out_proj.weight"}, d, d, T));
    p.push_back(vec(layer_name(l, "bo"), {h + "attn.attention.out_proj.bias"}, d));
    norm(p, layer_name(l, "norm2"), h + "ln_2", d);
    p.push_back(mat(layer_name(l, "w_up"), {h + "mlp.c_fc.weight"}, d, ff, T));
    p.push_back(vec(layer_name(l, "b_up"), {h + "mlp.c_fc.bias"}, ff));
    p.push_back(mat(layer_name(l, "w_down"), {h + "mlp.c_proj.weight"}, ff, d, T));
    p.push_back(vec(layer_name(l, "b_down"), {h + "mlp.c_proj.bias"}, d));
  }
  norm(p, "final_norm", "ln_f", d);
  untied_output_head(p, c, "lm_head.weight");
  return p;
}

}  // namespace

// The forward pass is GPT-2's: the local layers and the unscaled scores are the config's.
extern const Family kGptNeoFamily = {"gpt_neo", read_config, {"transformer.", ""}, "wte.weight", params, gpt2_forward,
                                    Norm::kLayerNorm};

}  // namespace mh
