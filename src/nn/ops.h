// The operations a pretrained transformer's forward pass strings together (inference only), as
// plain functions over caller memory. Weights come as Tensors in their stored dtype; activations
// are float32, row-major. A family's forward pass (nn/families/) is a short sequence of
// these plus multihead_attention_forward, so another backend can run the same model later.
#pragma once

#include <cstdint>
#include <vector>

#include "nn/tensor.h"

namespace mh {

// x (n × d) = table[ids[t]] (vocab × d), or += when add is true.
void embedding_rows(float* x, const int32_t* ids, const Tensor& table, int n, int d, bool add);
// x (n × d) = columns ids[t] of table (d × vocab): a token embedding tied to the output head, which
// is stored transposed (nn/families/family.h).
void embedding_columns(float* x, const int32_t* ids, const Tensor& table, int n, int d);
// x (n × d) += table rows first_row … first_row + n − 1 (learned positions).
void add_table_rows(float* x, const Tensor& table, int first_row, int n, int d);

// out (n × d) = (x − mean) / sqrt(var + eps) · gamma + beta, per row (may alias x).
void layer_norm(float* out, const float* x, const float* gamma, const float* beta, int n, int d, float eps);
// out (n × d) = x / sqrt(mean(x²) + eps) · weight, per row (Llama's RMSNorm; may alias x).
void rms_norm(float* out, const float* x, const float* weight, int n, int d, float eps);
// Which of the two a family's norms are (nn/families/family.h: Family::norm).
enum class Norm { kLayerNorm, kRmsNorm };
// out (n × d) = the norm of x with weight w and bias b (a LayerNorm's; null for none).
void apply_norm(Norm kind, float* out, const float* x, const Tensor* w, const Tensor* b, int n, int d, float eps);

// out (n × d_out) = in (n × d_in) · w (d_in × d_out, [in][out]) + bias (d_out; null for none), by
// gemm (core/gemm.h): a 2-byte w is widened a panel at a time, and the product is split over the
// thread pool. The output head is the same product with w = the head (d × vocab).
void matmul(float* out, const float* in, const Tensor& w, const float* bias, int n);

enum class Activation;  // nn/transformer.h

// out (n × d_out) = act(in · w + bias): matmul, then activate, with the activation applied to each
// block of columns by the thread that computed it (gemm's epilogue) instead of in a pass of its own.
// The same bits as the two steps.
void matmul_activated(float* out, const float* in, const Tensor& w, const float* bias, int n, Activation a);
// up (n × d_ff) = act(in · w_gate + b_gate) ⊙ (in · w_up + b_up), a gated MLP's hidden layer: both
// products handed out together, each block of columns finished by the thread that computed it;
// gate (n × d_ff) is scratch. The same bits as the two products, activate(gate) and the product.
void gated_matmul(float* up, float* gate, const float* in, const Tensor& w_gate, const float* b_gate,
                  const Tensor& w_up, const float* b_up, int n, Activation a);

// In place, count elements: GELU with tanh (GPT-2's gelu_new), GELU with erf (BERT's gelu),
// ReLU, SiLU; out = silu(gate) ⊙ up (SwiGLU's gate, may alias gate or up).
void gelu_tanh(float* x, int64_t count);
void gelu_erf(float* x, int64_t count);
void relu(float* x, int64_t count);
void silu(float* x, int64_t count);
void silu_times(float* out, const float* gate, const float* up, int64_t count);

// x ·= factor (count elements): an embedding's scale (Gemma's √d).
void scale_in_place(float* x, float factor, int64_t count);
// x += y (count elements): a residual connection.
void add_in_place(float* x, const float* y, int64_t count);
// x ⊙= y.
void multiply_in_place(float* x, const float* y, int64_t count);

}  // namespace mh
