// The table from config.json's model_type to its family, and the building blocks the families'
// files share. Adding a family: its file (one Family) and one row here (docs/models.md).
#include "nn/families/family.h"

namespace mh {

extern const Family kGpt2Family;   // gpt2.cpp
extern const Family kBertFamily;   // bert.cpp
extern const Family kLlamaFamily;  // llama.cpp
extern const Family kQwen3Family;  // qwen3.cpp
extern const Family kGemma3Family;  // gemma3.cpp
extern const Family kGptNeoxFamily;  // gpt_neox.cpp
extern const Family kGptNeoFamily;  // gpt_neo.cpp
extern const Family kDistilbertFamily;  // distilbert.cpp
extern const Family kRobertaFamily;  // roberta.cpp
extern const Family kVitFamily;  // vit.cpp
extern const Family kDeitFamily;  // deit.cpp
extern const Family kDinov2Family;  // dinov2.cpp
extern const Family kT5Family;  // t5.cpp
extern const Family kBartFamily;  // bart.cpp
extern const Family kMarianFamily;  // marian.cpp

extern const GgufArchitecture kLlamaGguf;   // llama.cpp
extern const GgufArchitecture kQwen2Gguf;   // llama.cpp
extern const GgufArchitecture kQwen3Gguf;   // qwen3.cpp
extern const GgufArchitecture kGemma3Gguf;  // gemma3.cpp
extern const GgufArchitecture kGpt2Gguf;    // gpt2.cpp

namespace {
// GGUF's general.architecture → how it is read (the families' files hold llama.cpp's names).
const GgufArchitecture* const kGgufArchitectures[] = {&kLlamaGguf, &kQwen2Gguf, &kQwen3Gguf, &kGemma3Gguf, &kGpt2Gguf};

struct ModelType {
  const char* model_type;
  const Family* family;
};
const ModelType kModelTypes[] = {
    {"gpt2", &kGpt2Family},
    {"bert", &kBertFamily},
    {"llama", &kLlamaFamily},
    {"qwen2", &kLlamaFamily},
    {"mistral", &kLlamaFamily},
    {"qwen3", &kQwen3Family},
    {"gemma3_text", &kGemma3Family},
    {"gpt_neox", &kGptNeoxFamily},
    {"gpt_neo", &kGptNeoFamily},
    {"distilbert", &kDistilbertFamily},
    {"roberta", &kRobertaFamily},
    {"xlm-roberta", &kRobertaFamily},  // XLM-R and CamemBERT are RoBERTa's graph and names, with a
    {"camembert", &kRobertaFamily},    // SentencePiece Unigram tokenizer (tokenizer.json)
    {"vit", &kVitFamily},
    {"deit", &kDeitFamily},
    {"dinov2", &kDinov2Family},
    {"t5", &kT5Family},
    {"bart", &kBartFamily},
    {"marian", &kMarianFamily},
};
}  // namespace

const Family* family_for_model_type(const std::string& model_type) {
  for (const ModelType& row : kModelTypes)
    if (model_type == row.model_type) return row.family;
  return nullptr;
}

const GgufArchitecture* gguf_architecture(const std::string& architecture) {
  for (const GgufArchitecture* a : kGgufArchitectures)
    if (architecture == a->architecture) return a;
  return nullptr;
}

std::string supported_gguf_architectures() {
  std::string names;
  for (const GgufArchitecture* a : kGgufArchitectures) names += (names.empty() ? "" : ", ") + std::string(a->architecture);
  return names;
}

std::string supported_model_types() {
  std::string names;
  for (const ModelType& row : kModelTypes) names += (names.empty() ? "" : ", ") + std::string(row.model_type);
  return names;
}

std::vector<std::string> supported_model_type_list() {
  std::vector<std::string> names;
  for (const ModelType& row : kModelTypes) names.emplace_back(row.model_type);
  return names;
}

std::string layer_name(int layer, const char* what) { return "h" + std::to_string(layer) + "." + what; }

ParamSpec vec(std::string name, std::vector<std::string> sources, int64_t size, bool optional) {
  ParamSpec p;
  p.name = std::move(name);
  p.sources = std::move(sources);
  p.cols = size;
  p.matrix = false;
  p.optional = optional;
  return p;
}

ParamSpec mat(std::string name, std::vector<std::string> sources, int64_t rows, int64_t cols, Layout layout) {
  ParamSpec p;
  p.name = std::move(name);
  p.sources = std::move(sources);
  p.rows = rows;
  p.cols = cols;
  p.layout = layout;
  return p;
}

ParamSpec rows_table(ParamSpec p) {
  p.panels = false;
  return p;
}

ParamSpec token_embedding(const TransformerConfig& c, const char* source) {
  if (c.tied) return mat("embed", {source}, c.d_model, c.vocab, Layout::kTranspose);
  return rows_table(mat("embed", {source}, c.vocab, c.d_model));
}

void norm(std::vector<ParamSpec>& out, const std::string& name, const std::string& source, int64_t d, bool bias) {
  out.push_back(vec(name + "_w", {source + ".weight", source + ".gamma"}, d));
  if (bias) out.push_back(vec(name + "_b", {source + ".bias", source + ".beta"}, d));
}

void untied_output_head(std::vector<ParamSpec>& out, const TransformerConfig& c, const char* source) {
  if (c.tied) return;
  ParamSpec head = mat("output", {source}, c.d_model, c.vocab, Layout::kTranspose);
  head.unprefixed = true;
  out.push_back(head);
}

bool activation_from(const std::string& name, Activation& out) {
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") out = Activation::kGeluTanh;
  else if (name == "gelu") out = Activation::kGeluErf;
  else if (name == "relu") out = Activation::kRelu;
  else if (name == "silu" || name == "swish") out = Activation::kSilu;
  else return false;
  return true;
}

}  // namespace mh
