// Attention rollout (Abnar & Zuidema 2020): how much each token's input reaches each position
// after every layer, through attention and the residual connection.
#pragma once

namespace mh {

// R = Π_l (½·mean_h A_l + ½·I), rows renormalised. rollout (n × n); attention
// (layers × heads × n × n), as the models' runs write it.
void attention_rollout(float* rollout, const float* attention, int layers, int heads, int n);

}  // namespace mh
