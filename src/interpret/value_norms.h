// Value norms ‖v_j W_O^h‖ (Kobayashi et al. 2020): how much key j can move the output through
// head h, which attention weights alone do not say.
#pragma once

#include <cstdint>

#include "nn/tensor.h"

namespace mh {

// factor (rows × rows, in gemm's panel layout: rows × round_up(rows, 8) floats, core/gemm.h) such
// that ‖v · w_rows‖ = ‖v · factor‖ for every v (1 × rows),
// where w_rows is rows [first, first + rows) of w (rows × w.cols, as stored). Computed in float64
// once: the Gram matrix G = w_rows · w_rowsᵀ, its pivoted LDLᵀ = Pᵀ L D Lᵀ P (semidefinite G, a
// head with zero rows, included), and factor = Pᵀ L √D, so v·factor·factorᵀ·vᵀ = v G vᵀ. Value
// norms then cost n · rows² instead of n · rows · w.cols (12× fewer for GPT-2's heads), and
// ‖v · factor‖² is a sum of squares, as accurate as the norm of the product it replaces.
void norm_preserving_factor(float* factor, const Tensor& w, int64_t first, int rows);
// norms (n) = the Euclidean norm of each row of x (n × d, rows `stride` floats apart).
void row_norms(float* norms, const float* x, int n, int d, int64_t stride);

}  // namespace mh
