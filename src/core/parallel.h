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

#include <type_traits>

namespace mh {

constexpr int kMaxThreads = 16;

// Sets how many threads (the caller included) parallel_for uses, clamped to 1 … kMaxThreads (to 1
// in a build without threads); starts or stops workers as needed. Returns the count in effect.
// Call it between forward calls, never from inside a task.
int set_thread_count(int threads);
int thread_count();

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

}  // namespace mh
