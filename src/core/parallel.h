// A small, fixed pool of threads that one forward call splits its work over.
//
// Why a pool of our own and not OpenMP: Emscripten 3.1.6 has no OpenMP, and a browser page cannot
// start a thread and wait for it in the same call (a Web Worker starts only once the page's event
// loop runs), so threads are started once, up front (set_thread_count), and every parallel_for
// hands out its tasks dynamically: whichever thread is free takes the next one, and the calling
// thread takes part. If a worker is slow to wake, or never started, the caller simply runs more of
// the tasks itself: a parallel_for can never wait on a thread that is not there.
//
// Builds without threads (the default wasm build, compiled without -pthread) run every task on the
// calling thread, in order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace mh {

// The most threads: the hardware's count up to this (bindings/runtime.mjs asks for one per core; a
// browser reports its own count in navigator.hardwareConcurrency).
constexpr int kMaxThreads = 64;

// Sets how many threads (the caller included) parallel_for uses, clamped to 1 … kMaxThreads (to 1
// in a build without threads); starts or stops workers as needed. Returns the count in effect.
// Call it between forward calls, never from inside a task.
int set_thread_count(int threads);
int thread_count();

// How many threads work is split for: thread_count(), or profile_begin's split_as while it
// profiles (below).
int split_count();

// True on a thread while it runs a parallel_for task: code that may be called from a task (such as
// gemm) then stays on that thread instead of starting a parallel_for of its own.
bool in_parallel_task();

// Runs task(context, i, slot) for every i in [0, count) and returns when all have finished.
// slot ∈ [0, thread_count()) names the thread running the task, so a task can use that thread's
// scratch memory. Tasks must write disjoint memory, must not allocate, and must not call
// parallel_for themselves. The caller runs tasks too; the order tasks run in is unspecified.
using ParallelTask = void (*)(void* context, int i, int slot);
void parallel_for(int count, ParallelTask task, void* context);

// The same for a lambda: parallel_for(n, [&](int i, int slot) { … }).
template <class Body>
void parallel_for(int count, Body&& body) {
  using Callable = std::remove_reference_t<Body>;
  parallel_for(
      count, [](void* context, int i, int slot) { (*static_cast<Callable*>(context))(i, slot); },
      const_cast<void*>(static_cast<const void*>(&body)));
}

// body(begin, end) over [0, count) in pieces of at least `grain` (about four a thread, for
// whichever thread is free), or in one piece where the count is under two grains; every piece but
// the last a multiple of `multiple` long. For elementwise and row-by-row work (activations, norms,
// residual adds): each element is computed as on one thread (vector code over whole vectors: a
// multiple of 4), so the results are the same bits at every thread count.
template <class Body>
void parallel_ranges(int64_t count, int64_t grain, Body&& body, int64_t multiple = 1) {
  if (count <= 0) return;
  const int64_t most = int64_t{4} * split_count();
  const int64_t pieces = std::min<int64_t>(most, count / (grain > 0 ? grain : 1));
  if (pieces < 2) {
    body(int64_t{0}, count);
    return;
  }
  const int64_t size = ((count + pieces - 1) / pieces + multiple - 1) / multiple * multiple;
  parallel_for(static_cast<int>((count + size - 1) / size), [&](int i, int) {
    const int64_t begin = int64_t{i} * size;
    body(begin, std::min(count, begin + size));
  });
}

// Profiling, for the thread-scaling benchmark (bench/thread-scaling.mjs): between profile_begin and
// profile_end every parallel_for records its wall time and each task's time, and the calling
// thread's time is split into phases (ProfilePhase), so that what runs outside parallel regions and
// what is lost at each barrier can be measured, and other thread counts predicted from the tasks'
// times. Off, it costs one relaxed load per parallel_for and per phase.
struct ParallelRegion {
  int phase = 0;                // index into ThreadProfile::phases
  double wall_ms = 0;           // from the job's start to its last task's end, on the calling thread
  std::vector<float> task_ms;   // each task's time, in task order (the order they are handed out)
  std::vector<float> slot_ms;   // each thread's busy time in this region
};
struct ThreadProfile {
  double total_ms = 0;                 // profile_begin to profile_end
  std::vector<std::string> phases;     // phase names; "" is time outside any phase
  std::vector<double> phase_ms;        // the calling thread's time in each phase, regions included
  std::vector<ParallelRegion> regions;
};
// split_as > 1 on one thread: work is split into the tasks it gets at split_as threads (split_count),
// run one after another, so that each task's time at that count is measured on one core.
void profile_begin(int split_as = 0);
ThreadProfile profile_end();



// Names what the calling thread does until the scope ends (nested scopes restore the outer one).
// `name` must be a string literal. Ignored inside tasks.
class ProfilePhase {
 public:
  explicit ProfilePhase(const char* name);
  ~ProfilePhase();
  ProfilePhase(const ProfilePhase&) = delete;
  ProfilePhase& operator=(const ProfilePhase&) = delete;

 private:
  int outer_ = 0;          // the phase it interrupts
  unsigned recording_ = 0;  // which profile it began in: a phase outlives none
  bool active_ = false;
};

}  // namespace mh
