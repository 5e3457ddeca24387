// The thread pool (parallel.h) and the forward pass split over it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <vector>

#include "core/attention.h"
#include "core/parallel.h"
#include "test_support.h"

namespace {

// Restores one thread when a test ends, whatever it asserted.
struct Threads {
  explicit Threads(int n) { mh::set_thread_count(n); }
  ~Threads() { mh::set_thread_count(1); }
};

TEST(Parallel, EveryTaskRunsExactlyOnceOnAValidSlot) {
  for (int threads : {1, 2, 3, 4}) {
    Threads pool(threads);
    ASSERT_EQ(mh::thread_count(), threads);
    for (int count : {0, 1, 2, 7, 64, 1000, 70000}) {  // 70,000: more than one job's 65,535
      std::vector<std::atomic<int>> runs(count);
      std::atomic<int> bad_slot{0};
      mh::parallel_for(count, [&](int i, int slot) {
        runs[i].fetch_add(1);
        if (slot < 0 || slot >= threads) bad_slot.fetch_add(1);
      });
      for (int i = 0; i < count; ++i) ASSERT_EQ(runs[i].load(), 1) << threads << " threads, task " << i;
      EXPECT_EQ(bad_slot.load(), 0);
    }
  }
}

TEST(Parallel, ManyShortJobsInARowLoseNothing) {
  // Back-to-back jobs are where a worker still finishing job k could touch job k + 1 (a version
  // of the pool that did failed here about once in 5 runs; more threads than cores makes the
  // interleavings likelier).
  for (int threads : {2, 3, 5}) {
    Threads pool(threads);
    std::vector<int> sums(20000, 0);
    for (int job = 0; job < 20000; ++job) {
      std::atomic<int> sum{0};
      mh::parallel_for(job % 9 + 1, [&](int i, int) { sum.fetch_add(i + 1); });
      sums[job] = sum.load();
    }
    for (int job = 0; job < 20000; ++job) {
      const int n = job % 9 + 1;
      ASSERT_EQ(sums[job], n * (n + 1) / 2) << threads << " threads, job " << job;
    }
  }
}

TEST(Parallel, EveryTaskRunsOnASlotInUseWhileTheCountChanges) {
  // Workers claim from whichever job is published: after the count drops, a worker of a higher
  // slot must not take a task (its slot's scratch is gone), and no task may be lost or run twice.
  // More threads than cores (8 on 2 here), so workers are often descheduled mid-claim.
  for (int round = 0; round < 20000; ++round) {
    const int threads = round % 2 ? 8 : 2;
    mh::set_thread_count(threads);
    std::vector<std::atomic<int>> runs(37);
    std::atomic<int> bad_slot{0};
    mh::parallel_for(37, [&](int i, int slot) {
      runs[i].fetch_add(1);
      if (slot < 0 || slot >= threads) bad_slot.fetch_add(1);
    });
    ASSERT_EQ(bad_slot.load(), 0) << "round " << round;
    for (int i = 0; i < 37; ++i) ASSERT_EQ(runs[i].load(), 1) << "round " << round << ", task " << i;
  }
  mh::set_thread_count(1);
}

TEST(Parallel, ThreadCountIsClampedAndCanChange) {
  EXPECT_EQ(mh::set_thread_count(0), 1);
  EXPECT_EQ(mh::set_thread_count(-5), 1);
  EXPECT_EQ(mh::set_thread_count(1000), mh::kMaxThreads);
  EXPECT_EQ(mh::set_thread_count(2), 2);
  EXPECT_EQ(mh::set_thread_count(1), 1);
  EXPECT_EQ(mh::thread_count(), 1);
}

struct Case {
  int d, h, h_kv, n_q, n_k;
  bool causal, self;
};

// Large enough to be split (≥ kParallelMinFlops), with grouped heads, cross-attention, odd sizes
// (columns that are not whole 8-wide panels) and several query blocks.
class SplitForward : public ::testing::TestWithParam<Case> {};

TEST_P(SplitForward, SameAsOneThreadAndTheFloat64Reference) {
  const Case c = GetParam();
  test::Pair p = test::make_pair(c.d, c.h, c.h_kv, true, 31);
  std::mt19937 rng(5);
  auto xq = test::float_exact(size_t(c.n_q) * c.d, rng);
  auto xkv = c.self ? xq : test::float_exact(size_t(c.n_k) * c.d, rng);
  ref::Mask rm;
  rm.causal = c.causal;
  std::vector<double> y_ref, a_ref;
  ref::forward(p.layer, xq, xkv, c.n_q, c.n_k, rm, y_ref, a_ref);
  const std::vector<float> xqf = ref::to_float(xq), xkvf = ref::to_float(xkv);
  mh::MaskSpec mask;
  mask.causal = c.causal;

  auto run = [&](int threads, std::vector<float>& y, std::vector<float>& a) {
    Threads pool(threads);
    y.assign(size_t(c.n_q) * c.d, 0.0f);
    a.assign(size_t(c.h) * c.n_q * c.n_k, -1.0f);
    ASSERT_EQ(p.model.forward(y.data(), a.data(), xqf.data(), c.self ? xqf.data() : xkvf.data(),
                              c.n_q, c.n_k, mask), "");
  };
  std::vector<float> y1, a1;
  run(1, y1, a1);
  for (int threads : {2, 3}) {
    std::vector<float> y, a;
    run(threads, y, a);
    EXPECT_LE(test::max_abs_diff(y, y_ref), 1e-5) << threads << " threads";
    EXPECT_LE(test::max_abs_diff(a, a_ref), 1e-5) << threads << " threads";
    // Natively Eigen may block a column slice's product differently: equal up to rounding.
    double dy = 0, da = 0;
    for (size_t i = 0; i < y.size(); ++i) dy = std::max(dy, double(std::abs(y[i] - y1[i])));
    for (size_t i = 0; i < a.size(); ++i) da = std::max(da, double(std::abs(a[i] - a1[i])));
    EXPECT_LE(dy, 1e-6) << threads << " threads";
    EXPECT_LE(da, 1e-6) << threads << " threads";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, SplitForward,
    ::testing::Values(Case{32, 4, 0, 150, 150, true, true},
                      Case{64, 8, 2, 130, 130, false, true},    // grouped-query
                      Case{72, 3, 1, 100, 90, false, false},    // multi-query, cross, 72 = 9 panels
                      Case{256, 8, 0, 16, 16, false, true},     // the benchmark's n = 16 shape
                      Case{40, 5, 0, 257, 257, true, true}));   // 5 blocks, odd d_k

TEST(Parallel, AProfileSplitAsManyThreadsRecordsEveryTaskAndChangesNoBit) {
  // The thread-scaling benchmark's profile (parallel.h): on one thread, split as at 8 threads, a
  // forward call's products run as 8 threads' tasks, one after another, each timed; the results
  // are the bits of the unprofiled call.
  test::Pair p = test::make_pair(64, 4, 0, true, 7);
  const int n = 40;
  std::mt19937 rng(3);
  const std::vector<float> x = ref::to_float(test::float_exact(size_t(n) * 64, rng));
  mh::MaskSpec mask;
  mask.causal = true;
  Threads one(1);
  std::vector<float> plain(x.size()), profiled(x.size());
  ASSERT_EQ(p.model.forward(plain.data(), nullptr, x.data(), x.data(), n, n, mask), "");
  mh::profile_begin(8);
  EXPECT_EQ(mh::split_count(), 8);
  ASSERT_EQ(p.model.forward(profiled.data(), nullptr, x.data(), x.data(), n, n, mask), "");
  const mh::ThreadProfile profile = mh::profile_end();
  EXPECT_EQ(mh::split_count(), 1);
  EXPECT_EQ(0, std::memcmp(plain.data(), profiled.data(), plain.size() * sizeof(float)));
  ASSERT_FALSE(profile.regions.empty());
  double in_regions = 0;
  size_t most_tasks = 0;
  for (const mh::ParallelRegion& r : profile.regions) {
    double tasks = 0;
    for (float ms : r.task_ms) {
      tasks += ms;
      EXPECT_GE(ms, 0.0f);
    }
    ASSERT_EQ(r.slot_ms.size(), 1u);  // one thread ran them all
    EXPECT_NEAR(r.slot_ms[0], tasks, 1e-3);
    EXPECT_GE(r.wall_ms, tasks * 0.999);
    in_regions += r.wall_ms;
    most_tasks = std::max(most_tasks, r.task_ms.size());
    EXPECT_LT(r.phase, static_cast<int>(profile.phases.size()));
  }
  EXPECT_GT(most_tasks, 8u);  // several chunks a thread, as at 8 threads
  double phases = 0;
  for (double ms : profile.phase_ms) phases += ms;
  EXPECT_NEAR(phases, profile.total_ms, 1e-6);
  EXPECT_LE(in_regions, profile.total_ms);
  EXPECT_NE(std::find(profile.phases.begin(), profile.phases.end(), "attention: heads"), profile.phases.end());
  // On 3 threads: every task timed once, by the thread that ran it (ThreadSanitizer watches).
  Threads three(3);
  mh::profile_begin();
  ASSERT_EQ(p.model.forward(profiled.data(), nullptr, x.data(), x.data(), n, n, mask), "");
  const mh::ThreadProfile split = mh::profile_end();
  EXPECT_EQ(0, std::memcmp(plain.data(), profiled.data(), plain.size() * sizeof(float)));
  ASSERT_FALSE(split.regions.empty());
  for (const mh::ParallelRegion& r : split.regions) {
    ASSERT_EQ(r.slot_ms.size(), 3u);
    double tasks = 0, slots = 0;
    for (float ms : r.task_ms) tasks += ms;
    for (float ms : r.slot_ms) slots += ms;
    EXPECT_NEAR(slots, tasks, 1e-3);
  }
}

TEST(Parallel, APhaseThatOutlivesItsProfileLeavesTheNextOneAlone) {
  // Phases are recorded by index: one begun in a profile and ended in the next must not switch
  // the new profile to a phase it does not have (the sanitizer build would see the write).
  std::optional<mh::ProfilePhase> old;
  mh::profile_begin();
  {
    mh::ProfilePhase a("norms"), b("attention: heads");
    old.emplace("mlp: products");  // inside the third phase: restoring it would switch to index 2
  }
  mh::profile_end();
  mh::profile_begin();
  old.reset();
  { mh::ProfilePhase a("norms"); }
  const mh::ThreadProfile p = mh::profile_end();
  ASSERT_EQ(p.phases.size(), 2u);  // "" and "norms": nothing of the first profile
  EXPECT_EQ(p.phases[1], "norms");
  EXPECT_EQ(p.phase_ms.size(), 2u);
  double phases = 0;
  for (double ms : p.phase_ms) phases += ms;
  EXPECT_NEAR(phases, p.total_ms, 1e-6);
}

TEST(Parallel, OverflowIsStillReportedFromAnyHead) {
  // One head's scores overflow float32 while the others stay finite: a split call must still
  // refuse to return a silently wrong picture.
  test::Pair p = test::make_pair(64, 4, 0, false, 3);
  std::vector<float> w(64 * 64, 0.0f);
  const int n = 128;
  std::vector<float> x(size_t(n) * 64, 0.0f);
  for (int r = 0; r < n; ++r) x[size_t(r) * 64 + r % 64] = 1.0f;
  std::vector<float> staged[mh::kNumWeights];
  for (int i = 0; i < 4; ++i) staged[i] = w;
  for (int i = 0; i < 64; ++i) staged[0][i * 64 + i] = staged[1][i * 64 + i] = 1.0f;
  for (int i = 0; i < 64; ++i) staged[2][i * 64 + i] = staged[3][i * 64 + i] = 1.0f;
  // Head 3's queries are 3e38 in each of its 16 columns (finite), so its scores sum 16 of them: +inf.
  for (int i = 48; i < 64; ++i) staged[0][i * 64 + i] = 3e38f;
  for (int r = 0; r < n; ++r)
    for (int i = 48; i < 64; ++i) x[size_t(r) * 64 + i] = 1.0f;
  ASSERT_EQ(p.model.replace_weights(staged, 0x0Fu), "");
  for (int threads : {1, 2}) {
    Threads pool(threads);
    std::vector<float> y(size_t(n) * 64);
    EXPECT_NE(p.model.forward(y.data(), nullptr, x.data(), x.data(), n, n, {}).find("overflow"),
              std::string::npos)
        << threads << " threads";
  }
}

}  // namespace
