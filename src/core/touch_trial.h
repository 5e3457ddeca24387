// Whether a product of few rows (4–16) with weights from memory runs faster touching the weights
// that come next (gemm.cpp, "Why this shape") or reading them in place without: measured while
// the model runs, per weight shape, because the answer differs by CPU and no wasm code can ask
// which CPU it is on.
//
// The touches are loads the core must retire, two instructions added to every step of a tile
// that has 28. Where the hardware prefetcher already streams the weights in time, that is all
// they do. Zen 4 (AMD EPYC, family 25 model 17, plain build; same-process A/B of GPT-2 small's 48
// products from memory, 20+ rounds each): without them 0.69× the time at 4 rows, 0.81× at 8,
// 0.90× at 12, 0.94–0.98× at 16 (relaxed build 0.96×), and 1.02–1.04× at 20–64 rows, where
// touching still pays. On Zen 5 they had made the 16-token prefill 92 → 77 ms (an older kernel),
// and on Zen 3 GPT-2's products from memory were the same with or without. So below 17 rows
// each shape tries both: its first calls alternate, each timed, and after kCalls of each the
// faster is kept (touching unless not touching took at most kMargin of its time: touching is the
// choice that was measured to pay on Zen 5). Touching or not, every result is the same bits: the
// touches only load.
#pragma once

#include <algorithm>
#include <array>

namespace mh {

class TouchTrial {
 public:
  static constexpr int kCalls = 8;          // timed calls of each kind before deciding
  static constexpr double kMargin = 0.98;   // not touching must take at most this × the time

  // Whether the next call touches ahead: alternating while measuring, then the faster.
  bool touch_next() const { return decided_ ? touch_ : counts_[1] <= counts_[0]; }
  bool measuring() const { return !decided_; }
  bool decided() const { return decided_; }
  // Median time of calls without touches ÷ with them (measured so far).
  double ratio() const { return median(0) / median(1); }

  // One timed call: seconds per multiply-add (so that calls over different row counts compare).
  void record(bool touched, double seconds_per_madd) {
    if (decided_) return;
    int& count = counts_[touched];
    if (count < kCalls) times_[touched][count++] = seconds_per_madd;
    if (counts_[0] == kCalls && counts_[1] == kCalls) {
      decided_ = true;
      // A clock too coarse to see the calls (a browser's performance.now() is 0.1–1 ms without
      // cross-origin isolation) reads 0 for them: then nothing is known, and touching stays.
      touch_ = !(median(1) > 0.0 && median(0) <= kMargin * median(1));
    }
  }

 private:
  double median(int touched) const {
    std::array<double, kCalls> t = times_[touched];
    const int n = counts_[touched];
    if (n == 0) return 0.0;
    std::nth_element(t.begin(), t.begin() + n / 2, t.begin() + n);
    return t[n / 2];
  }

  std::array<std::array<double, kCalls>, 2> times_{};  // [touched][call]
  std::array<int, 2> counts_{};
  bool decided_ = false, touch_ = true;
};

}  // namespace mh
