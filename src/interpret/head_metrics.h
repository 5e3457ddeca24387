// Measured roles of a trained decoder's heads: how much attention each head puts where.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/decoder.h"

namespace mh {

// Per head, mean attention weight (0 … 1) over the rows it is defined for:
//   previous_token  A[i][i−1], rows i ≥ 1, on text
//   first_token     A[i][0], rows i ≥ 1, on text
//   local_window    Σ A[i][j] for j in i−3 … i (the token itself and the 3 before), rows i ≥ 4, on text
//   induction       on R random tokens repeated twice (r₀ … r_{R−1} r₀ … r_{R−1}): from the second
//                   copy of r_k (row R + k) to the token after its first copy (key k + 1), k < R−1
// Random tokens are drawn uniformly from ids 1 … vocab−1 with a seeded stream.
struct HeadScores {
  float previous_token = 0, first_token = 0, local_window = 0, induction = 0;
};

// text: validation tokens (≥ n); windows of n ≤ context tokens are taken evenly spaced through it.
// Result: layers × heads, row-major.
std::vector<HeadScores> measure_heads(Decoder& model, const int32_t* text, int64_t text_len, int n,
                                      int windows, uint64_t seed);

// The role a head is labelled with on the page and in docs/pages.md: the strongest of its scores
// if that is at least 0.4 (local window counts only beyond what previous-token explains),
// else "mixed".
std::string head_role(const HeadScores& s);

// Mean next-token loss (nats) on the first and second copy of random repeated sequences: the
// second is far lower when the model copies in context (what induction heads do).
struct RepeatLoss {
  double first_copy = 0, second_copy = 0;
};
RepeatLoss repeated_sequence_loss(Decoder& model, int n, int sequences, uint64_t seed);

}  // namespace mh
