#include "core/parallel.h"

#include <atomic>
#include <chrono>
#include <cstring>

#if !defined(__EMSCRIPTEN__) || defined(__EMSCRIPTEN_PTHREADS__)
#define MH_HAVE_THREADS 1
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>
#else
#define MH_HAVE_THREADS 0
#endif

#if defined(__EMSCRIPTEN__)
#include <emscripten.h>
// The profile's clock, in ms on the calling thread's own origin (only differences on one thread are
// taken). steady_clock in Emscripten 3.1.6 is clock_gettime over process.hrtime() in Node: an array
// allocated a call, ~0.5 µs, which the profile's thousands of reads a step (two a task) had added to
// the tasks and the serial phases it measures. performance.now() is a plain number.
EM_JS(double, profile_clock_ms, (), { return performance.now(); });
#endif

namespace mh {

namespace {
thread_local bool running_task = false;

#if defined(__EMSCRIPTEN__)
double now_ms() { return profile_clock_ms(); }
#else
double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
#endif

// The profile (parallel.h) as it is recorded, written by the calling thread only, except a
// region's task and slot times, which tasks write at their own index and slot. Phases are found by
// their name's pointer first (names are literals; strcmp only for a name met at another address),
// and every region's times sit in two flat arrays: a region costs no allocation and a phase switch
// no string compares. Both had run on the calling thread, ~0.3 µs a region and ~0.1 µs a switch in
// wasm: serial time the prediction charged to the forward pass. profile_end() builds the ThreadProfile.
struct RecordedRegion {
  int phase = 0;
  double wall_ms = 0;
  size_t first_task = 0, tasks = 0, first_slot = 0, slots = 0;
};
struct Recording {
  std::vector<const char*> phase_names;
  std::vector<double> phase_ms;
  std::vector<RecordedRegion> regions;
  std::vector<float> task_ms, slot_ms;
};
// Where the tasks of the region being run write their times (null pointers: not recorded).
struct RegionTimes {
  float* task_ms = nullptr;
  float* slot_ms = nullptr;
  RecordedRegion* record = nullptr;
  explicit operator bool() const { return record != nullptr; }
};
std::atomic<bool> profiling{false};
Recording recording;
double phase_since = 0;  // now_ms()
int current_phase = 0;   // index into recording.phase_names
unsigned recordings = 0;  // profiles begun: a ProfilePhase begun in an earlier one restores nothing

int phase_index(const char* name) {
  const std::vector<const char*>& names = recording.phase_names;
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  for (size_t i = 0; i < names.size(); ++i)
    if (std::strcmp(names[i], name) == 0) return static_cast<int>(i);
  recording.phase_names.push_back(name);
  recording.phase_ms.push_back(0);
  return static_cast<int>(names.size()) - 1;
}

void switch_phase(int phase) {
  const double now = now_ms();
  recording.phase_ms[static_cast<size_t>(current_phase)] += now - phase_since;
  phase_since = now;
  current_phase = phase;
}

// A region for the parallel_for about to run, or none when not profiling (or inside a task).
RegionTimes begin_region(int count, int threads) {
  if (!profiling.load(std::memory_order_relaxed) || running_task) return {};
  Recording& r = recording;
  RecordedRegion& region = r.regions.emplace_back();
  region.phase = current_phase;
  region.first_task = r.task_ms.size(), region.tasks = static_cast<size_t>(count);
  region.first_slot = r.slot_ms.size(), region.slots = static_cast<size_t>(threads);
  r.task_ms.resize(r.task_ms.size() + region.tasks, 0.0f);
  r.slot_ms.resize(r.slot_ms.size() + region.slots, 0.0f);
  return {r.task_ms.data() + region.first_task, r.slot_ms.data() + region.first_slot, &region};
}

// running_task for a loop of tasks, restored after (the caller of a serial loop may itself be
// running a task). Set once a loop, not a task: in wasm the threads' thread_local blocks are small
// allocations that can share a cache line, and a write a task made two threads' tasks contend for it.
struct TaskScope {
  bool outer = running_task;
  TaskScope() { running_task = true; }
  ~TaskScope() { running_task = outer; }
};

// Runs one task (inside a TaskScope), timed into `region` (task number `index`) when profiling;
// returns that time (ms), which the caller adds to its slot's busy time once for all the tasks it
// ran together.
inline float run_one(ParallelTask task, void* context, int i, float* task_ms = nullptr, int index = 0,
                     int slot = 0) {
  float ms = 0;
  if (task_ms) {
    const double start = now_ms();
    task(context, i, slot);
    ms = static_cast<float>(now_ms() - start);
    task_ms[index] = ms;
  } else {
    task(context, i, slot);
  }
  return ms;
}

// The serial loop, for one thread or one task.
void run_serially(int count, ParallelTask task, void* context) {
  const RegionTimes region = begin_region(count, 1);
  const double start = region ? now_ms() : 0;
  const TaskScope scope;
  float busy = 0;
  for (int i = 0; i < count; ++i) busy += run_one(task, context, i, region.task_ms, i);
  if (region) {
    region.slot_ms[0] += busy;
    region.record->wall_ms = now_ms() - start;
  }
}
}  // namespace

namespace {
int split_as_threads = 0;
}

int split_count() {
  return split_as_threads > 0 && profiling.load(std::memory_order_relaxed) ? split_as_threads : thread_count();
}

void profile_begin(int split_as) {
  split_as_threads = split_as > 1 ? split_as : 0;
  recording = Recording{};
  ++recordings;
  recording.regions.reserve(1024);  // a decoding step of GPT-2 small has 62
  recording.task_ms.reserve(size_t{1} << 16);
  recording.slot_ms.reserve(size_t{1} << 14);
  current_phase = phase_index("");
  phase_since = now_ms();
  profiling.store(true);
}

ThreadProfile profile_end() {
  if (!profiling.load()) return {};
  switch_phase(phase_index(""));
  profiling.store(false);
  split_as_threads = 0;
  ThreadProfile out;
  out.phases.assign(recording.phase_names.begin(), recording.phase_names.end());
  out.phase_ms = recording.phase_ms;
  for (double ms : out.phase_ms) out.total_ms += ms;
  for (const RecordedRegion& r : recording.regions) {
    ParallelRegion& region = out.regions.emplace_back();
    region.phase = r.phase;
    region.wall_ms = r.wall_ms;
    const auto tasks = recording.task_ms.begin() + static_cast<std::ptrdiff_t>(r.first_task);
    const auto slots = recording.slot_ms.begin() + static_cast<std::ptrdiff_t>(r.first_slot);
    region.task_ms.assign(tasks, tasks + static_cast<std::ptrdiff_t>(r.tasks));
    region.slot_ms.assign(slots, slots + static_cast<std::ptrdiff_t>(r.slots));
  }
  recording = Recording{};
  return out;
}

ProfilePhase::ProfilePhase(const char* name) {
  if (!profiling.load(std::memory_order_relaxed) || running_task) return;
  active_ = true;
  outer_ = current_phase;
  recording_ = recordings;
  switch_phase(phase_index(name));
}

ProfilePhase::~ProfilePhase() {
  if (active_ && recording_ == recordings && profiling.load(std::memory_order_relaxed)) switch_phase(outer_);
}

bool in_parallel_task() { return running_task; }

#if MH_HAVE_THREADS
namespace {

// One job at a time. `ticket` packs (generation << 32 | task count << 16 | next task index): a
// thread claims tasks with one fetch_add (1 … kMaxClaim of them, run_tasks), and the value it gets
// back names the job, its count and the first task, so a claim can never be of a task that does
// not exist. (A separate count field let a
// worker finishing job k read job k + 1's count before k + 1 was published, and claim a task of
// job k that did not exist: the back-to-back test caught it. A compare-and-swap loop on the ticket
// was safe too, but 16 threads claiming ~100 tasks a region retried each other's swaps.) A claim
// past the count fails and leaves the index at most kMaxClaim higher: at most one such claim per
// thread a job (and one that straddles the count), so the index stays below 2^16. The task and context are written before the job is published and
// stay fixed until all of its tasks have finished (done == count), which cannot happen while a
// worker still runs one of them. A worker may claim from whichever job is published, the next one
// too: set_thread_count waits until no worker is claiming (busy == 0), so a worker's slot is in use
// for every job it claims from.
struct Pool {
  std::vector<std::thread> workers;
  // Each on a cache line of its own: every task claims on `ticket` and counts itself on `done`,
  // and a claim should not wait for a line another thread holds only to count.
  alignas(64) std::atomic<uint64_t> ticket{0};
  alignas(64) std::atomic<int> done{0};
  alignas(64) std::atomic<int> sleepers{0};
  alignas(64) std::atomic<int> busy{0};  // workers claiming tasks
  alignas(64) std::atomic<bool> stopping{false};
  ParallelTask task = nullptr;
  void* context = nullptr;
  RegionTimes region;  // the job's profile, when profiling
  int first = 0;                     // the job's first task in its parallel_for (jobs of 65,535)
  std::mutex mutex;
  std::condition_variable wake;
  std::atomic<int> threads_in_use{1};  // workers with slot >= this sit out

  // Workers are only ever added (fewer threads just idles some): stopping one would make the
  // caller wait for it, and a browser's main thread must not block (it would also warn).
  ~Pool();
};

Pool pool;

// A claim takes up to kMaxClaim tasks (run_tasks); room for the failed claims' overshoot.
constexpr int kMaxClaim = 8;
constexpr int kMaxTasksPerJob = 0xffff - (kMaxThreads + 1) * kMaxClaim;
uint32_t generation_of(uint64_t ticket) { return static_cast<uint32_t>(ticket >> 32); }
int count_of(uint64_t ticket) { return static_cast<int>((ticket >> 16) & 0xffff); }
int index_of(uint64_t ticket) { return static_cast<int>(ticket & 0xffff); }

// Claims and runs tasks of the published job until a claim finds none left. A claim takes about a
// (2 · threads)th of the tasks left, 1 … kMaxClaim, consecutive ones (guided self-scheduling): in
// wasm a claim on the ticket's line cost ~0.14 µs against another thread's (0.03 natively), and
// a decoding step's regions hand out ~8 tasks of 1–3 µs a thread. The last tasks still go one at
// a time, so a thread that is late is still balanced by the others. The size comes from a read of
// the ticket that may be stale (another job's), which only makes a claim smaller or larger: what
// it claims is what the ticket it gets back says, [index, index + take) within that job's count.
void run_tasks(int slot) {
  const int threads = pool.threads_in_use.load(std::memory_order_relaxed);
  const TaskScope scope;
  for (;;) {
    const uint64_t seen = pool.ticket.load(std::memory_order_relaxed);
    const int take = std::clamp((count_of(seen) - index_of(seen)) / (2 * threads), 1, kMaxClaim);
    const uint64_t ticket = pool.ticket.fetch_add(static_cast<uint64_t>(take), std::memory_order_acq_rel);
    const int index = index_of(ticket), end = std::min(count_of(ticket), index + take);
    if (index >= end) return;
    float busy = 0;
    for (int i = index; i < end; ++i) busy += run_one(pool.task, pool.context, i, pool.region.task_ms, pool.first + i, slot);
    if (pool.region) pool.region.slot_ms[slot] += busy;  // before done: the job is alive
    pool.done.fetch_add(end - index, std::memory_order_release);
  }
}

// A worker spins for a short while after each job (a forward call runs several parallel_for in a
// row, and a benchmark or a typing user calls again soon), then sleeps until the next one.
// The clock is read only once a spin has gone on for a while (its first reading sets the end), and
// it is now_ms(): a job that comes within ~256 turns of the loop, as the next region of a forward
// call does, finds the worker in its loads, not in a clock (steady_clock was ~0.5 µs in wasm).
void worker_main(int slot) {
  constexpr double kSpinMs = 0.3;
  uint32_t seen = generation_of(pool.ticket.load());
  while (!pool.stopping.load()) {
    double spin_until = -1;
    uint32_t current = generation_of(pool.ticket.load(std::memory_order_acquire));
    for (int i = 0; current == seen && !pool.stopping.load(std::memory_order_relaxed); ++i) {
      if ((i & 255) == 255) {
        const double now = now_ms();
        if (spin_until < 0) {
          spin_until = now + kSpinMs;
        } else if (now > spin_until) {
          std::unique_lock<std::mutex> lock(pool.mutex);
          pool.sleepers.fetch_add(1);
          pool.wake.wait(lock, [&] {
            return pool.stopping.load() || generation_of(pool.ticket.load()) != seen;
          });
          pool.sleepers.fetch_sub(1);
        }
      }
      current = generation_of(pool.ticket.load(std::memory_order_acquire));
    }
    if (pool.stopping.load()) return;
    seen = current;
    pool.busy.fetch_add(1);
    if (slot < pool.threads_in_use.load()) run_tasks(slot);
    pool.busy.fetch_sub(1);
  }
}

// At exit (natively; a wasm module never exits): joinable threads must be joined.
Pool::~Pool() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping.store(true);
  }
  wake.notify_all();
  for (std::thread& worker : workers) worker.join();
}

}  // namespace

int set_thread_count(int threads) {
  threads = threads < 1 ? 1 : threads > kMaxThreads ? kMaxThreads : threads;
  for (int slot = static_cast<int>(pool.workers.size()) + 1; slot < threads; ++slot)
    pool.workers.emplace_back(worker_main, slot);
  pool.threads_in_use.store(threads);
  while (pool.busy.load() != 0) {  // a worker still claiming saw the old count (see Pool)
  }
  return threads;
}

int thread_count() { return pool.threads_in_use.load(std::memory_order_relaxed); }

void parallel_for(int count, ParallelTask task, void* context) {
  if (thread_count() == 1 || count <= 1) {
    run_serially(count, task, context);
    return;
  }
  const RegionTimes region = begin_region(count, thread_count());
  const double start = region ? now_ms() : 0;
  for (int first = 0; first < count; first += kMaxTasksPerJob) {  // jobs of at most 65,535 tasks
    const int tasks = std::min(kMaxTasksPerJob, count - first);
    struct Offset {
      ParallelTask task;
      void* context;
      int first;
    } offset{task, context, first};
    pool.task = first == 0 ? task : [](void* c, int i, int slot) {
      const Offset& o = *static_cast<Offset*>(c);
      o.task(o.context, o.first + i, slot);
    };
    pool.context = first == 0 ? context : &offset;
    pool.region = region;
    pool.first = first;
    pool.done.store(0, std::memory_order_relaxed);
    const uint32_t generation = generation_of(pool.ticket.load()) + 1;
    // Publishes the job (release: task and context are visible to whoever sees this ticket).
    pool.ticket.store(static_cast<uint64_t>(generation) << 32 | static_cast<uint64_t>(tasks) << 16);
    if (pool.sleepers.load() > 0) {
      // Taking the mutex orders this wake-up after a sleeper's check of the ticket. Spin for it
      // instead of blocking: a browser's main thread must not block (Emscripten warns, once).
      while (!pool.mutex.try_lock()) {
      }
      pool.wake.notify_all();
      pool.mutex.unlock();
    }
    run_tasks(0);
    // Every task has been claimed; wait for those still running on other threads.
    while (pool.done.load(std::memory_order_acquire) < tasks) {
    }
  }
  if (region) region.record->wall_ms = now_ms() - start;
}

#else  // a build without threads

int set_thread_count(int) { return 1; }
int thread_count() { return 1; }
void parallel_for(int count, ParallelTask task, void* context) { run_serially(count, task, context); }

#endif

}  // namespace mh
