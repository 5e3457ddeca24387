// ViT (model_type "vit"): ViTModel and ViTForImageClassification. A stride-P convolution cuts the
// image into patches, a CLS row goes first, learned positions are added; pre-LayerNorm blocks
// (layernorm_before / layernorm_after) with erf GELU; a final LayerNorm; the classifier reads the
// CLS row. Keys under "vit." with a classifier, none in ViTModel (whose pooler is not read).
#include "nn/families/vit.h"

#include "nn/vision_ops.h"

namespace mh {

std::string vision_read_config(ConfigFields& f, TransformerConfig& c) {
  c.causal = false;
  c.tied = false;
  c.layers = f.integer("num_hidden_layers", -1, 1024);
  c.heads = f.integer("num_attention_heads", -1, 1024);
  c.d_model = f.integer("hidden_size", -1, 1 << 16);
  c.image_size = f.integer("image_size", -1, 1 << 14);
  c.patch_size = f.integer("patch_size", -1, 1024);
  c.channels = f.integer("num_channels", 3, 64);
  c.max_positions = kMaxTokens;  // any image whose patches fit a run (positions are resampled)
  const std::string act = f.text("hidden_act", "gelu");
  if (!activation_from(act, c.activation))
    return "activation \"" + act + "\" is not supported (supported: gelu, gelu_new, gelu_pytorch_tanh, relu, silu)";
  c.qkv_bias = f.boolean("qkv_bias", true);
  c.o_bias = c.mlp_bias = true;
  const json::Value* labels = f.get("id2label");
  c.vocab = labels && labels->is_object() && !labels->object.empty() ? static_cast<int>(labels->object.size())
                                                                     : f.integer("num_labels", 2, 1 << 20);
  if (c.channels != 3) return "image models with " + std::to_string(c.channels) + " channels are not supported (only RGB: 3)";
  if (c.patch_size > c.image_size) return "config.json's patch_size is larger than its image_size";
  return "";
}

void vision_embedding_params(std::vector<ParamSpec>& p, const TransformerConfig& c) {
  const int64_t d = c.d_model, P = c.patch_size, grid = c.image_size / c.patch_size;
  ParamSpec conv = mat("patch_w", {"embeddings.patch_embeddings.projection.weight"}, c.channels * P * P, d, Layout::kTranspose);
  conv.source_dims = {d, c.channels, P, P};
  p.push_back(conv);
  p.push_back(vec("patch_b", {"embeddings.patch_embeddings.projection.bias"}, d));
  ParamSpec cls = vec("cls_token", {"embeddings.cls_token"}, d);
  cls.source_dims = {1, 1, d};
  p.push_back(cls);
  if (c.prefix_tokens == 2) {
    ParamSpec dist = vec("dist_token", {"embeddings.distillation_token"}, d);
    dist.source_dims = {1, 1, d};
    p.push_back(dist);
  }
  const int64_t rows = grid * grid + c.prefix_tokens;
  ParamSpec positions = rows_table(mat("positions", {"embeddings.position_embeddings"}, rows, d));
  positions.source_dims = {1, rows, d};
  p.push_back(positions);
}

void vision_attention_params(std::vector<ParamSpec>& p, const TransformerConfig& c, int l, const std::string& h) {
  const int64_t d = c.d_model;
  const Layout T = Layout::kTranspose;  // nn.Linear: [out][in]
  const char* names[][3] = {{"wq", "bq", "query"}, {"wk", "bk", "key"}, {"wv", "bv", "value"}};
  for (auto& [weight, bias, theirs] : names) {
    p.push_back(mat(layer_name(l, weight), {h + "attention.attention." + theirs + ".weight"}, d, d, T));
    if (c.qkv_bias) p.push_back(vec(layer_name(l, bias), {h + "attention.attention." + theirs + ".bias"}, d));
  }
  p.push_back(mat(layer_name(l, "wo"), {h + "attention.output.dense.weight"}, d, d, T));
  p.push_back(vec(layer_name(l, "bo"), {h + "attention.output.dense.bias"}, d));
}

void vision_classifier_params(std::vector<ParamSpec>& p, const TransformerConfig& c) {
  ParamSpec w = mat("output", {"classifier.weight", "cls_classifier.weight"}, c.d_model, c.vocab, Layout::kTranspose);
  ParamSpec b = vec("output_bias", {"classifier.bias", "cls_classifier.bias"}, c.vocab);
  for (ParamSpec* s : {&w, &b}) {
    s->optional = true;
    s->unprefixed = true;
    p.push_back(*s);
  }
}

void vision_positions(float* out, const TransformerConfig& c, const Tensor& table, int rows, int cols) {
  const int d = c.d_model, grid = c.image_size / c.patch_size, prefix = c.prefix_tokens;
  const float* t = table.f32();
  if (rows == grid && cols == grid) {
    std::copy(t, t + (int64_t{grid} * grid + prefix) * d, out);
    return;
  }
  std::copy(t, t + int64_t{prefix} * d, out);  // the CLS (and distillation) rows are not on the grid
  interpolate_bicubic(out + int64_t{prefix} * d, t + int64_t{prefix} * d, grid, grid, rows, cols, d);
}

void vision_embeddings(ForwardPass& p, float* x) {
  const TransformerConfig& c = p.config;
  const TransformerWeights& W = p.weights;
  const RunRequest& r = p.request();
  const int d = c.d_model, P = c.patch_size, rows = r.image_height / P, cols = r.image_width / P;
  const int patches = rows * cols;  // n − prefix (Transformer::input_error)
  std::vector<float> cut(static_cast<size_t>(patches) * c.channels * P * P);
  image_patches(cut.data(), r.pixels, c.channels, r.image_height, r.image_width, P);
  const float* cls = W.cls_token->f32();
  std::copy(cls, cls + d, x);
  if (c.prefix_tokens == 2) std::copy(W.dist_token->f32(), W.dist_token->f32() + d, x + d);
  matmul(x + int64_t{c.prefix_tokens} * d, cut.data(), *W.patch_w, f32(W.patch_b), patches);
  p.hook(Hook::kEmbed, -1, x, p.n, d);
  std::vector<float> positions(static_cast<size_t>(p.n) * d);
  vision_positions(positions.data(), c, *W.position_embedding, rows, cols);
  p.hook(Hook::kPosEmbed, -1, positions.data(), p.n, d);
  add_in_place(x, positions.data(), int64_t{p.n} * d);
  p.record_hidden(x, p.n, 0);
}

void vision_forward(ForwardPass& p) {
  const TransformerConfig& c = p.config;
  const TransformerWeights& W = p.weights;
  int n = p.n;
  float *x = p.x, *h = p.h;
  vision_embeddings(p, x);
  for (int l = 0; l < c.layers; ++l) {
    p.begin_layer(l, x, n);
    p.norm(Hook::kLn1, l, h, x, n);
    n = p.attention_block(x, h, n, l);  // ⊙ layer_scale1 where the layer has it (DINOv2)
    p.norm(Hook::kLn2, l, h, x, n);
    if (W.layers[l].w_gate) p.gated_mlp(x, h, W.layers[l], n);
    else p.mlp(x, h, W.layers[l], n);  // both ⊙ layer_scale2 where the layer has it
    p.end_layer(l, x, n);
  }
  vision_finish(p, x, n);
}

void vision_finish(ForwardPass& p, float* x, int n) {
  p.record_hidden(x, n, p.config.layers);
  p.norm(Hook::kLnFinal, -1, x, x, n);
  p.keep_last_hidden(x, n);
  if (p.wants_logits()) p.output_head(x, n);
}

std::string vit_read_config(ConfigFields& f, TransformerConfig& c) {
  std::string error = vision_read_config(f, c);
  c.d_ff = f.integer("intermediate_size", -1, 1 << 18);
  c.norm_eps = static_cast<float>(f.number("layer_norm_eps", 1e-12));
  return error;
}

std::vector<ParamSpec> vit_params(const TransformerConfig& c) {
  std::vector<ParamSpec> p;
  const int64_t d = c.d_model, ff = c.d_ff;
  const Layout T = Layout::kTranspose;  // nn.Linear: [out][in]
  vision_embedding_params(p, c);
  for (int l = 0; l < c.layers; ++l) {
    const std::string h = "encoder.layer." + std::to_string(l) + ".";
    norm(p, layer_name(l, "norm1"), h + "layernorm_before", d);
    vision_attention_params(p, c, l, h);
    norm(p, layer_name(l, "norm2"), h + "layernorm_after", d);
    p.push_back(mat(layer_name(l, "w_up"), {h + "intermediate.dense.weight"}, d, ff, T));
    p.push_back(vec(layer_name(l, "b_up"), {h + "intermediate.dense.bias"}, ff));
    p.push_back(mat(layer_name(l, "w_down"), {h + "output.dense.weight"}, ff, d, T));
    p.push_back(vec(layer_name(l, "b_down"), {h + "output.dense.bias"}, d));
  }
  norm(p, "final_norm", "layernorm", d);
  vision_classifier_params(p, c);
  return p;
}

extern const Family kVitFamily = {"vit", vit_read_config, {"vit.", ""}, "embeddings.cls_token", vit_params, vision_forward,
                                  Norm::kLayerNorm};

}  // namespace mh
