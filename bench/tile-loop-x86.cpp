// The GEMM's inner loop written by hand in x86 assembly: the instructions V8 11.3 emits for
// src/core/gemm.cpp's tile<5>() loop (read with node --print-wasm-code), with the wasm sandbox's
// index registers and zero-extending moves left out, timed on data in L1 beside a peak loop
// written the same way. bench/tile-loop.cpp times V8's own code; this answers what is left when
// no compiler is in the way: if the hand-written loop reaches the same fraction of the peak on a
// CPU, the gap to the peak is the CPU's (here: a shared core's load ports), not V8's.
//   fused  per step of k: 2 vector loads of the panel, 5 vbroadcastss of a, 10 vfmadd231ps;
//          peak: 12 independent vfmadd213ps (acc = acc · a + b), as bench/peak.h's relaxed build
//   plain  the same loads, 10 vmulps + 10 vaddps (V8's f32x4.mul then f32x4.add); peak: 12
//          chains of vmulps then vaddps, as bench/peak.h's plain SIMD build
// Every variant, each followed by its peak loop, in every one of 21 rounds; medians; one JSON line each, like
// tile-loop.cpp's. x86-64 with AVX2 and FMA only (elsewhere it says so and exits).
// Built by CMake with -DMULTIHEAD_BENCH=ON (bench/run.sh): build/bench/bench_tile_loop_x86.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#if defined(__x86_64__)
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kDepth = 256;  // steps of k per call: a 256 × 8 panel (8 KB) and 5 × 256 of a (5 KB)
alignas(64) float a_tile[5 * kDepth];
alignas(64) float panel[8 * kDepth];
alignas(64) float out[5 * 8];

// One step of k for row `off`/4 of a, into accumulators a0 (columns 0–3) and a1 (4–7); the panel's
// two vectors are in xmm12 (columns 0–3) and xmm11 (4–7).
#define FUSED_ROW(off, a0, a1)                        \
  "vbroadcastss " #off "(%%rdi), %%xmm10\n"           \
  "vfmadd231ps %%xmm11, %%xmm10, %%xmm" #a1 "\n"      \
  "vfmadd231ps %%xmm12, %%xmm10, %%xmm" #a0 "\n"
#define PLAIN_ROW(off, a0, a1)                        \
  "vbroadcastss " #off "(%%rdi), %%xmm10\n"           \
  "vmulps %%xmm11, %%xmm10, %%xmm13\n"                \
  "vaddps %%xmm13, %%xmm" #a1 ", %%xmm" #a1 "\n"      \
  "vmulps %%xmm12, %%xmm10, %%xmm14\n"                \
  "vaddps %%xmm14, %%xmm" #a0 ", %%xmm" #a0 "\n"
#define CLOBBERS                                                                                   \
  "rax", "rcx", "rdi", "rsi", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", \
      "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "memory"
// The tile's 10 accumulators (xmm0–xmm9) set to 0 before the loop, and stored to `c` after it so
// that the work is kept.
#define ZERO_ACCUMULATORS                                                               \
  "vxorps %%xmm0, %%xmm0, %%xmm0\n vmovaps %%xmm0, %%xmm1\n vmovaps %%xmm0, %%xmm2\n"   \
  "vmovaps %%xmm0, %%xmm3\n vmovaps %%xmm0, %%xmm4\n vmovaps %%xmm0, %%xmm5\n"          \
  "vmovaps %%xmm0, %%xmm6\n vmovaps %%xmm0, %%xmm7\n vmovaps %%xmm0, %%xmm8\n"          \
  "vmovaps %%xmm0, %%xmm9\n"
#define STORE_ACCUMULATORS                                                                \
  "mov %[c], %%rcx\n"                                                                    \
  "vmovups %%xmm0, (%%rcx)\n vmovups %%xmm1, 16(%%rcx)\n vmovups %%xmm2, 32(%%rcx)\n"   \
  "vmovups %%xmm3, 48(%%rcx)\n vmovups %%xmm4, 64(%%rcx)\n vmovups %%xmm5, 80(%%rcx)\n" \
  "vmovups %%xmm6, 96(%%rcx)\n vmovups %%xmm7, 112(%%rcx)\n vmovups %%xmm8, 128(%%rcx)\n" \
  "vmovups %%xmm9, 144(%%rcx)\n"
// The rows in V8's order (last row first).
#define TILE_LOOP(ROW)                                                                           \
  asm volatile(                                                                                  \
      ZERO_ACCUMULATORS                                                                            \
      "mov %[a], %%rdi\n mov %[b], %%rsi\n lea 8192(%%rsi), %%rax\n"                              \
      ".p2align 5\n1:\n"                                                                           \
      "vmovups 16(%%rsi), %%xmm11\n vmovups (%%rsi), %%xmm12\n" ROW(16, 8, 9) ROW(12, 6, 7)      \
          ROW(8, 4, 5) ROW(4, 2, 3) ROW(0, 0, 1)                                                   \
      "add $20, %%rdi\n add $32, %%rsi\n cmp %%rax, %%rsi\n jb 1b\n"                              \
      STORE_ACCUMULATORS                                                                           \
      :                                                                                            \
      : [a] "m"(a_ptr), [b] "m"(b_ptr), [c] "m"(c_ptr)                                            \
      : CLOBBERS)

// The fused loop exactly as V8 emits it: its stack check at the top of every step (a load, a compare
// and a branch that is not taken: V8 puts one in every loop so that a long loop can be
// interrupted), every load a base + a 32-bit offset as index (a's 5 rows each with a base register
// of its own). (Until gemm.cpp's loop pointers started from g_zero, V8 also copied each offset into
// a register of its own by a zero-extending move every step.)
volatile long stack_limit = 4096;  // below any stack: the check never branches
#define V8_ROW(base, a0, a1)                          \
  "vbroadcastss (%%" #base ",%%r8,1), %%xmm10\n"      \
  "vfmadd231ps %%xmm11, %%xmm10, %%xmm" #a1 "\n"      \
  "vfmadd231ps %%xmm12, %%xmm10, %%xmm" #a0 "\n"
__attribute__((noinline)) void fused_tile_as_v8(const float* a_ptr, const float* b_ptr, float* c_ptr) {
  asm volatile(
      ZERO_ACCUMULATORS
      "mov %[a], %%rdi\n lea 4(%%rdi), %%rdx\n lea 8(%%rdi), %%r10\n lea 12(%%rdi), %%r11\n"
      "lea 16(%%rdi), %%rsi\n mov %[b], %%rax\n xor %%ecx, %%ecx\n xor %%r8d, %%r8d\n"
      ".p2align 5\n1:\n"
      "cmpq %[limit], %%rsp\n jna 9f\n"          // V8: cmpq rsp,[rsi]; jna
      "vmovdqu 16(%%rax,%%rcx,1), %%xmm11\n vmovdqu (%%rax,%%rcx,1), %%xmm12\n"
      V8_ROW(rsi, 8, 9) V8_ROW(r11, 6, 7) V8_ROW(r10, 4, 5) V8_ROW(rdx, 2, 3) V8_ROW(rdi, 0, 1)
      "addl $20, %%r8d\n addl $32, %%ecx\n cmpl $8192, %%ecx\n jb 1b\n"
      "9:\n"
      STORE_ACCUMULATORS
      :
      : [a] "m"(a_ptr), [b] "m"(b_ptr), [c] "m"(c_ptr), [limit] "m"(stack_limit)
      : CLOBBERS, "rdx", "r8", "r10", "r11");
}
__attribute__((noinline)) void fused_tile(const float* a_ptr, const float* b_ptr, float* c_ptr) {
  TILE_LOOP(FUSED_ROW);
}
__attribute__((noinline)) void plain_tile(const float* a_ptr, const float* b_ptr, float* c_ptr) {
  TILE_LOOP(PLAIN_ROW);
}

// 12 independent accumulators, acc = acc · a + b, `steps` times (a in xmm14, b in xmm15).
#define FUSED_PEAK(r) "vfmadd213ps %%xmm15, %%xmm14, %%xmm" #r "\n"
#define PLAIN_PEAK(r) "vmulps %%xmm14, %%xmm" #r ", %%xmm" #r "\n vaddps %%xmm15, %%xmm" #r ", %%xmm" #r "\n"
#define PEAK_LOOP(STEP)                                                                            \
  asm volatile(                                                                                    \
      "vbroadcastss %[a], %%xmm14\n vbroadcastss %[b], %%xmm15\n"                                  \
      "vxorps %%xmm0, %%xmm0, %%xmm0\n vxorps %%xmm1, %%xmm1, %%xmm1\n vxorps %%xmm2, %%xmm2, %%xmm2\n" \
      "vxorps %%xmm3, %%xmm3, %%xmm3\n vxorps %%xmm4, %%xmm4, %%xmm4\n vxorps %%xmm5, %%xmm5, %%xmm5\n" \
      "vxorps %%xmm6, %%xmm6, %%xmm6\n vxorps %%xmm7, %%xmm7, %%xmm7\n vxorps %%xmm8, %%xmm8, %%xmm8\n" \
      "vxorps %%xmm9, %%xmm9, %%xmm9\n vxorps %%xmm10, %%xmm10, %%xmm10\n"                          \
      "vxorps %%xmm11, %%xmm11, %%xmm11\n"                                                          \
      "mov %[steps], %%rcx\n .p2align 5\n2:\n" STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5)     \
          STEP(6) STEP(7) STEP(8) STEP(9) STEP(10) STEP(11) "dec %%rcx\n jnz 2b\n"                 \
      :                                                                                            \
      : [steps] "m"(steps), [a] "m"(kA), [b] "m"(kB)                                                \
      : CLOBBERS)

constexpr float kA = 0.999f, kB = 1e-4f;
__attribute__((noinline)) void fused_peak(long steps) { PEAK_LOOP(FUSED_PEAK); }
__attribute__((noinline)) void plain_peak(long steps) { PEAK_LOOP(PLAIN_PEAK); }

struct Variant {
  const char* name;
  void (*tile)(const float*, const float*, float*);
  void (*peak)(long);
};

double median(std::vector<double> s) {
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

}  // namespace

int main() {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::printf("{\"skipped\": \"this CPU has no AVX2 + FMA\"}\n");
    return 0;
  }
  std::fill(a_tile, a_tile + 5 * kDepth, 0.5f);
  std::fill(panel, panel + 8 * kDepth, 0.25f);
  constexpr int kCalls = 20000, kRounds = 21;
  constexpr double kTileFlops = double(kCalls) * kDepth * 5 * 8 * 2;
  const long peak_steps = static_cast<long>(kTileFlops / (12 * 4 * 2));  // about as many flops
  const Variant variants[] = {{"fused (the relaxed build's loop)", fused_tile, fused_peak},
                              {"fused, as V8 emits it (stack check, index registers)", fused_tile_as_v8, fused_peak},
                              {"plain (the SIMD build's loop)", plain_tile, plain_peak}};
  constexpr int kVariants = sizeof variants / sizeof variants[0];
  std::vector<double> tile_s[kVariants], peak_s[kVariants];
  for (const Variant& v : variants) {  // warm-up
    for (int i = 0; i < kCalls / 10; ++i) v.tile(a_tile, panel, out);
    v.peak(peak_steps / 10);
  }
  // Interleaved: each round runs every variant, each followed by its peak loop.
  for (int round = 0; round < kRounds; ++round) {
    for (int v = 0; v < kVariants; ++v) {
      auto t0 = Clock::now();
      for (int i = 0; i < kCalls; ++i) variants[v].tile(a_tile, panel, out);
      tile_s[v].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      t0 = Clock::now();
      variants[v].peak(peak_steps);
      peak_s[v].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
  }
  for (int v = 0; v < kVariants; ++v) {
    const double tile = kTileFlops / median(tile_s[v]) / 1e9, peak = peak_steps * 96.0 / median(peak_s[v]) / 1e9;
    std::printf("{\"tileLoopByHand\": \"%s\", \"gflops\": %.2f, \"peakGflops\": %.2f, \"ofPeak\": %.3f}\n",
                variants[v].name, tile, peak, tile / peak);
  }
  if (out[0] == 12345.0f) std::printf("#");
}
#else
int main() { std::printf("{\"skipped\": \"x86-64 only\"}\n"); }
#endif
