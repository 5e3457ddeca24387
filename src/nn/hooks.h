// Named activations, as TransformerLens names them (blocks.3.attn.hook_z): each family's forward
// pass hands every named point to the run's HookVisitor, which may read it (capture) or change it
// in place (intervene). The interpretability methods (src/interpret/) and the JS API's capture /
// intervene options are visitors; a run without one pays a null check per point.
// docs/hooks.md has the table of names against TransformerLens's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mh {

enum class Hook : uint8_t {
  // Before the blocks (layer −1 in hook_id).
  kEmbed,           // hook_embed: token embeddings (n × d; Gemma's scaled by √d)
  kPosEmbed,        // hook_pos_embed: learned position embeddings (n × d)
  kTokenTypeEmbed,  // hook_token_type_embed: BERT's token-type embeddings (n × d)
  kEmbedNormalized, // embed.ln.hook_normalized: an encoder's embedding LayerNorm (n × d)
  // In block l.
  kResidPre,        // blocks.l.hook_resid_pre (n × d)
  kLn1,             // blocks.l.ln1.hook_normalized (n × d; BERT: after the attention's residual)
  kQ, kK, kV,       // blocks.l.attn.hook_q / hook_k / hook_v (n × heads × d_head; k, v: kv heads)
  kRotQ, kRotK,     // blocks.l.attn.hook_rot_q / hook_rot_k: after q/k norms and rotary (rotary families)
  kAttnScores,      // blocks.l.attn.hook_attn_scores: scaled, masked (−inf), heads × n × n_k
  kPattern,         // blocks.l.attn.hook_pattern: heads × n × n_k
  kZ,               // blocks.l.attn.hook_z: each head's output before W_O (n × heads × d_head)
  kLn1PostScale,    // blocks.l.ln1_post.hook_scale: a post-attention RMSNorm's rms of each row (n × 1; Gemma 3)
  kAttnOut,         // blocks.l.hook_attn_out: what the attention adds to the residual (n × d)
  kResidMid,        // blocks.l.hook_resid_mid (n × d; none in a parallel block)
  kLn2,             // blocks.l.ln2.hook_normalized (n × d)
  kMlpPre,          // blocks.l.mlp.hook_pre: before the activation (gated: the gate) (n × d_mlp)
  kMlpPreLinear,    // blocks.l.mlp.hook_pre_linear: a gated MLP's other branch (n × d_mlp)
  kMlpPost,         // blocks.l.mlp.hook_post: after the activation (and gate) (n × d_mlp)
  kMlpOut,          // blocks.l.hook_mlp_out: what the MLP adds to the residual (n × d)
  kResidPost,       // blocks.l.hook_resid_post (n × d)
  kNormalizedResidPost,  // blocks.l.hook_normalized_resid_post: a post-LN block's output (BERT)
  // After the blocks (layer −1).
  kLnFinal,         // ln_final.hook_normalized (n × d)
  kCount
};

constexpr int kHookKinds = static_cast<int>(Hook::kCount);

// Whether a hook sits outside the blocks (its layer is −1).
bool hook_is_global(Hook hook);
// "blocks.3.attn.hook_z", "hook_embed". An encoder's embeddings are one module in TransformerLens's
// HookedEncoder (BertEmbed): with `encoder`, "embed.hook_embed", "embed.hook_pos_embed" …
std::string hook_name(Hook hook, int layer, bool encoder = false);
// One number per (hook, layer): kind + kHookKinds · (layer + 1), layer −1 for the global ones.
inline int hook_id(Hook hook, int layer) { return static_cast<int>(hook) + kHookKinds * (layer + 1); }
// Whether a visitor may change a hook's values and the run go on from them. The attention's inner
// values (q, k, v, scores, pattern) are computed inside multihead_attention_forward, and a norm's
// scale is computed beside it: those are only read.
bool hook_is_writable(Hook hook);

// What a run hands its visitor. wants() is asked first (cheaply, at every point); visit() only
// where it said yes. shape: the dimensions of data, row-major (2 or 3 of them).
class HookVisitor {
 public:
  enum Mode : int { kNone = 0, kRead = 1, kWrite = 2 };
  virtual ~HookVisitor() = default;
  // A combination of kRead and kWrite: what this visitor does at (hook, layer).
  virtual int wants(Hook hook, int layer) const = 0;
  virtual void visit(Hook hook, int layer, float* data, const std::vector<int>& shape) = 0;
};

}  // namespace mh
