// The three families, each in two short parts: the tensors it reads from a checkpoint, and its
// forward pass as a sequence of the same few operations (embedding, norm, matmul, attention,
// activation, residual add, output head).
#include "nn/architectures.h"

#include <cmath>

#include "nn/ops.h"

namespace mh {

namespace {
std::string layer_name(int l, const char* what) { return "h" + std::to_string(l) + "." + what; }

ParamSpec vec(std::string name, std::vector<std::string> sources, int64_t size, bool optional = false) {
  ParamSpec p;
  p.name = std::move(name);
  p.sources = std::move(sources);
  p.cols = size;
  p.matrix = false;
  p.optional = optional;
  return p;
}
ParamSpec mat(std::string name, std::vector<std::string> sources, int64_t rows, int64_t cols,
              Layout layout = Layout::kCopy) {
  ParamSpec p;
  p.name = std::move(name);
  p.sources = std::move(sources);
  p.rows = rows;
  p.cols = cols;
  p.layout = layout;
  return p;
}
// A table read a row at a time (embeddings), kept row-major rather than in panels.
ParamSpec rows_table(ParamSpec p) {
  p.panels = false;
  return p;
}
// The token embedding [vocab][d]. Tied to the output head, it is stored transposed (d × vocab):
// the head's product then reads it as a plain K × N matrix (gemm streams its rows contiguously,
// which decoding's memory bandwidth needs), and a lookup gathers a column instead of a row.
ParamSpec token_embedding(const TransformerConfig& c, const char* source) {
  if (c.tied) return mat("embed", {source}, c.d_model, c.vocab, Layout::kTranspose);
  return rows_table(mat("embed", {source}, c.vocab, c.d_model));
}
// A LayerNorm's weight and bias; old BERT checkpoints call them gamma and beta.
void norm(std::vector<ParamSpec>& out, const std::string& name, const std::string& source, int64_t d, bool bias = true) {
  out.push_back(vec(name + "_w", {source + ".weight", source + ".gamma"}, d));
  if (bias) out.push_back(vec(name + "_b", {source + ".bias", source + ".beta"}, d));
}
}  // namespace

std::vector<std::string> name_prefixes(Family family) {
  switch (family) {
    case Family::kGpt2: return {"", "transformer."};
    case Family::kBert: return {"bert.", ""};
    case Family::kLlama: return {"model.", ""};
  }
  return {""};
}

std::string probe_tensor(Family family) {
  switch (family) {
    case Family::kGpt2: return "wte.weight";
    case Family::kBert: return "embeddings.word_embeddings.weight";
    case Family::kLlama: return "embed_tokens.weight";
  }
  return "";
}

std::vector<ParamSpec> architecture_params(const TransformerConfig& c) {
  std::vector<ParamSpec> p;
  const int64_t d = c.d_model, ff = c.d_ff, d_q = int64_t{c.heads} * c.head_dim,
                d_kv = int64_t{c.kv_heads} * c.head_dim, V = c.vocab;
  if (c.family == Family::kGpt2) {
    // Conv1D weights are stored [in][out] already; c_attn holds Q, K and V side by side.
    p.push_back(token_embedding(c, "wte.weight"));
    p.push_back(rows_table(mat("positions", {"wpe.weight"}, c.max_positions, d)));
    for (int l = 0; l < c.layers; ++l) {
      const std::string h = "h." + std::to_string(l) + ".";
      norm(p, layer_name(l, "norm1"), h + "ln_1", d);
      const char* qkv[] = {"wq", "wk", "wv"};
      const char* qkv_bias[] = {"bq", "bk", "bv"};
      for (int part = 0; part < 3; ++part) {
        ParamSpec w = mat(layer_name(l, qkv[part]), {h + "attn.c_attn.weight"}, d, d, Layout::kColumns);
        w.part = part;
        w.parts = 3;
        p.push_back(w);
        ParamSpec b = vec(layer_name(l, qkv_bias[part]), {h + "attn.c_attn.bias"}, d);
        b.layout = Layout::kRange;
        b.part = part;
        b.parts = 3;
        p.push_back(b);
      }
      p.push_back(mat(layer_name(l, "wo"), {h + "attn.c_proj.weight"}, d, d));
      p.push_back(vec(layer_name(l, "bo"), {h + "attn.c_proj.bias"}, d));
      norm(p, layer_name(l, "norm2"), h + "ln_2", d);
      p.push_back(mat(layer_name(l, "w_up"), {h + "mlp.c_fc.weight"}, d, ff));
      p.push_back(vec(layer_name(l, "b_up"), {h + "mlp.c_fc.bias"}, ff));
      p.push_back(mat(layer_name(l, "w_down"), {h + "mlp.c_proj.weight"}, ff, d));
      p.push_back(vec(layer_name(l, "b_down"), {h + "mlp.c_proj.bias"}, d));
    }
    norm(p, "final_norm", "ln_f", d);
  } else if (c.family == Family::kBert) {
    const Layout T = Layout::kTranspose;  // nn.Linear: [out][in]
    p.push_back(token_embedding(c, "embeddings.word_embeddings.weight"));
    p.push_back(rows_table(mat("positions", {"embeddings.position_embeddings.weight"}, c.max_positions, d)));
    p.push_back(rows_table(mat("types", {"embeddings.token_type_embeddings.weight"}, c.type_vocab, d)));
    norm(p, "embed_norm", "embeddings.LayerNorm", d);
    for (int l = 0; l < c.layers; ++l) {
      const std::string h = "encoder.layer." + std::to_string(l) + ".";
      const char* names[][2] = {{"wq", "query"}, {"wk", "key"}, {"wv", "value"}};
      for (auto& [ours, theirs] : names) {
        p.push_back(mat(layer_name(l, ours), {h + "attention.self." + theirs + ".weight"}, d, d, T));
        std::string bias = ours;
        bias[0] = 'b';
        p.push_back(vec(layer_name(l, bias.c_str()), {h + "attention.self." + theirs + ".bias"}, d));
      }
      p.push_back(mat(layer_name(l, "wo"), {h + "attention.output.dense.weight"}, d, d, T));
      p.push_back(vec(layer_name(l, "bo"), {h + "attention.output.dense.bias"}, d));
      norm(p, layer_name(l, "norm1"), h + "attention.output.LayerNorm", d);
      p.push_back(mat(layer_name(l, "w_up"), {h + "intermediate.dense.weight"}, d, ff, T));
      p.push_back(vec(layer_name(l, "b_up"), {h + "intermediate.dense.bias"}, ff));
      p.push_back(mat(layer_name(l, "w_down"), {h + "output.dense.weight"}, ff, d, T));
      p.push_back(vec(layer_name(l, "b_down"), {h + "output.dense.bias"}, d));
      norm(p, layer_name(l, "norm2"), h + "output.LayerNorm", d);
    }
    // The masked-LM head, outside the "bert." prefix; a BertModel checkpoint has none.
    std::vector<ParamSpec> head;
    head.push_back(mat("head_dense_w", {"cls.predictions.transform.dense.weight"}, d, d, T));
    head.push_back(vec("head_dense_b", {"cls.predictions.transform.dense.bias"}, d));
    norm(head, "head_norm", "cls.predictions.transform.LayerNorm", d);
    head.push_back(vec("output_bias", {"cls.predictions.bias", "cls.predictions.decoder.bias"}, V));
    if (!c.tied) head.push_back(mat("output", {"cls.predictions.decoder.weight"}, d, V, Layout::kTranspose));
    for (ParamSpec& s : head) {
      s.optional = true;
      s.unprefixed = true;
      p.push_back(s);
    }
  } else {
    const Layout T = Layout::kTranspose;
    p.push_back(token_embedding(c, "embed_tokens.weight"));
    for (int l = 0; l < c.layers; ++l) {
      const std::string h = "layers." + std::to_string(l) + ".";
      norm(p, layer_name(l, "norm1"), h + "input_layernorm", d, false);
      p.push_back(mat(layer_name(l, "wq"), {h + "self_attn.q_proj.weight"}, d, d_q, T));
      p.push_back(mat(layer_name(l, "wk"), {h + "self_attn.k_proj.weight"}, d, d_kv, T));
      p.push_back(mat(layer_name(l, "wv"), {h + "self_attn.v_proj.weight"}, d, d_kv, T));
      p.push_back(mat(layer_name(l, "wo"), {h + "self_attn.o_proj.weight"}, d_q, d, T));
      if (c.qkv_bias) {
        p.push_back(vec(layer_name(l, "bq"), {h + "self_attn.q_proj.bias"}, d_q));
        p.push_back(vec(layer_name(l, "bk"), {h + "self_attn.k_proj.bias"}, d_kv));
        p.push_back(vec(layer_name(l, "bv"), {h + "self_attn.v_proj.bias"}, d_kv));
      }
      if (c.o_bias) p.push_back(vec(layer_name(l, "bo"), {h + "self_attn.o_proj.bias"}, d));
      norm(p, layer_name(l, "norm2"), h + "post_attention_layernorm", d, false);
      p.push_back(mat(layer_name(l, "w_gate"), {h + "mlp.gate_proj.weight"}, d, ff, T));
      p.push_back(mat(layer_name(l, "w_up"), {h + "mlp.up_proj.weight"}, d, ff, T));
      p.push_back(mat(layer_name(l, "w_down"), {h + "mlp.down_proj.weight"}, ff, d, T));
      if (c.mlp_bias) {
        p.push_back(vec(layer_name(l, "b_up"), {h + "mlp.up_proj.bias"}, ff));
        p.push_back(vec(layer_name(l, "b_gate"), {h + "mlp.gate_proj.bias"}, ff));
        p.push_back(vec(layer_name(l, "b_down"), {h + "mlp.down_proj.bias"}, d));
      }
    }
    norm(p, "final_norm", "norm", d, false);
  }
  if (c.family != Family::kBert && !c.tied) {
    ParamSpec head = mat("output", {"lm_head.weight"}, d, V, Layout::kTranspose);
    head.unprefixed = true;
    p.push_back(head);
  }
  return p;
}

TransformerWeights bind_weights(const TransformerConfig& c, const std::map<std::string, Tensor>& tensors) {
  auto get = [&](const std::string& name) -> const Tensor* {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second;
  };
  TransformerWeights w;
  w.token_embedding = get("embed");
  w.embedding_transposed = c.tied;
  w.position_embedding = get("positions");
  w.type_embedding = get("types");
  w.embedding_norm_w = get("embed_norm_w");
  w.embedding_norm_b = get("embed_norm_b");
  for (int l = 0; l < c.layers; ++l) {
    auto at = [&](const char* what) { return get(layer_name(l, what)); };
    w.layers.push_back({at("norm1_w"), at("norm1_b"), at("wq"), at("wk"), at("wv"), at("wo"), at("bq"),
                        at("bk"), at("bv"), at("bo"), at("norm2_w"), at("norm2_b"), at("w_up"),
                        at("b_up"), at("w_gate"), at("b_gate"), at("w_down"), at("b_down")});
  }
  w.final_norm_w = get("final_norm_w");
  w.final_norm_b = get("final_norm_b");
  w.head_dense_w = get("head_dense_w");
  w.head_dense_b = get("head_dense_b");
  w.head_norm_w = get("head_norm_w");
  w.head_norm_b = get("head_norm_b");
  w.output_bias = get("output_bias");
  const bool has_head = c.family != Family::kBert || w.head_dense_w != nullptr;
  w.output = !has_head ? nullptr : c.tied ? w.token_embedding : get("output");
  return w;
}

// ---- forward passes ----

static void activate(Activation a, float* x, int64_t count) {
  switch (a) {
    case Activation::kGeluTanh: gelu_tanh(x, count); break;
    case Activation::kGeluErf: gelu_erf(x, count); break;
    case Activation::kRelu: relu(x, count); break;
    case Activation::kSilu: silu(x, count); break;
  }
}

static const float* f32(const Tensor* t) { return t ? t->f32() : nullptr; }

// GPT-2: pre-LayerNorm blocks, learned positions, a 4·d GELU MLP, the head tied to the embedding.
void Transformer::forward_gpt2(RunResult& out, const int32_t* ids, int n, const RunRequest& r) {
  const TransformerConfig& c = config_;
  const int d = c.d_model, first = out.n_k - n;
  int64_t nd = int64_t{n} * d;
  const TransformerWeights& W = weights_;
  x_.resize(nd); h_.resize(nd); a_.resize(nd); up_.resize(int64_t{n} * c.d_ff);
  if (r.hidden_states) out.hidden_states.resize((c.layers + 1) * nd);
  embed_tokens(x_.data(), ids, n);
  add_table_rows(x_.data(), *W.position_embedding, first, n, d);
  record_hidden(out, x_.data(), n, 0, r);
  for (int l = 0; l < c.layers; ++l) {
    const TransformerWeights::Layer& L = W.layers[l];
    layer_norm(h_.data(), x_.data(), f32(L.norm1_w), f32(L.norm1_b), n, d, c.norm_eps);
    overflow_ |= !attention(a_.data(), h_.data(), n, l, r, out);
    add_in_place(x_.data(), a_.data(), nd);
    if (l + 1 == c.layers) {  // only the rows the output needs go on (RunRequest::last_hidden)
      n = rows_after_last_attention(x_.data(), n, r);
      nd = int64_t{n} * d;
    }
    layer_norm(h_.data(), x_.data(), f32(L.norm2_w), f32(L.norm2_b), n, d, c.norm_eps);
    matmul(up_.data(), h_.data(), *L.w_up, f32(L.b_up), n);
    activate(c.activation, up_.data(), int64_t{n} * c.d_ff);
    matmul(a_.data(), up_.data(), *L.w_down, f32(L.b_down), n);
    add_in_place(x_.data(), a_.data(), nd);
    if (l + 1 < c.layers) record_hidden(out, x_.data(), n, l + 1, r);
  }
  layer_norm(x_.data(), x_.data(), f32(W.final_norm_w), f32(W.final_norm_b), n, d, c.norm_eps);
  record_hidden(out, x_.data(), n, c.layers, r);
  out.last_hidden.assign(x_.begin(), x_.begin() + nd);
  output_head(out, x_.data(), n, r);
}

// BERT: post-LayerNorm blocks over word + position + token-type embeddings, no mask; the MLM head
// (dense → GELU → LayerNorm → tied output with its own bias) where the checkpoint has it.
void Transformer::forward_bert(RunResult& out, const int32_t* ids, int n, const RunRequest& r) {
  const TransformerConfig& c = config_;
  const int d = c.d_model;
  int64_t nd = int64_t{n} * d;
  const TransformerWeights& W = weights_;
  x_.resize(nd); h_.resize(nd); a_.resize(nd); up_.resize(int64_t{n} * c.d_ff);
  if (r.hidden_states) out.hidden_states.resize((c.layers + 1) * nd);
  std::vector<int32_t> types(static_cast<size_t>(n), 0);
  if (r.token_types) types.assign(r.token_types, r.token_types + n);
  embed_tokens(x_.data(), ids, n);
  add_table_rows(x_.data(), *W.position_embedding, 0, n, d);
  embedding_rows(x_.data(), types.data(), *W.type_embedding, n, d, true);
  layer_norm(x_.data(), x_.data(), f32(W.embedding_norm_w), f32(W.embedding_norm_b), n, d, c.norm_eps);
  record_hidden(out, x_.data(), n, 0, r);
  for (int l = 0; l < c.layers; ++l) {
    const TransformerWeights::Layer& L = W.layers[l];
    overflow_ |= !attention(a_.data(), x_.data(), n, l, r, out);
    add_in_place(x_.data(), a_.data(), nd);
    if (l + 1 == c.layers) {  // only the rows the output needs go on (RunRequest::last_hidden)
      n = rows_after_last_attention(x_.data(), n, r);
      nd = int64_t{n} * d;
    }
    layer_norm(x_.data(), x_.data(), f32(L.norm1_w), f32(L.norm1_b), n, d, c.norm_eps);
    matmul(up_.data(), x_.data(), *L.w_up, f32(L.b_up), n);
    activate(c.activation, up_.data(), int64_t{n} * c.d_ff);
    matmul(a_.data(), up_.data(), *L.w_down, f32(L.b_down), n);
    add_in_place(x_.data(), a_.data(), nd);
    layer_norm(x_.data(), x_.data(), f32(L.norm2_w), f32(L.norm2_b), n, d, c.norm_eps);
    record_hidden(out, x_.data(), n, l + 1, r);
  }
  out.last_hidden.assign(x_.begin(), x_.begin() + nd);
  if (!W.output || !r.logits) return;
  matmul(h_.data(), x_.data(), *W.head_dense_w, f32(W.head_dense_b), n);
  activate(c.activation, h_.data(), nd);
  layer_norm(h_.data(), h_.data(), f32(W.head_norm_w), f32(W.head_norm_b), n, d, c.norm_eps);
  output_head(out, h_.data(), n, r);
}

// Llama, Qwen2, Mistral: pre-RMSNorm blocks, rotary positions inside attention (grouped key/value
// heads), a SwiGLU MLP, the head tied or not.
void Transformer::forward_llama(RunResult& out, const int32_t* ids, int n, const RunRequest& r) {
  const TransformerConfig& c = config_;
  const int d = c.d_model;
  int64_t nd = int64_t{n} * d, nff = int64_t{n} * c.d_ff;
  const TransformerWeights& W = weights_;
  x_.resize(nd); h_.resize(nd); a_.resize(nd); up_.resize(nff); gate_.resize(nff);
  if (r.hidden_states) out.hidden_states.resize((c.layers + 1) * nd);
  embed_tokens(x_.data(), ids, n);
  record_hidden(out, x_.data(), n, 0, r);
  for (int l = 0; l < c.layers; ++l) {
    const TransformerWeights::Layer& L = W.layers[l];
    rms_norm(h_.data(), x_.data(), f32(L.norm1_w), n, d, c.norm_eps);
    overflow_ |= !attention(a_.data(), h_.data(), n, l, r, out);
    add_in_place(x_.data(), a_.data(), nd);
    if (l + 1 == c.layers) {  // only the rows the output needs go on (RunRequest::last_hidden)
      n = rows_after_last_attention(x_.data(), n, r);
      nd = int64_t{n} * d;
      nff = int64_t{n} * c.d_ff;
    }
    rms_norm(h_.data(), x_.data(), f32(L.norm2_w), n, d, c.norm_eps);
    matmul(gate_.data(), h_.data(), *L.w_gate, f32(L.b_gate), n);
    matmul(up_.data(), h_.data(), *L.w_up, f32(L.b_up), n);
    silu_times(up_.data(), gate_.data(), up_.data(), nff);
    matmul(a_.data(), up_.data(), *L.w_down, f32(L.b_down), n);
    add_in_place(x_.data(), a_.data(), nd);
    if (l + 1 < c.layers) record_hidden(out, x_.data(), n, l + 1, r);
  }
  rms_norm(x_.data(), x_.data(), f32(W.final_norm_w), n, d, c.norm_eps);
  record_hidden(out, x_.data(), n, c.layers, r);
  out.last_hidden.assign(x_.begin(), x_.begin() + nd);
  output_head(out, x_.data(), n, r);
}

}  // namespace mh
