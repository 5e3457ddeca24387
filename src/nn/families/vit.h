// What ViT (vit.cpp), DeiT (deit.cpp) and DINOv2 (dinov2.cpp) share: the image keys of
// config.json, the embedding tensors, and the embedding step (patches, CLS [and DeiT's distillation
// token], positions resampled to the image's grid).
#pragma once

#include "nn/families/family.h"

namespace mh {

// image_size, patch_size, num_channels, the encoder's sizes and norms; the classifier's labels
// (id2label, else num_labels) as vocab.
std::string vision_read_config(ConfigFields& f, TransformerConfig& c);
// The patch embedding's convolution and bias, the CLS token (and with c.prefix_tokens 2 the
// distillation token) and the position table (a row for each of those, then the grid's).
void vision_embedding_params(std::vector<ParamSpec>& out, const TransformerConfig& c);
// Layer l's attention under prefix h ("encoder.layer.3."): attention.attention.{query,key,value}
// (biases where qkv_bias) and attention.output.dense, as ViT and DINOv2 both name them.
void vision_attention_params(std::vector<ParamSpec>& out, const TransformerConfig& c, int l, const std::string& h);
// The classifier (classifier.weight [labels][d], .bias, or DeiT's cls_classifier; outside the
// prefix), optional.
void vision_classifier_params(std::vector<ParamSpec>& out, const TransformerConfig& c);
// x (n × d) = [CLS; (distillation;) patches · W + b] + positions, then hidden state 0. Hooks: hook_embed (the CLS
// row and the patches' embeddings), hook_pos_embed (the position rows, resampled where the image's
// grid is not the table's).
void vision_embeddings(ForwardPass& pass, float* x);
// The position rows (prefix + rows · cols) × d for a grid of rows × cols patches: the table itself
// when the grid is its own, else the prefix rows (CLS, distillation) and the table's grid resampled
// bicubically to rows × cols (transformers' interpolate_pos_encoding).
void vision_positions(float* out, const TransformerConfig& c, const Tensor& table, int rows, int cols);
// The encoder: embeddings, pre-LayerNorm blocks (a GELU MLP, or SwiGLU where the layer has a
// gate: DINOv2's use_swiglu_ffn), and vision_finish.
void vision_forward(ForwardPass& pass);
// ViT's tensors (vit.cpp), which DeiT's are with its distillation token and head beside.
std::vector<ParamSpec> vit_params(const TransformerConfig& c);
// ViT's config.json keys (vision_read_config, intermediate_size, layer_norm_eps).
std::string vit_read_config(ConfigFields& f, TransformerConfig& c);
// The end of an image encoder: hidden state L (before the final norm, as transformers records
// it), the final LayerNorm, the last hidden state, and the classifier over the CLS row.
void vision_finish(ForwardPass& pass, float* x, int n);

}  // namespace mh
