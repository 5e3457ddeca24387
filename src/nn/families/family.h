// A model family, as llama.cpp's src/models/ has one file per architecture: each family's file
// (gpt2.cpp, bert.cpp, llama.cpp …) defines one Family holding what it reads from config.json, the
// tensors it reads from a checkpoint (hub prefixes, layouts, splits), and its forward pass as a
// short sequence of the shared operations (nn/ops.h) around multihead_attention_forward.
// families.cpp maps config.json's model_type to them; nothing else switches on the family.
// docs/models.md says how to add one.
#pragma once

#include <string>
#include <vector>

#include "io/config_fields.h"
#include "nn/ops.h"
#include "nn/transformer.h"

namespace mh {

// How a destination tensor is cut from its source tensor.
enum class Layout {
  kCopy,       // same shape
  kTranspose,  // nn.Linear's [out][in] → [in][out]
  kColumns,    // columns [part·cols, (part+1)·cols) of a source [rows][parts·cols] (GPT-2's fused c_attn)
  kRange,      // elements [part·cols, (part+1)·cols) of a source vector (GPT-2's fused c_attn bias)
  // Part `part` of a fused projection laid out per head (GPT-NeoX's query_key_value): the source's
  // output features run heads × parts × head_dim (head_dim = group). A matrix is nn.Linear's
  // [out][in] and comes out transposed, [in][heads·head_dim]; a vector (the bias) comes out
  // heads·head_dim long.
  kPerHead,
};

// One tensor the forward pass reads, and where the checkpoint keeps it.
class Seq2SeqPass;  // nn/encoder_decoder.h

struct ParamSpec {
  std::string name;                  // the model's own name, e.g. "h3.wq" (TransformerWeights)
  std::vector<std::string> sources;  // checkpoint names to try, after the prefix (first found wins)
  int64_t rows = 1, cols = 1;        // the destination shape (vectors: rows = 1)
  Layout layout = Layout::kCopy;
  int part = 0, parts = 1;
  int group = 0;          // kPerHead: the head size
  float offset = 0.0f;    // added to every element of a vector (Gemma's norms scale by 1 + w)
  bool matrix = true;     // matrices keep their stored dtype; vectors become float32
  bool panels = true;     // a matrix products read: stored in gemm's panel layout (nn/tensor.h)
  bool optional = false;  // absent in the checkpoint: left out (e.g. BERT without its MLM head)
  bool unprefixed = false;  // looked up without the prefix (lm_head.weight, cls.predictions.*)
  // The source's shape on the hub where it has more dimensions than the layout implies, read in
  // row-major order as that shape: a Conv2d weight [d][C][P][P] as [d][C·P·P], a cls_token
  // [1][1][d] as [d]. Empty: exactly the layout's shape.
  std::vector<int64_t> source_dims;
};

// One name in llama.cpp's GGUF files and the hub's name for the same thing.
struct GgufName {
  const char* gguf;  // a tensor ("blk.#.attn_q.weight", # the layer) or a key after "{arch}." ("block_count")
  const char* hub;   // the hub checkpoint's tensor ("model.layers.#.self_attn.q_proj.weight") or config key
  // The tensor is stored as nn.Linear's [out][in] where the hub's is Conv1D's [in][out] (GPT-2's
  // converter transposes them).
  bool transposed = false;
  // Its rows (or a bias's elements) are permuted per head for rotary on adjacent pairs: llama.cpp's
  // converter does it to the `llama` architecture's attn_q / attn_k (HF row h·D + j·D/2 + i is GGUF
  // row h·D + 2i + j). The loader puts them back, so the family's rotation on halves applies.
  bool rotary_pairs = false;
};

// A GGUF file's general.architecture read as a family (io/gguf_model.h): its metadata becomes a
// config.json of model_type, its tensors the hub's tensors, with llama.cpp's conventions undone.
struct GgufArchitecture {
  const char* architecture;  // "llama", "qwen2", "gpt2"
  const char* model_type;    // the config.json model_type it is read as
  std::vector<GgufName> keys;     // config keys; those every family shares are in io/gguf_model.cpp
  std::vector<GgufName> tensors;  // every tensor the file may hold (another one is an error)
  bool norms_stored_plus_one = false;  // norm weights are 1 + w in the file where the family adds 1 (Gemma)
};

struct Family {
  const char* name;  // "gpt2", "bert", "llama"
  // Reads the family's keys of config.json into c (c.model_type is already set, and read_hf_config
  // checks the common ones after): "" or what is missing or unsupported, by name.
  std::string (*read_config)(ConfigFields& fields, TransformerConfig& c);
  std::vector<std::string> prefixes;  // the prefixes its tensor names carry on the hub ("model.", "")
  const char* probe_tensor;           // a tensor every checkpoint of the family has (finds the prefix)
  // Everything the forward pass reads, for this config; names as TransformerWeights binds them.
  std::vector<ParamSpec> (*params)(const TransformerConfig& c);
  void (*forward)(ForwardPass& pass);
  // Its blocks' and final norm: the forward pass (ForwardPass::norm), the logit lens and the
  // attribution (which freezes it) all read this, so none guesses it from the weights.
  Norm norm;
  // Encoder-decoders (t5.cpp, bart.cpp, marian.cpp): one stack's pass, the encoder's or the
  // decoder's (pass.decoder); forward is then null (nn/encoder_decoder.h).
  void (*stack_forward)(Seq2SeqPass& pass) = nullptr;
};

// The family of a config.json's model_type, or null (families.cpp).
const Family* family_for_model_type(const std::string& model_type);
// The GGUF architecture of general.architecture, or null (families.cpp); and those it knows, for messages.
const GgufArchitecture* gguf_architecture(const std::string& architecture);
std::string supported_gguf_architectures();
// "gpt2, bert, llama, qwen2, mistral": the model types the table knows, for error messages.
std::string supported_model_types();
// The same, one a string.
std::vector<std::string> supported_model_type_list();

// ---- building blocks of the families' files ----

// "h3.wq": a layer's tensor, as TransformerWeights binds it.
std::string layer_name(int layer, const char* what);
// A float32 vector of `size`; a matrix rows × cols kept in its stored type, in panels.
ParamSpec vec(std::string name, std::vector<std::string> sources, int64_t size, bool optional = false);
ParamSpec mat(std::string name, std::vector<std::string> sources, int64_t rows, int64_t cols,
              Layout layout = Layout::kCopy);
// A table read a row at a time (embeddings), kept row-major rather than in panels.
ParamSpec rows_table(ParamSpec p);
// The token embedding [vocab][d]. Tied to the output head, it is stored transposed (d × vocab):
// the head's product then reads it as a plain K × N matrix (gemm streams its rows contiguously,
// which decoding's memory bandwidth needs), and a lookup gathers a column instead of a row.
ParamSpec token_embedding(const TransformerConfig& c, const char* source);
// A norm's weight (name_w) and bias (name_b); old BERT checkpoints call them gamma and beta.
void norm(std::vector<ParamSpec>& out, const std::string& name, const std::string& source, int64_t d, bool bias = true);
// An untied output head stored as nn.Linear [vocab][d] under `source`, outside any prefix.
void untied_output_head(std::vector<ParamSpec>& out, const TransformerConfig& c, const char* source);
// A hidden_act / activation_function name; false if it is not one the ops implement.
bool activation_from(const std::string& name, Activation& out);
// In place over count elements.
void activate(Activation a, float* x, int64_t count);
// A vector's float32 data, or null where the family or checkpoint has none.
inline const float* f32(const Tensor* t) { return t ? t->f32() : nullptr; }

}  // namespace mh
