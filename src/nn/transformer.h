// A pretrained transformer from a Hugging Face checkpoint. config.json's model_type picks its
// family (nn/families/: one file each, naming its config keys, its tensors and its forward pass);
// this file has what every family shares: checking a run, an attention block, the key/value cache,
// the output head, sampling. Every attention layer runs through multihead_attention_forward.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/attention.h"
#include "nn/tensor.h"

namespace mh {

struct Family;  // nn/families/family.h
class Transformer;
enum class Activation { kGeluTanh, kGeluErf, kRelu, kSilu };

struct TransformerConfig {
  std::string model_type;         // as config.json says: gpt2, bert, llama, gpt_neox …
  const Family* family = nullptr;  // what model_type maps to (nn/families/families.cpp)
  int layers = 0, heads = 0, kv_heads = 0, d_model = 0, head_dim = 0, d_ff = 0;
  int vocab = 0, max_positions = 0, type_vocab = 0;
  float norm_eps = 1e-5f;
  Activation activation = Activation::kGeluTanh;
  Activation head_activation = Activation::kGeluErf;  // an MLM head's transform (BERT-style encoders)
  bool causal = true;
  bool qkv_bias = false, o_bias = false, mlp_bias = false;
  bool tied = true;              // the output head is the token embedding
  bool head_transform = false;   // BERT's MLM head: no head unless its dense layer is in the checkpoint
  float attention_scale = 0.0f;  // 0: 1/sqrt(head_dim)
  bool scale_by_layer = false;   // GPT-2's scale_attn_by_inverse_layer_idx: ÷ (layer + 1)
  // A causal window: key j is out of query i's reach when i − j ≥ sliding_window (0 = none), in
  // the layers sliding_layers flags (empty: every layer). Mistral, GPT-Neo's local layers, Gemma 3.
  int sliding_window = 0;
  std::vector<uint8_t> sliding_layers;
  // Rotary positions: rope_inv_freq has rope_dims/2 ≤ head_dim/2 entries (fewer: partial rotary,
  // GPT-NeoX), scaling folded in; rope_local_inv_freq, where set, replaces it in the sliding layers
  // (Gemma 3's rope_local_base_freq).
  std::vector<float> rope_inv_freq, rope_local_inv_freq;
  float rope_attention_factor = 1.0f;
  bool parallel_residual = false;  // x + attn(norm1 x) + mlp(norm2 x) (GPT-NeoX)
  float logit_softcap = 0.0f;      // logits = cap · tanh(logits / cap) (Gemma's final_logit_softcapping); 0 = none
  // RoBERTa's positions: a token's position is pad_token + 1 + (non-pad tokens before it), a pad
  // token's is pad_token; the table has max_positions + pad_token + 1 rows. −1 = positions from 0.
  int pad_token = -1;
};

// The tensors of one model, as the forward pass reads them. Matrices of projections are [in][out]
// (X·W); embeddings are [vocab][d] and the output head is [d][vocab] (X·W again), so a token
// embedding tied to it is stored [d][vocab] too (embedding_transposed). Vectors (norms, biases)
// are float32.
// Null where the architecture or the checkpoint has none.
struct TransformerWeights {
  const Tensor *token_embedding = nullptr, *position_embedding = nullptr, *type_embedding = nullptr;
  const Tensor *embedding_norm_w = nullptr, *embedding_norm_b = nullptr;
  bool embedding_transposed = false;
  struct Layer {
    const Tensor *norm1_w, *norm1_b, *wq, *wk, *wv, *wo, *bq, *bk, *bv, *bo;
    const Tensor *norm2_w, *norm2_b, *w_up, *b_up, *w_gate, *b_gate, *w_down, *b_down;
    // Per-head RMSNorms of queries and keys (Qwen3, Gemma 3) and norms of the attention's and the
    // MLP's outputs before they join the residual (Gemma 3).
    const Tensor *q_norm, *k_norm, *post_attention_norm, *post_mlp_norm;
  };
  std::vector<Layer> layers;
  const Tensor *final_norm_w = nullptr, *final_norm_b = nullptr;
  // BERT's masked-LM head: dense → activation → LayerNorm, then the output head.
  const Tensor *head_dense_w = nullptr, *head_dense_b = nullptr, *head_norm_w = nullptr, *head_norm_b = nullptr;
  const Tensor *output = nullptr, *output_bias = nullptr;  // null output: no LM head (logits null)
};

// What one forward call returns, beyond the final hidden state it always computes.
struct RunRequest {
  const int32_t* token_types = nullptr;      // n, BERT only (null = all 0)
  bool logits = true;                        // rows × vocab (ignored without an LM head)
  // Which rows get logits (each 0 … n−1, in the order given); null = every row. The output head is
  // a vocab × d product per row, so a view that shows one prediction asks for one row.
  const int32_t* logit_rows = nullptr;
  int logit_row_count = 0;
  const uint8_t* attention_layers = nullptr; // layers flags: which layers' attention to return
  int first_head = 0, heads = 0;             // and which heads of them (heads = 0: none)
  bool hidden_states = false;                // (layers + 1) × n × d, as transformers' hidden_states
  // The final hidden state of every row (RunResult::last_hidden, n × d). False: past the last
  // layer's attention only the rows logits are asked for are computed (none without logits), and
  // last_hidden holds just those, in the order asked. The last MLP is 2/3 of a layer's weights, so
  // a view that shows attention and one prediction skips most of a layer's work over every other row.
  bool last_hidden = true;
  bool value_norms = false;                  // layers × heads × n_k: ‖v_j W_O^h‖
  const uint8_t* head_enabled = nullptr;     // layers × heads, 0 = switched off (ablation)
  bool use_cache = false;                    // append to the key/value cache (causal models)
  // ---- for the interpretability methods (interpret/attribution.h, interpret/patching.h) ----
  // ≥ 0: RunResult::components holds what each part writes into the residual at this row.
  int component_position = -1;
  bool head_outputs = false;  // RunResult::head_outputs: layers × n × (heads · head_dim), before W_O
  bool mlp_outputs = false;   // RunResult::mlp_outputs: layers × n × d, each MLP's write (post-norm, bias included)
  // RunResult::contributions: layers × n × n, token j's share of position i's row after each
  // attention block and its residual (interpret/contributions.h); needs every head of every layer.
  bool contributions = false;
  const struct ActivationPatch* patch = nullptr;  // one activation replaced (below)
  // Starts at layer first_layer with the residual entering it (n × d; a run's hidden_states[l]):
  // a patched run recomputes only the layers from the patched one on. Decoders only.
  int first_layer = 0;
  const float* resume_residual = nullptr;
};

// One activation of a run replaced by another run's (activation patching): a head's output before
// W_O at every position (values n × head_dim), or an MLP's write at every position (n × d).
struct ActivationPatch {
  enum class Kind { kHead, kMlp } kind = Kind::kHead;
  int layer = 0, head = 0;
  const float* values = nullptr;
};

// Where RunResult::components keeps each part's d-vector: the embeddings (positions included),
// then for each layer its heads, the attention's output bias, the MLP's write without its bias,
// and that bias. A norm between a block and the residual (Gemma 3's post-norms) is folded in: a
// head's share is scaled by the factor the norm applies to the whole attention output.
struct ComponentLayout {
  int d, heads;
  int64_t size(int layers) const { return int64_t{d} * (1 + int64_t{layers} * (heads + 3)); }
  int64_t embeddings() const { return 0; }
  int64_t head(int layer, int h) const { return int64_t{d} * (1 + int64_t{layer} * (heads + 3) + h); }
  int64_t attention_bias(int layer) const { return head(layer, heads); }
  int64_t mlp(int layer) const { return head(layer, heads + 1); }
  int64_t mlp_bias(int layer) const { return head(layer, heads + 2); }
};

struct RunResult {
  int n = 0, n_k = 0;  // tokens in this call; tokens attended over (cached + new)
  int reused = 0;      // run_reusing_prefix: leading tokens taken from the previous run, not computed
  std::vector<float> logits, attentions, hidden_states, last_hidden, value_norms;
  std::vector<float> components, head_outputs, mlp_outputs, contributions;  // as RunRequest asks
};

// What a family's forward pass (nn/families/*.cpp) works with: the model's config and weights, the
// run's ids and request, scratch activations reused across runs, and the steps every family shares.
class ForwardPass {
 public:
  const TransformerConfig& config;
  const TransformerWeights& weights;
  const int32_t* ids;
  int n;               // tokens in this call
  int first_position;  // of ids[0]: the tokens already in the key/value cache
  // Scratch for the family's own steps, n × d_model each, reused across runs: the residual stream
  // x and two more (h, g).
  float *x, *h, *g;

  // x (n × d) = the token embeddings of ids.
  void embed_tokens(float* x);
  // x (n × d) += the attention block of `layer` over input (n × d; may be x), through the layer's
  // post_attention_norm (an RMSNorm) where it has one: the layer's attention weights and value
  // norms go where the request asks. After the last layer's, only the rows the rest of the pass
  // needs stay, at the front of x (the rows logits are asked for, unless every row's hidden state
  // is): returns how many rows go on, and keeps the same rows of `also` (another n × d buffer
  // the rest of the layer reads: GPT-NeoX's parallel MLP input).
  int attention_block(float* x, const float* input, int n, int layer, float* also = nullptr);
  // x (n × d) += act(input · W_up + b_up) · W_down + b_down: layer's MLP over input (n × d; may be x).
  void mlp(float* x, const float* input, const TransformerWeights::Layer& layer, int n);
  // x (n × d) += (act(input · W_gate + b_gate) ⊙ (input · W_up + b_up)) · W_down + b_down, through
  // the layer's post_mlp_norm (an RMSNorm) where it has one: SwiGLU with silu, GeGLU with a GELU.
  void gated_mlp(float* x, const float* input, const TransformerWeights::Layer& layer, int n);
  // hidden_states[index] = x (n × d), where the request asks for hidden states (index 0: the
  // embeddings, which RunResult::components also takes).
  void record_hidden(const float* x, int n, int index);
  // A patched run that starts at a later layer (RunRequest::first_layer): x (n × d) = the residual
  // entering it, and true (the family then skips its embedding); false for a run from the start.
  bool resume(float* x);
  int first_layer() const { return request_.resume_residual ? request_.first_layer : 0; }
  // The final hidden state (RunResult::last_hidden) = x (n × d).
  void keep_last_hidden(const float* x, int n);
  // A decoder's end, after its final norm over x (n × d): the last hidden state recorded and
  // kept, and the output head over it.
  void finish(const float* x, int n);
  // Whether the request asks for logits and the model has an output head.
  bool wants_logits() const;
  // logits = the output head over the rows of x (n × d) the request asks for.
  void output_head(const float* x, int n);
  const RunRequest& request() const { return request_; }

 private:
  friend class Transformer;
  ForwardPass(Transformer& model, RunResult& out, const int32_t* ids, int n, const RunRequest& request);
  // The interpretability hooks of a block's output a_ (n × d) before it joins the residual.
  void capture_attention(int layer, int n);  // components, head outputs; a head patch
  void capture_mlp(int layer, int n, bool normed);  // components, MLP outputs; an MLP patch
  void contributions(const float* residual, int layer, int n);  // RunResult::contributions of a layer
  Transformer& model_;
  RunResult& out_;
  const RunRequest& request_;
  float *a_, *up_;  // the blocks' own scratch: n × d_model, n × d_ff
};

class Transformer {
 public:
  // Takes the tensors named as the family's params() names them (nn/families/family.h).
  Transformer(TransformerConfig config, std::map<std::string, Tensor> tensors);
  const TransformerConfig& config() const { return config_; }
  int64_t parameter_count() const;
  int64_t weight_bytes() const;
  // The type the weight matrices are kept in (the checkpoint's, or what the loader narrowed to).
  WeightType matrix_type() const { return weights_.layers.empty() ? WeightType::kF32 : weights_.layers[0].wq->type; }
  bool has_lm_head() const { return weights_.output != nullptr; }
  const TransformerWeights& weights() const { return weights_; }
  // logits (rows × vocab) = what the model's end makes of residual rows x (rows × d): its final
  // norm, an MLM head's transform, the output head, softcapping (the logit lens). Needs an LM head.
  void head_of_residual(float* logits, const float* x, int rows);

  // Bytes a run over n tokens (cached tokens included in n_total) needs beyond the weights.
  double run_bytes(int n, int n_total, const RunRequest& request) const;
  // "" and results, or what is wrong (ids out of range, too many tokens, over the memory budget,
  // a float32 overflow). Checked before anything is allocated.
  std::string run(RunResult& out, const int32_t* ids, int n, const RunRequest& request);

  // run(), for a text that is edited and run again (a page updating as the user types), reusing
  // the previous run_reusing_prefix's keys and values for the tokens the two share from the
  // start: only the tokens after them are computed. In a causal model a row depends on the tokens
  // up to it only, so the shared rows' attentions are the previous run's and the results equal a
  // full run's (out.reused says how many rows were taken). Bidirectional models, and requests for
  // every row's hidden states, run in full. Uses the key/value cache (reset_cache() or a run
  // with use_cache in between starts it over).
  std::string run_reusing_prefix(RunResult& out, const int32_t* ids, int n, const RunRequest& request);

  // The key/value cache for decoding: reset() empties it and reserves room for `tokens`.
  void reset_cache(int tokens);
  int cached_tokens() const { return caches_.empty() ? 0 : caches_[0].length; }

  // Runs asking for more bytes than this are refused (the wasm layer sets what the heap has left).
  double memory_limit = 4.0 * 1024 * 1024 * 1024;

 private:
  friend class ForwardPass;
  // One attention block: x (n × d) → y (n × d), with the layer's attention and value norms
  // written into out where the request asks. Returns false on a float32 overflow.
  bool attention(float* y, const float* x, int n, int layer, const RunRequest& request, RunResult& out);
  // "" or what is wrong with a run's ids, token types, logit rows or heads.
  std::string input_error(const int32_t* ids, int n, const RunRequest& request) const;
  // Whether a run over n tokens carries only the rows logits are asked for past the last layer's
  // attention (request.last_hidden and hidden_states off).
  bool keeps_head_rows_only(int n, const RunRequest& request) const;
  // After the last layer's attention, x (n × d) is the residual stream: keeps the rows the rest of
  // the pass needs at the front of x, in the order asked, and returns how many.
  int rows_after_last_attention(float* x, int n, const RunRequest& request, float* also = nullptr);
  // head_rows_ (logit_row_count × d) = the rows of x (n × d) that request.logit_rows names, in order.
  void gather_logit_rows(const float* x, const RunRequest& request);
  // The output head over the rows of x (n × d) the request asks logits for (all of x when
  // rows_after_last_attention kept only those).
  void output_head(RunResult& out, const float* x, int n, const RunRequest& request);
  void record_hidden(RunResult& out, const float* x, int n, int index, const RunRequest& request);
  // x_ (n × d) = the token embeddings of ids.
  void embed_tokens(float* x, const int32_t* ids, int n);

  TransformerConfig config_;
  std::map<std::string, Tensor> tensors_;
  TransformerWeights weights_;
  std::vector<KvCache> caches_;
  // What run_reusing_prefix kept of its last run, whose tokens the caches hold: the ids, what was
  // asked (a different selection or set of switched-off heads cannot reuse it), and its attentions
  // (layers asked × heads × n × n), the rows a next run takes.
  struct PrefixRun {
    bool valid = false;
    std::vector<int32_t> ids;
    std::vector<uint8_t> attention_layers, head_enabled;
    int first_head = 0, heads = 0;
    std::vector<float> attentions;
  } prefix_;
  // How many leading tokens of ids a run_reusing_prefix over them can take from prefix_.
  int reusable_prefix(const int32_t* ids, int n, const RunRequest& request) const;
  Workspace ws_;
  bool overflow_ = false;
  // Scratch reused across calls: activations, W_O with switched-off heads' rows zeroed (in its
  // stored type), one head's values moved through its factor of W_O (value norms).
  std::vector<float> x_, h_, g_, a_, up_, gate_, head_rows_, moved_;
  std::vector<uint8_t> wo_ablated_;
  // Value norms: layers × heads factors (d_k × d_k, norm_preserving_factor) of W_O's rows of each
  // head, all made the first time a run asks for value norms (empty until then).
  std::vector<float> value_norm_factors_;
};

// Picks a token from one row of logits: greedy when temperature is 0, else a sample from
// softmax(logits / temperature) restricted to the top_k most likely (top_k 0 = all). state is a
// SplitMix64 state (advanced).
int sample_token(const float* logits, int vocab, float temperature, int top_k, uint64_t& state);

}  // namespace mh
