// Encoder-decoder transformers (T5, BART, Marian: nn/families/t5.cpp, bart.cpp, marian.cpp). The
// encoder reads the source once; the decoder reads its own tokens causally and, through
// cross-attention, the encoder's output. What they add to the decoder-only models: relative
// position buckets, sinusoidal positions, and a run context with two stacks, whose decoder keeps
// a self-attention key/value cache and the cross-attention keys and values of the source (computed
// once per source: generation's steps reuse them). Every attention goes through
// multihead_attention_forward.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/attention.h"
#include "nn/transformer.h"

namespace mh {

// ---- the operations encoder-decoders add ----

// T5's bucket of a relative position (key − query): the first half of the buckets exact, the
// rest logarithmic up to max_distance; bidirectional gives each sign half the buckets, causal
// (the decoder) folds future keys into bucket 0.
int relative_position_bucket(int relative, bool bidirectional, int buckets, int max_distance);
// bias (heads × n_q × n_k) = table[bucket(j − (first_query + i))][h], table buckets × heads.
void relative_position_bias(float* bias, const Tensor& table, int heads, int first_query, int n_q, int n_k,
                            bool bidirectional, int buckets, int max_distance);
// x (n × d) += Marian's sinusoidal positions first_position …: column j < d/2 is
// sin(p / 10000^(2j/d)), column d/2 + j is cos of the same angle (computed in float64, as the table
// transformers builds with numpy).
void add_sinusoidal_positions(float* x, int first_position, int n, int d);

// ---- the weights, as the families' params() name them ----

// "e3.wq" (encoder) or "d3.wq" (decoder): a layer's tensor; "e.positions": a stack's.
std::string stack_name(char stack, int layer, const char* what);
std::string stack_name(char stack, const char* what);

struct AttentionTensors {
  const Tensor *wq = nullptr, *wk = nullptr, *wv = nullptr, *wo = nullptr;
  const Tensor *bq = nullptr, *bk = nullptr, *bv = nullptr, *bo = nullptr;
};
struct Seq2SeqLayer {
  AttentionTensors self, cross;  // cross: the decoder's layers only
  // The norms before (T5) or after (BART, Marian) each sublayer.
  const Tensor *self_norm_w, *self_norm_b, *cross_norm_w, *cross_norm_b, *mlp_norm_w, *mlp_norm_b;
  const Tensor *w_up, *b_up, *w_gate, *w_down, *b_down;  // w_gate: gated MLPs (T5's gated-gelu)
};
struct Seq2SeqStack {
  std::vector<Seq2SeqLayer> layers;
  const Tensor *positions = nullptr;                               // learned (BART)
  const Tensor *embed_norm_w = nullptr, *embed_norm_b = nullptr;   // BART's layernorm_embedding
  const Tensor *final_norm_w = nullptr, *final_norm_b = nullptr;   // T5's final_layer_norm
  const Tensor *relative_bias = nullptr;                           // T5: buckets × heads
};
struct Seq2SeqWeights {
  const Tensor* embed = nullptr;  // shared by both stacks; [d][vocab] where tied (nn/families/family.h)
  bool embed_transposed = false;
  Seq2SeqStack encoder, decoder;
  const Tensor *output = nullptr, *output_bias = nullptr;  // BART's final_logits_bias
};
Seq2SeqWeights bind_seq2seq_weights(const Transformer& model);

// ---- named activations (read only) ----

// What a run can capture in each stack, named as TransformerLens names a block's parts, under
// "encoder." or "decoder." (seq2seq_hook_name).
enum class Seq2SeqHook : uint8_t {
  kResidPre,      // blocks.l.hook_resid_pre (n × d)
  kPattern,       // blocks.l.attn.hook_pattern (heads × n × n_k)
  kAttnOut,       // blocks.l.hook_attn_out: what self-attention adds to the residual (n × d)
  kCrossPattern,  // blocks.l.cross_attn.hook_pattern (heads × n × source): the decoder's
  kCrossAttnOut,  // blocks.l.hook_cross_attn_out (n × d): the decoder's
  kMlpOut,        // blocks.l.hook_mlp_out (n × d)
  kResidPost,     // blocks.l.hook_resid_post (n × d; post-LN blocks: after the block's last norm)
  kLnFinal,       // ln_final.hook_normalized (n × d; T5's final norm; layer −1)
  kZ,             // blocks.l.attn.hook_z: each head's output before W_O (n × heads × d_head)
  kCrossZ,        // blocks.l.cross_attn.hook_z (n × heads × d_head): the decoder's
  kCount
};
constexpr int kSeq2SeqHookKinds = static_cast<int>(Seq2SeqHook::kCount);
// One number per (hook, layer) within a stack: kind + kinds · (layer + 1), layer −1 for ln_final.
inline int seq2seq_hook_id(Seq2SeqHook hook, int layer) { return static_cast<int>(hook) + kSeq2SeqHookKinds * (layer + 1); }
// "decoder.blocks.3.cross_attn.hook_pattern", "encoder.ln_final.hook_normalized".
std::string seq2seq_hook_name(bool decoder, Seq2SeqHook hook, int layer);
// Every name a model's runs can capture, in the order a run visits them: (decoder?, id, name).
struct Seq2SeqHookName {
  bool decoder;
  int id;
  std::string name;
};
std::vector<Seq2SeqHookName> seq2seq_hook_names(const TransformerConfig& c);

// ---- a run ----

struct Seq2SeqRequest {
  bool attentions = true;      // every layer's and head's, self and cross
  bool hidden_states = false;  // (layers + 1) × n × d
  bool logits = true;          // the decoder's: rows × vocab
  bool last_row_only = false;  // logits of the last row only (a generation step)
  // Flags by seq2seq_hook_id: which of this stack's activations to copy into the result (null: none).
  const uint8_t* capture = nullptr;
  int capture_count = 0;
};
struct Seq2SeqResult {
  int n = 0, n_k = 0;  // rows in this call; self-attention keys (cached + new)
  // layers × heads × n × n_k; the decoder's cross_attentions layers × heads × n × source length.
  std::vector<float> self_attentions, cross_attentions, hidden_states, logits, last_hidden_state;
  std::map<int, std::vector<float>> captured;  // by seq2seq_hook_id
  std::map<int, std::vector<int>> captured_shapes;
};

class Seq2SeqPass;

class EncoderDecoderContext {
 public:
  explicit EncoderDecoderContext(const Transformer& model);
  const TransformerConfig& config() const { return model_.config(); }
  // The encoder over the source (n ids); its output stays for decode(), which computes each
  // layer's cross-attention keys and values from it once. "" or what is wrong.
  std::string encode(Seq2SeqResult& out, const int32_t* ids, int n, const Seq2SeqRequest& request,
                     double memory_budget = RunContext::kNoMemoryBudget);
  // The decoder over m ids against the encoded source: from the start (use_cache false), or after
  // the tokens its self-attention cache holds (a generation step). "" or what is wrong.
  std::string decode(Seq2SeqResult& out, const int32_t* ids, int m, const Seq2SeqRequest& request, bool use_cache,
                     double memory_budget = RunContext::kNoMemoryBudget);
  // Bytes a call over n rows with n_k self-attention keys needs beyond the weights (decoder: the
  // source's cross-attention too): what encode and decode refuse beyond their budget.
  double run_bytes(bool decoder, int n, int n_k, const Seq2SeqRequest& request) const;
  int source_length() const { return source_n_; }
  // logits (rows × vocab) = the decoder's output head over x (rows × d, after its final norm):
  // x · output_scale through the head, + output_bias.
  void head_of(float* logits, const float* x, int rows) const;
  const Seq2SeqWeights& weights() const { return weights_; }
  int cached_tokens() const { return self_caches_.empty() ? 0 : self_caches_[0].length; }
  // The most tokens a stack reads: its positions (T5's relative positions: any run that fits).
  int max_tokens() const;

 private:
  friend class Seq2SeqPass;
  const Transformer& model_;
  Seq2SeqWeights weights_;
  std::vector<float> encoded_;  // source n × d, the encoder's output
  int source_n_ = 0;
  std::vector<KvCache> self_caches_, cross_caches_;  // the decoder's layers
  bool cross_ready_ = false;
  Workspace ws_;
  std::vector<float> x_, h_, a_, up_, gate_, bias_, pattern_;
};

// What a family's encode and decode steps (Family::encode / decode) work with: one stack's
// weights and the run's rows, and the steps all three families share.
class Seq2SeqPass {
 public:
  const TransformerConfig& config;
  const Seq2SeqWeights& weights;
  const Seq2SeqStack& stack;
  const bool decoder;
  const int32_t* ids;
  int n, first_position;  // rows in this call; the position of row 0 (the cached tokens)
  float *x, *h;           // n × d scratch: the residual stream and a normed copy

  // x = the token embeddings · embed_scale, + the stack's positions (learned or sinusoidal), then
  // its embedding norm where it has one; hidden state 0.
  void embed();
  // out (n × d) = the family's norm of in (may alias) with weights w, b (b null: none).
  void norm(float* out, const float* in, const Tensor* w, const Tensor* b);
  // x (n × d) += the layer's self-attention over input (n × d): bidirectional in the encoder,
  // causal over the cache in the decoder, with the stack's relative position bias where it has one.
  void self_attention(float* x, const float* input, int layer);
  // x (n × d) += the layer's cross-attention from input (n × d) to the encoded source.
  void cross_attention(float* x, const float* input, int layer);
  // x (n × d) += the layer's MLP over input: act(in W_up + b) W_down + b, or gated.
  void mlp(float* x, const float* input, int layer);
  // hook_resid_pre of layer over x (n × d).
  void begin_layer(int layer, const float* x);
  // hook_resid_post of layer over x (n × d), and x recorded as hidden state layer + 1 (not after
  // the last layer: finish() records that one, after the stack's final norm).
  void end_layer(int layer, const float* x);
  // hidden_states[index] = x (n × d), where asked.
  void record_hidden(const float* x, int index);
  // The end of a stack over x, after its final norm: the last hidden state (hidden state L), and
  // the decoder's logits (x · output_scale through the head, + output_bias).
  void finish(const float* x);

 private:
  friend class EncoderDecoderContext;
  Seq2SeqPass(EncoderDecoderContext& context, Seq2SeqResult& out, const Seq2SeqRequest& request, bool decoder,
              const int32_t* ids, int n, int first_position);
  // The attention of one layer: y (n × d) = attention(xq over xkv) with the layer's tensors,
  // weights into `attention` (heads × n × n_k) where asked; cache null: none (the encoder). On a
  // float32 overflow y is NaN, which the context reports.
  void attend(float* y, float* attention, const float* input, const AttentionTensors& t, const float* xkv, int n_kv,
              const MaskSpec& mask, KvCache* cache);
  bool wants(Seq2SeqHook hook, int layer) const;
  // A copy of data (shape) into the result, where the request captures (hook, layer).
  void capture(Seq2SeqHook hook, int layer, const float* data, std::vector<int> shape);
  // Where a layer's attention weights go (heads × n × cols): the result's, a scratch buffer where
  // only a capture wants them, or null.
  float* attention_out(std::vector<float>& all, Seq2SeqHook hook, int layer, int cols);
  EncoderDecoderContext& context_;
  Seq2SeqResult& out_;
  const Seq2SeqRequest& request_;
  int layers_;
};

// ---- generation ----

// Greedy generation's rules from generation_config.json (then config.json), as transformers'
// logits processors apply them.
struct GenerationRules {
  std::vector<int> eos;     // eos_token_id (one or several)
  std::vector<int> banned;  // bad_words_ids of one token (Marian's pad)
  int no_repeat_ngram = 0;  // no_repeat_ngram_size (0: none)
  int forced_bos = -1, forced_eos = -1;
  int min_new_tokens = 0, max_new_tokens = 20;
};
// The next token after ids (the decoder start, then the tokens generated so far) from one row of
// logits (vocab), changed in place: banned tokens are out, and those that would repeat an n-gram
// of no_repeat_ngram tokens; below min_new_tokens every eos is out; the first new token is
// forced_bos and the last of max_new_tokens forced_eos where set; then the first largest.
int next_token(float* logits, int vocab, const std::vector<int32_t>& ids, const GenerationRules& rules);

}  // namespace mh
