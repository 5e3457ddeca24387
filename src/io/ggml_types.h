// ggml's tensor types, as GGUF files name them by number (ggml.h's enum ggml_type), and the
// dequantization of the block types to float32. A quantized row is a run of blocks; each block holds
// `block` elements in `bytes` bytes (Q8_0: 32 elements as one f16 scale + 32 int8 = 34 bytes).
// Dequantization is bit for bit what ggml's reference dequantize_row_* computes (float32, no fused
// multiply-add), written from the block layouts of ggml-common.h.
#pragma once

#include <cstdint>
#include <string>

namespace mh::ggml {

enum Type : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ8_1 = 9,
  kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kQ8_K = 15,
  kIQ2_XXS = 16, kIQ2_XS = 17, kIQ3_XXS = 18, kIQ1_S = 19, kIQ4_NL = 20, kIQ3_S = 21, kIQ2_S = 22,
  kIQ4_XS = 23, kI8 = 24, kI16 = 25, kI32 = 26, kI64 = 27, kF64 = 28, kIQ1_M = 29, kBF16 = 30,
  kTQ1_0 = 34, kTQ2_0 = 35, kMXFP4 = 39, kNVFP4 = 40, kQ1_0 = 41, kQ2_0 = 42,
};

struct TypeInfo {
  const char* name;  // as llama.cpp prints it, upper case: "Q4_K"
  int64_t block;     // elements per block (1 for F32, F16, BF16, the integers)
  uint32_t bytes;    // bytes per block
  bool dequantizable;
};

// nullptr where `type` is no ggml type (unknown, or one ggml has removed from files: 4, 5, 31–33, 36–38).
const TypeInfo* type_info(uint32_t type);
// "Q4_K", or "type 31" for a number that names none.
std::string type_name(uint32_t type);
// The types dequantize_row takes, as a list for messages: "F32, F16, BF16, Q4_0, …".
std::string supported_types();

// Dequantizes `count` elements (a whole number of blocks) from src, which needs no alignment, to
// dst. "" or why not (a type it cannot dequantize, a count that is not whole blocks).
std::string dequantize_row(uint32_t type, const void* src, float* dst, int64_t count);

// The types whose blocks the model can keep as they are (core/blocks.h): per 32 elements a
// scale, a min and 32 small integers q whose value scale·q − min (in float32, the product rounded
// first) is exactly what dequantize_row gives. kEight: Q8_0 and Q5_0, q in −128…127, min 0; kFour:
// Q4_0, Q4_1, Q4_K, q in 0…15; kFive: Q5_1, Q5_K, q in 0…31; kSix: Q6_K, a scale per 16 elements
// (d·sc), q in −32…31, min 0. Other types: kNone.
enum class Regrouping { kNone, kEight, kFour, kFive, kSix };
Regrouping regrouping(uint32_t type);
// count elements (whole blocks of `type`, a kEight, kFour, kFive or kSix type) → count/32 scales and mins
// (kSix: count/16 scales, no mins), count q.
void regroup_row(uint32_t type, const void* src, int64_t count, float* scales, float* mins, int8_t* q);

// count elements of Q4_K (whole blocks of 256) → per block of 256 its d and dmin (f16 widened), the 8
// sub-blocks' 6-bit sc and m, and 256 q (0…15): value = (d · sc) · q − dmin · m, the kQ4K form.
void regroup_q4_k_row(const void* src, int64_t count, float* d, float* dmin, uint8_t* sc, uint8_t* m, int8_t* q);
// The same for Q5_K, its q 0…31 (the fifth bit added): the kQ5K form.
void regroup_q5_k_row(const void* src, int64_t count, float* d, float* dmin, uint8_t* sc, uint8_t* m, int8_t* q);

// count elements of Q6_K (whole blocks of 256) → per block of 256 its d (f16 widened) and 16 int8 sc
// (one for each 16 elements), and 256 q (u − 32, −32…31): value = (d · sc) · q, the kQ6K form.
void regroup_q6_k_row(const void* src, int64_t count, float* d, int8_t* sc, int8_t* q);

// count float32 values (a multiple of 32) → Q8_0 or Q4_0 blocks at dst, as ggml's reference
// quantizers (quantize_row_q8_0_ref, quantize_row_q4_0_ref) make them, so that a checkpoint
// quantized while loading holds what llama.cpp's conversion of it would. type: kQ8_0 or kQ4_0.
void quantize_row(uint32_t type, const float* src, void* dst, int64_t count);

}  // namespace mh::ggml
