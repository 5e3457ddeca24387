// Native reference for the JS suite's wasm-vs-native training check, and a quick way to try the
// playground's tasks natively:
//   mh_toy_dump <task 0-4> <layers> <heads> <d_model> <seed> <steps> <learning rate> [eval every] [batch]
// prints JSON: each step's loss, the held-out evaluation every `eval every` steps (default: only
// at the end), and the sample-0 attention after the last step.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "training/toy_trainer.h"

int main(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr, "usage: mh_toy_dump task layers heads d_model seed steps lr [eval_every] [batch]\n");
    return 2;
  }
  mh::ToyTrainerSettings s;
  s.task = static_cast<mh::ToyTask>(std::atoi(argv[1]));
  s.layers = std::atoi(argv[2]);
  s.heads = std::atoi(argv[3]);
  s.d_model = std::atoi(argv[4]);
  s.seed = std::strtoull(argv[5], nullptr, 10);
  const int steps = std::atoi(argv[6]);
  s.learning_rate = static_cast<float>(std::atof(argv[7]));
  const int eval_every = argc > 8 ? std::atoi(argv[8]) : steps;
  if (argc > 9) s.batch = std::atoi(argv[9]);
  const std::string error = mh::validate_toy_trainer_settings(s);
  if (!error.empty()) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  mh::ToyTrainer trainer(s);
  const auto t0 = std::chrono::steady_clock::now();
  std::printf("{\"losses\":[");
  std::vector<std::string> evals;
  for (int i = 1; i <= steps; ++i) {
    std::printf("%s%.9g", i > 1 ? "," : "", trainer.step());
    if (eval_every > 0 && i % eval_every == 0) {
      const auto e = trainer.evaluate();
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      char buf[160];
      std::snprintf(buf, sizeof buf, "{\"step\":%d,\"loss\":%.9g,\"accuracy\":%.6f,\"ms\":%.1f}", i, e.loss, e.accuracy, ms);
      evals.push_back(buf);
    }
  }
  std::printf("],\"evaluations\":[");
  for (size_t i = 0; i < evals.size(); ++i) std::printf("%s%s", i ? "," : "", evals[i].c_str());
  const mh::DecoderConfig& c = trainer.model().config();
  std::vector<float> attention(size_t(c.layers) * c.num_heads * c.context * c.context);
  trainer.sample(0, attention.data(), nullptr);
  std::printf("],\"attention\":[");
  for (size_t i = 0; i < attention.size(); ++i) std::printf("%s%.9g", i ? "," : "", attention[i]);
  std::printf("]}\n");
  return 0;
}
