// DINOv2 (model_type "dinov2"): Dinov2Model. ViT's embeddings (vit.h), whose position table is
// for the config's image_size (518 on the hub) and is resampled bicubically to the image's grid
// (224 px crops: 16 × 16 patches of 14); pre-LayerNorm blocks (norm1 / norm2) whose attention and
// MLP outputs are scaled per channel (layer_scale1 / layer_scale2) before the residual; a GELU MLP
// of mlp_ratio · d, or with use_swiglu_ffn a SwiGLU whose fused weights_in holds the gate then the
// up projection; the final LayerNorm. No classifier: Dinov2ForImageClassification reads the CLS
// row beside the patches' mean, which is not implemented. Keys without prefix (Dinov2Model).
#include <cmath>

#include "nn/families/vit.h"

namespace mh {

namespace {

// read_config sets silu for use_swiglu_ffn only (a silu MLP is refused), so the activation says which.
bool swiglu(const TransformerConfig& c) { return c.activation == Activation::kSilu; }

std::string read_config(ConfigFields& f, TransformerConfig& c) {
  std::string error = vision_read_config(f, c);
  c.vocab = 1;  // no classifier (vision_read_config read id2label)
  c.norm_eps = static_cast<float>(f.number("layer_norm_eps", 1e-6));
  const double ratio = f.number("mlp_ratio", 4.0);
  if (!(ratio > 0 && ratio <= 64)) return "config.json's mlp_ratio must be a number in (0, 64]";
  const int hidden = static_cast<int>(c.d_model * ratio);
  if (f.boolean("use_swiglu_ffn", false)) {
    // transformers' Dinov2SwiGLUFFN: two thirds of the MLP's width, rounded up to a multiple of 8.
    c.d_ff = (static_cast<int>(hidden * 2.0 / 3.0) + 7) / 8 * 8;
    c.activation = Activation::kSilu;
  } else {
    c.d_ff = hidden;
    if (c.activation == Activation::kSilu)
      return "DINOv2 with hidden_act silu and no SwiGLU is not supported";
  }
  if (f.boolean("apply_layernorm", true) == false) return "DINOv2 without its final layernorm (apply_layernorm: false) is not supported";
  return error;
}

std::vector<ParamSpec> params(const TransformerConfig& c) {
  std::vector<ParamSpec> p;
  const int64_t d = c.d_model, ff = c.d_ff;
  const Layout T = Layout::kTranspose;  // nn.Linear: [out][in]
  vision_embedding_params(p, c);
  for (int l = 0; l < c.layers; ++l) {
    const std::string h = "encoder.layer." + std::to_string(l) + ".";
    norm(p, layer_name(l, "norm1"), h + "norm1", d);
    vision_attention_params(p, c, l, h);
    p.push_back(vec(layer_name(l, "attn_scale"), {h + "layer_scale1.lambda1"}, d));
    norm(p, layer_name(l, "norm2"), h + "norm2", d);
    if (swiglu(c)) {
      // weights_in [2·ff][d]: rows 0 … ff − 1 the gate (silu), ff … 2·ff − 1 the up projection.
      const char* parts[][2] = {{"w_gate", "b_gate"}, {"w_up", "b_up"}};
      for (int part = 0; part < 2; ++part) {
        ParamSpec w = mat(layer_name(l, parts[part][0]), {h + "mlp.weights_in.weight"}, d, ff, Layout::kPerHead);
        ParamSpec b = vec(layer_name(l, parts[part][1]), {h + "mlp.weights_in.bias"}, ff);
        b.layout = Layout::kPerHead;
        for (ParamSpec* s : {&w, &b}) {
          s->part = part;
          s->parts = 2;
          s->group = static_cast<int>(ff);  // one "head" of ff features per part
          p.push_back(*s);
        }
      }
      p.push_back(mat(layer_name(l, "w_down"), {h + "mlp.weights_out.weight"}, ff, d, T));
      p.push_back(vec(layer_name(l, "b_down"), {h + "mlp.weights_out.bias"}, d));
    } else {
      p.push_back(mat(layer_name(l, "w_up"), {h + "mlp.fc1.weight"}, d, ff, T));
      p.push_back(vec(layer_name(l, "b_up"), {h + "mlp.fc1.bias"}, ff));
      p.push_back(mat(layer_name(l, "w_down"), {h + "mlp.fc2.weight"}, ff, d, T));
      p.push_back(vec(layer_name(l, "b_down"), {h + "mlp.fc2.bias"}, d));
    }
    p.push_back(vec(layer_name(l, "mlp_scale"), {h + "layer_scale2.lambda1"}, d));
  }
  norm(p, "final_norm", "layernorm", d);
  return p;
}

}  // namespace

extern const Family kDinov2Family = {"dinov2", read_config, {"", "dinov2."}, "embeddings.cls_token", params,
                                     vision_forward, Norm::kLayerNorm};

}  // namespace mh
