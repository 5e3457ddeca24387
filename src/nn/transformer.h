// A pretrained transformer from a Hugging Face checkpoint. config.json's model_type picks its
// family (nn/families/: one file each, naming its config keys, its tensors and its forward pass);
// this file has what every family shares: the model (read-only weights), the run context that runs
// it (caches, scratch), checking a run, an attention block, the output head, sampling. Every
// attention layer runs through multihead_attention_forward.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/attention.h"
#include "nn/hooks.h"
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
  // Image models (ViT, DINOv2): image_size > 0. Their input is pixels (channels × H × W), cut into
  // patch_size² patches after a CLS row; the position table is for a square grid of
  // image_size / patch_size patches a side, resampled to other grids. vocab is the classifier's
  // labels (no classifier: no output head).
  int image_size = 0, patch_size = 0, channels = 0;
  // Encoder-decoders (T5, BART, Marian; nn/encoder_decoder.h): decoder_layers > 0, and `layers`,
  // `heads`, `d_ff` are the encoder's (the decoder's are the same sizes in every family here).
  // They run through EncoderDecoderContext, not RunContext.
  int decoder_layers = 0;
  int relative_buckets = 0, relative_max_distance = 0;  // T5's relative position bias (0: none)
  bool sinusoidal_positions = false;  // Marian: positions computed, not stored
  int position_offset = 0;            // BART's learned positions start at row 2
  float embed_scale = 1.0f;           // √d where scale_embedding
  float output_scale = 1.0f;          // T5: the decoder's output × d^-½ before the head
  bool post_norm = false;             // BART, Marian: x = norm(x + sublayer(x)); T5: x + sublayer(norm(x))
  bool gated = false;                 // T5's gated-gelu: act(x W_gate) ⊙ x W_up
  // Rows before the patches: the CLS token (ViT, DINOv2), and DeiT's distillation token after it.
  int prefix_tokens = 1;
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
    // Layer scale (DINOv2): the attention's and the MLP's outputs ⊙ these (d) before the residual.
    const Tensor *attn_scale, *mlp_scale;
  };
  std::vector<Layer> layers;
  const Tensor *final_norm_w = nullptr, *final_norm_b = nullptr;
  // BERT's masked-LM head: dense → activation → LayerNorm, then the output head.
  const Tensor *head_dense_w = nullptr, *head_dense_b = nullptr, *head_norm_w = nullptr, *head_norm_b = nullptr;
  const Tensor *output = nullptr, *output_bias = nullptr;  // null output: no LM head (logits null)
  // Image models: the patch embedding (a stride-P convolution as a product, C·P·P × d, and its
  // bias) and the CLS token (d).
  const Tensor *patch_w = nullptr, *patch_b = nullptr, *cls_token = nullptr;
  // DeiT: the distillation token (d), and its teacher's head (d × labels and its bias): with it the
  // logits are the mean of the output head on the CLS row and this head on the distillation row.
  const Tensor *dist_token = nullptr, *dist_output = nullptr, *dist_output_bias = nullptr;
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
  // The final hidden state of every row (RunResult::last_hidden_state, n × d). False: past the
  // last layer's attention only the rows logits are asked for are computed (none without logits),
  // and last_hidden_state holds just those, in the order asked. The last MLP is 2/3 of a layer's
  // weights, so a view that shows attention and one prediction skips most of a layer's work.
  bool last_hidden_state = true;
  bool value_norms = false;                  // layers × heads × n_k: ‖v_j W_O^h‖
  const uint8_t* disabled_heads = nullptr;   // layers × heads, 1 = switched off (ablation)
  bool use_cache = false;                    // append to the key/value cache (causal models)
  // Named activations (nn/hooks.h): read or changed in place by this visitor. Null: none.
  HookVisitor* hooks = nullptr;
  // Starts at layer first_layer with the residual entering it (n × d; a run's hidden_states[l]):
  // a patched run recomputes only the layers from the patched one on. Decoders only.
  int first_layer = 0;
  const float* resume_residual = nullptr;
  // An image model's input: channels × image_height × image_width floats (as the image processor
  // makes them); n must then be 1 + the whole patches. The ids are not read.
  const float* pixels = nullptr;
  int image_height = 0, image_width = 0;
};

// A run's attentions, filled over the threads (37.7 MB at 256 tokens of GPT-2 small, 5 ms
// zero-filled on one): resize() leaves them uninitialized (nn/tensor.h, UninitializedAllocator).
using FloatBuffer = std::vector<float, UninitializedAllocator<float>>;

struct RunResult {
  int n = 0, n_k = 0;  // tokens in this call; tokens attended over (cached + new)
  int reused = 0;      // run_reusing_prefix: leading tokens taken from the previous run, not computed
  std::vector<float> logits, hidden_states, last_hidden_state, value_norms;
  FloatBuffer attentions;
};

// How run()'s refusal for memory begins: a caller that passed a cheap lower bound of the free
// memory can ask again with the exact figure.
constexpr const char* kMemoryRefusal = "this run needs";

class RunContext;

// What a family's forward pass (nn/families/*.cpp) works with: the model's config and weights, the
// run's ids and request, scratch activations the context reuses across runs, and the steps every
// family shares. Each step hands its named activations to the request's hooks (nn/hooks.h).
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

  // x (n × d) = the token embeddings of ids, times scale (Gemma's √d), then hook_embed.
  void embed_tokens(float* x, float scale = 1.0f);
  // x (n × d) += rows of table: consecutive from first_row (rows null) or rows[t] (the hook names
  // which: hook_pos_embed, hook_token_type_embed).
  void add_embedding(Hook hook, float* x, const Tensor& table, const int32_t* rows, int first_row);
  // out (n × d) = the family's norm (Family::norm) of in (may alias out) with the weights the hook
  // names: kLn1 (norm1), kLn2 and kNormalizedResidPost (norm2), kLnFinal (the final norm),
  // kEmbedNormalized (the embedding norm); then that hook.
  void norm(Hook hook, int layer, float* out, const float* in, int n);
  // A named activation of n rows × cols (or n × heads × cols) handed to the hooks, if they want it.
  void hook(Hook hook, int layer, float* data, int n, int cols, int heads = 0);
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
  // hook_resid_pre of layer over x (n × d).
  void begin_layer(int layer, float* x, int n) { hook(Hook::kResidPre, layer, x, n, config.d_model); }
  // hook_resid_post of layer over x (n × d), and x recorded as the next hidden state (not after the
  // last layer: transformers' last hidden state is after the final norm).
  void end_layer(int layer, float* x, int n);
  // hidden_states[index] = x (n × d), where the request asks for hidden states (index 0: the
  // embeddings).
  void record_hidden(const float* x, int n, int index);
  // A patched run that starts at a later layer (RunRequest::first_layer): x (n × d) = the residual
  // entering it, and true (the family then skips its embedding); false for a run from the start.
  bool resume(float* x);
  int first_layer() const { return request_.resume_residual ? request_.first_layer : 0; }
  // The final hidden state (RunResult::last_hidden_state) = x (n × d).
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
  friend class RunContext;
  ForwardPass(RunContext& context, RunResult& out, const int32_t* ids, int n, const RunRequest& request);
  int wants(Hook hook, int layer) const { return request_.hooks ? request_.hooks->wants(hook, layer) : 0; }
  // blocks.l.ln1_post.hook_scale: the rms of each row of a_ (n × d) that the post-attention norm divides by.
  void hook_post_norm_scale(int layer, int n);
  // hook_z, where the hooks change it: a_ (n × d) += (z' − z) · W_O, as if the heads had given z'.
  void intervene_z(int layer, int n);
  RunContext& context_;
  RunResult& out_;
  const RunRequest& request_;
  float *a_, *up_;  // the blocks' own scratch: n × d_model, n × d_ff
};

// The model: config, weights and family, read-only once loaded, shared by any number of
// RunContexts (llama.cpp's llama_model beside its llama_context).
class Transformer {
 public:
  // Takes the tensors named as the family's params() names them (nn/families/family.h).
  Transformer(TransformerConfig config, std::map<std::string, Tensor> tensors);
  const TransformerConfig& config() const { return config_; }
  int64_t parameter_count() const;
  int64_t weight_bytes() const;
  // The type the weight matrices are kept in (the checkpoint's, or what the loader narrowed to).
  WeightType matrix_type() const {
    if (!weights_.layers.empty()) return weights_.layers[0].wq->type;
    return weights_.token_embedding ? weights_.token_embedding->type : WeightType::kF32;  // an encoder-decoder
  }
  bool has_lm_head() const { return weights_.output != nullptr; }
  const TransformerWeights& weights() const { return weights_; }
  // A tensor by the name the family's params() gave it, or null (an encoder-decoder's decoder
  // binds its own: nn/encoder_decoder.h).
  const Tensor* tensor(const std::string& name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
  }
  // logits (rows × vocab) = what the model's end makes of residual rows x (rows × d): its family's
  // final norm, an MLM head's transform, the output head, softcapping (the logit lens). Needs an
  // LM head.
  void head_of_residual(float* logits, const float* x, int rows) const;
  // "" or what is wrong with a run's ids, token types, logit rows or heads.
  std::string input_error(const int32_t* ids, int n, const RunRequest& request) const;

 private:
  TransformerConfig config_;
  std::map<std::string, Tensor> tensors_;
  TransformerWeights weights_;
};

// One line of runs over a model: its key/value caches, what prefix reuse kept, scratch. A model
// can have several (a page types in one while a patching run goes on in another); one context is
// used by one caller at a time.
class RunContext {
 public:
  explicit RunContext(const Transformer& model);
  const Transformer& model() const { return model_; }
  const TransformerConfig& config() const { return model_.config(); }

  // Bytes a run over n tokens (cached tokens included in n_total) needs beyond the weights.
  double run_bytes(int n, int n_total, const RunRequest& request) const;
  // The most bytes run_reusing_prefix over n tokens needs: a full run's and caches made anew.
  double reusing_bytes(int n, const RunRequest& request) const;
  // "" and results, or what is wrong (ids out of range, too many tokens, over memory_budget bytes,
  // a float32 overflow). Checked before anything is allocated; a refusal for memory begins with
  // kMemoryRefusal.
  std::string run(RunResult& out, const int32_t* ids, int n, const RunRequest& request,
                  double memory_budget = kNoMemoryBudget);

  // run(), for a text that is edited and run again (a page updating as the user types), reusing
  // the previous run_reusing_prefix's keys and values for the tokens the two share from the
  // start: only the tokens after them are computed. In a causal model a row depends on the tokens
  // up to it only, so the shared rows' attentions are the previous run's and the results equal a
  // full run's (out.reused says how many rows were taken). Bidirectional models, requests for
  // every row's hidden states and runs with hooks run in full. Uses the key/value cache
  // (reset_cache() or a run with use_cache in between starts it over).
  std::string run_reusing_prefix(RunResult& out, const int32_t* ids, int n, const RunRequest& request,
                                 double memory_budget = kNoMemoryBudget);

  // The key/value cache for decoding: reset() empties it and reserves room for `tokens`.
  void reset_cache(int tokens);
  int cached_tokens() const { return caches_.empty() ? 0 : caches_[0].length; }

  static constexpr double kNoMemoryBudget = 4.0 * 1024 * 1024 * 1024;

 private:
  friend class ForwardPass;
  // One attention block: x (n × d) → y (n × d), with the layer's attention and value norms
  // written into out where the request asks. Returns false on a float32 overflow.
  bool attention(float* y, const float* x, int n, int layer, const RunRequest& request, RunResult& out);
  // The attention's inner hooks (q, k, v, scores, pattern) of a layer that has just run.
  void attention_hooks(int layer, int n, const Config& mha, const MaskSpec& mask, const KvCache* cache,
                       float* pattern, const RunRequest& r);
  // Whether a run over n tokens carries only the rows logits are asked for past the last layer's
  // attention (request.last_hidden_state, hidden_states and late hooks off).
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

  const Transformer& model_;
  std::vector<KvCache> caches_;
  // What run_reusing_prefix kept of its last run, whose tokens the caches hold: the ids, what was
  // asked (a different selection or set of switched-off heads cannot reuse it), and its attentions
  // (layers asked × heads × n × n), the rows a next run takes.
  struct PrefixRun {
    bool valid = false;
    std::vector<int32_t> ids;
    std::vector<uint8_t> attention_layers, disabled_heads;
    int first_head = 0, heads = 0;
    FloatBuffer attentions;
  } prefix_;
  // How many leading tokens of ids a run_reusing_prefix over them can take from prefix_.
  int reusable_prefix(const int32_t* ids, int n, const RunRequest& request) const;
  Workspace ws_;
  bool overflow_ = false;
  // Scratch reused across calls: activations, W_O with switched-off heads' rows zeroed (in its
  // stored type), one head's values moved through its factor of W_O (value norms), what the hooks
  // read (an embedding table's rows, a layer's pattern or scores, hook_z before a change).
  std::vector<float> x_, h_, g_, a_, up_, gate_, head_rows_, moved_, hook_rows_, hook_pattern_, hook_scratch_;
  std::vector<uint8_t> wo_ablated_;
  // Value norms: layers × heads factors (d_k × d_k, norm_preserving_factor) of W_O's rows of each
  // head, all made the first time a run asks for value norms (empty until then).
  std::vector<float> value_norm_factors_;
};

// The names of every activation a run of this model hands its hooks, in the order a run visits
// them, with their hook_id()s: from a one-token run in a context of its own, so the list is exactly
// what runs hand out.
std::vector<std::pair<int, std::string>> hook_names(const Transformer& model);

// Picks a token from one row of logits: greedy when temperature is 0, else a sample from
// softmax(logits / temperature) restricted to the top_k most likely (top_k 0 = all). state is a
// SplitMix64 state (advanced).
int sample_token(const float* logits, int vocab, float temperature, int top_k, uint64_t& state);

}  // namespace mh
