#include "nn/hooks.h"

namespace mh {

namespace {
const char* const kNames[kHookKinds] = {
    "hook_embed", "hook_pos_embed", "hook_token_type_embed", "embed.ln.hook_normalized",
    "hook_resid_pre", "ln1.hook_normalized", "attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_rot_q",
    "attn.hook_rot_k", "attn.hook_attn_scores", "attn.hook_pattern", "attn.hook_z", "ln1_post.hook_scale", "hook_attn_out",
    "hook_resid_mid", "ln2.hook_normalized", "mlp.hook_pre", "mlp.hook_pre_linear", "mlp.hook_post",
    "hook_mlp_out", "hook_resid_post", "hook_normalized_resid_post", "ln_final.hook_normalized",
};
}  // namespace

bool hook_is_global(Hook hook) { return hook <= Hook::kEmbedNormalized || hook == Hook::kLnFinal; }

std::string hook_name(Hook hook, int layer, bool encoder) {
  const char* name = kNames[static_cast<int>(hook)];
  if (encoder && hook < Hook::kEmbedNormalized) return "embed." + std::string(name);
  return hook_is_global(hook) ? std::string(name) : "blocks." + std::to_string(layer) + "." + name;
}

bool hook_is_writable(Hook hook) { return (hook < Hook::kQ || hook > Hook::kPattern) && hook != Hook::kLn1PostScale; }

}  // namespace mh
