// kernels/storage_types.hpp — the storage types a blob may hold (float, bfloat16, IEEE half) and their
// conversions to and from float, the same lines on both devices.
//
// Arithmetic is always float: a 16-bit value is widened before a functor and rounded after it
// (for_each.hpp's ToFloat and FromFloat). Rounding is to nearest, ties to even, as the GPU's
// __float2bfloat16_rn and __float2half_rn do: a float past the 16-bit range becomes ±infinity (half's
// largest finite value is 65504; from 65520 up it rounds to infinity), NaN stays NaN (quiet), and
// values below half's normal range become its subnormals. Software conversions are used on both
// devices, so the CPU and the GPU round every value to the same bits.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define CORTADO_STORAGE_HD __host__ __device__
#else
#define CORTADO_STORAGE_HD
#endif

namespace cortado {

enum class DataType { kFloat, kBFloat16, kFloat16 };

// Bytes per element.
inline constexpr int SizeOf(DataType type) { return type == DataType::kFloat ? 4 : 2; }
inline const char* DataTypeName(DataType type) {
  return type == DataType::kFloat ? "float" : type == DataType::kBFloat16 ? "bf16" : "fp16";
}

// 16-bit storage: the bits only; all arithmetic goes through float.
struct BFloat16 {
  uint16_t bits;
};
struct Float16 {
  uint16_t bits;
};

CORTADO_STORAGE_HD inline uint32_t BitsOfFloat(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

CORTADO_STORAGE_HD inline float FloatOfBits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// Rounds q (the kept bits) up when the dropped bits `rest` are past half of `half`'s double, or a tie
// with q odd.
CORTADO_STORAGE_HD inline uint32_t RoundToEven(uint32_t q, uint32_t rest, uint32_t half) {
  return q + ((rest > half || (rest == half && (q & 1u))) ? 1u : 0u);
}

CORTADO_STORAGE_HD inline BFloat16 ToBFloat16(float f) {
  const uint32_t u = BitsOfFloat(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return {static_cast<uint16_t>((u >> 16) | 0x0040u)};  // NaN, quiet
  return {static_cast<uint16_t>(RoundToEven(u >> 16, u & 0xFFFFu, 0x8000u))};  // a carry reaches ±inf
}

CORTADO_STORAGE_HD inline float ToFloat(BFloat16 v) { return FloatOfBits(uint32_t{v.bits} << 16); }

CORTADO_STORAGE_HD inline Float16 ToFloat16(float f) {
  const uint32_t u = BitsOfFloat(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return {static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu))};  // NaN
  if (abs >= 0x477FF000u) return {static_cast<uint16_t>(sign | 0x7C00u)};  // ≥ 65520 and ∞: ∞
  if (abs < 0x38800000u) {  // below 2^-14: a subnormal half (units of 2^-24), or zero
    const uint32_t exponent = abs >> 23;
    if (exponent < 102) return {static_cast<uint16_t>(sign)};  // below 2^-25: zero
    const uint32_t significand = (abs & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14 … 24
    const uint32_t q = RoundToEven(significand >> shift, significand & ((1u << shift) - 1), 1u << (shift - 1));
    return {static_cast<uint16_t>(sign | q)};  // a carry makes the smallest normal, as it should
  }
  const uint32_t rebiased = abs - (112u << 23);  // exponent bias 127 → 15
  return {static_cast<uint16_t>(sign | RoundToEven(rebiased >> 13, rebiased & 0x1FFFu, 0x1000u))};
}

CORTADO_STORAGE_HD inline float ToFloat(Float16 v) {
  const uint32_t sign = uint32_t{v.bits & 0x8000u} << 16;
  const uint32_t exponent = (v.bits >> 10) & 0x1Fu;
  const uint32_t mantissa = v.bits & 0x3FFu;
  if (exponent == 0) {  // zero or subnormal: mantissa · 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return FloatOfBits(sign | 0x7F800000u | (mantissa << 13));
  return FloatOfBits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// The value a float becomes when stored as `type` and read back.
CORTADO_STORAGE_HD inline float RoundedTo(DataType type, float f) {
  return type == DataType::kBFloat16 ? ToFloat(ToBFloat16(f)) : type == DataType::kFloat16 ? ToFloat(ToFloat16(f)) : f;
}

// The storage type a C++ type names.
template <typename T>
struct StorageTypeOf;
template <>
struct StorageTypeOf<float> {
  static constexpr DataType value = DataType::kFloat;
};
template <>
struct StorageTypeOf<BFloat16> {
  static constexpr DataType value = DataType::kBFloat16;
};
template <>
struct StorageTypeOf<Float16> {
  static constexpr DataType value = DataType::kFloat16;
};

// visit(T{}) with T the C++ type of `type` (float, BFloat16 or Float16): a layer whose arithmetic runs
// over any storage type picks its instantiation once, with a generic lambda,
//   VisitStorageType(x.data_type(), [&](auto zero) { using T = decltype(zero); ... });
template <typename Visit>
decltype(auto) VisitStorageType(DataType type, Visit&& visit) {
  switch (type) {
    case DataType::kBFloat16: return visit(BFloat16{});
    case DataType::kFloat16: return visit(Float16{});
    case DataType::kFloat: break;
  }
  return visit(0.0f);
}

}  // namespace cortado
