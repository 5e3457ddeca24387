// Native build of the same core, for the benchmark's ceiling. Prints one JSON object per case:
//   {"n":…, "d":…, "h":…, "causal":…, "weights":…, "ms":median, "runs":…}
// Usage: bench_native [MAX_SECONDS_PER_CASE]   (cases are the benchmark's shapes, see bench/run.mjs)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/model.h"

int main(int argc, char** argv) {
  const double budget = argc > 1 ? std::atof(argv[1]) : 1.0;
  const int shapes[][3] = {{6, 64, 4},    {16, 256, 8},   {64, 512, 8},   {128, 768, 12},
                           {512, 512, 8}, {1024, 512, 8}, {2048, 256, 8}, {4096, 256, 8}};
  for (const auto& s : shapes) {
    const int n = s[0], d = s[1], h = s[2];
    mh::Config c;
    c.d_model = d;
    c.num_heads = h;
    mh::AttentionModel model(c);
    model.init_seeded(1);
    std::vector<float> x(size_t(n) * d), y(x.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    for (int with_weights = 0; with_weights < 2; ++with_weights) {
      for (int causal = 0; causal < 2; ++causal) {
        if (with_weights && !mh::validate_shape(c, n, n, mh::AttentionSelection::all(h, n).floats(n)).empty()) {
          std::printf("{\"n\":%d,\"d\":%d,\"h\":%d,\"causal\":%d,\"weights\":%d,\"ms\":null,\"note\":\"over the memory budget\"}\n", n, d, h, causal, with_weights);
          continue;
        }
        std::vector<float> attention(with_weights ? size_t(h) * n * n : 0);
        mh::MaskSpec mask;
        mask.causal = causal;
        auto run = [&] {
          const auto t0 = std::chrono::steady_clock::now();
          const std::string error = model.forward(y.data(), with_weights ? attention.data() : nullptr,
                                                  x.data(), x.data(), n, n, mask);
          if (!error.empty()) { std::fprintf(stderr, "%s\n", error.c_str()); std::exit(1); }
          return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        };
        run();
        run();  // warm-up: buffers sized, caches and page tables warm
        std::vector<double> times;
        double total = 0;
        while ((total < budget * 1000 || times.size() < 5) && times.size() < 200) {
          times.push_back(run());
          total += times.back();
          if (total > budget * 4000 && times.size() >= 3) break;
        }
        std::sort(times.begin(), times.end());
        std::printf("{\"n\":%d,\"d\":%d,\"h\":%d,\"causal\":%d,\"weights\":%d,\"ms\":%.6f,\"runs\":%zu}\n", n, d,
                    h, causal, with_weights, times[times.size() / 2], times.size());
        std::fflush(stdout);
      }
    }
  }
}
