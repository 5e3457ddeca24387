// DeiT (model_type "deit": facebook/deit-*-distilled-*): ViT with a distillation token after the
// CLS token (its own row of the position table), so T = 2 + patches. DeiTForImageClassification
// reads the CLS row (classifier); DeiTForImageClassificationWithTeacher averages cls_classifier on
// the CLS row and distillation_classifier on the distillation row; DeiTModel has neither. The
// blocks, norms and keys are ViT's under "deit." (the non-distilled facebook/deit-* checkpoints
// say model_type "vit" and load as ViT).
#include "nn/families/vit.h"

namespace mh {

namespace {

std::string read_config(ConfigFields& f, TransformerConfig& c) {
  c.prefix_tokens = 2;
  return vit_read_config(f, c);
}

std::vector<ParamSpec> params(const TransformerConfig& c) {
  std::vector<ParamSpec> p = vit_params(c);
  ParamSpec w = mat("dist_output", {"distillation_classifier.weight"}, c.d_model, c.vocab, Layout::kTranspose);
  ParamSpec b = vec("dist_output_bias", {"distillation_classifier.bias"}, c.vocab);
  for (ParamSpec* s : {&w, &b}) {
    s->optional = true;
    s->unprefixed = true;
    p.push_back(*s);
  }
  return p;
}

}  // namespace

extern const Family kDeitFamily = {"deit", read_config, {"deit.", ""}, "embeddings.cls_token", params, vision_forward,
                                   Norm::kLayerNorm};

}  // namespace mh
