// GPT-2's forward pass (gpt2.cpp), which GPT-Neo's blocks share (gpt_neo.cpp): pre-LayerNorm
// blocks over token + learned position embeddings, a final LayerNorm, the output head.
#pragma once

#include "nn/families/family.h"

namespace mh {

void gpt2_forward(ForwardPass& pass);

}  // namespace mh
