// storage_types_test.cpp — the 16-bit storage conversions (kernels/storage_types.hpp) against the
// definition of round-to-nearest-even, over every 16-bit value; typed blobs and their float views.
#include <cmath>
#include <cstring>
#include <limits>

#include "cortado/kernels/for_each.hpp"
#include "cortado/memory.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

float Bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// The next float after f towards +∞ (f finite).
float Up(float f) { return std::nextafter(f, std::numeric_limits<float>::infinity()); }
float Down(float f) { return std::nextafter(f, -std::numeric_limits<float>::infinity()); }

}  // namespace

TEST(StorageTypes, HalfDecodesAsIeeeBinary16) {
  EXPECT_EQ(ToFloat(Float16{0x3C00}), 1.0f);
  EXPECT_EQ(ToFloat(Float16{0xC000}), -2.0f);
  EXPECT_EQ(ToFloat(Float16{0x7BFF}), 65504.0f);                  // largest finite
  EXPECT_EQ(ToFloat(Float16{0x0400}), std::ldexp(1.0f, -14));     // smallest normal
  EXPECT_EQ(ToFloat(Float16{0x0001}), std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(ToFloat(Float16{0x03FF}), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_TRUE(std::isinf(ToFloat(Float16{0x7C00})));
  EXPECT_TRUE(std::isnan(ToFloat(Float16{0x7E00})));
  EXPECT_TRUE(std::signbit(ToFloat(Float16{0x8000})));
  EXPECT_EQ(ToFloat(BFloat16{0x3F80}), 1.0f);
  EXPECT_EQ(ToFloat(BFloat16{0xC2F7}), -123.5f);
}

// Every finite half value survives a round trip, and every midpoint between neighbours rounds to the
// even one, while the floats just inside it round to the nearer neighbour.
TEST(StorageTypes, HalfRoundsToNearestEvenAtEveryMidpoint) {
  for (uint32_t bits = 0; bits < 0x7C00; ++bits) {  // positive finite values; negatives mirror them
    const float value = ToFloat(Float16{static_cast<uint16_t>(bits)});
    ASSERT_EQ(ToFloat16(value).bits, bits) << value;
    ASSERT_EQ(ToFloat16(-value).bits, bits | 0x8000u) << value;
    const float next = bits + 1 < 0x7C00 ? ToFloat(Float16{static_cast<uint16_t>(bits + 1)}) : 65536.0f;  // ∞'s place
    const float mid = (value + next) / 2;  // exact in float
    const uint32_t even = (bits & 1u) ? bits + 1 : bits;
    ASSERT_EQ(ToFloat16(mid).bits, even) << "midpoint of " << value << " and " << next;
    ASSERT_EQ(ToFloat16(Down(mid)).bits, bits) << mid;
    ASSERT_EQ(ToFloat16(Up(mid)).bits, bits + 1) << mid;
  }
  EXPECT_EQ(ToFloat16(65519.99f).bits, 0x7BFF);
  EXPECT_EQ(ToFloat16(65520.0f).bits, 0x7C00);  // overflows to ∞
  EXPECT_EQ(ToFloat16(1e10f).bits, 0x7C00);
  EXPECT_EQ(ToFloat16(-std::numeric_limits<float>::infinity()).bits, 0xFC00);
  EXPECT_EQ(ToFloat16(std::ldexp(1.0f, -25)).bits, 0);  // half the smallest subnormal: a tie, to zero
  EXPECT_EQ(ToFloat16(std::ldexp(1.0f, -26)).bits, 0);
  EXPECT_EQ(ToFloat16(std::ldexp(1.0f, -100)).bits, 0);
  EXPECT_TRUE(std::isnan(ToFloat(ToFloat16(std::nanf("")))));
  EXPECT_TRUE(std::isnan(ToFloat(ToFloat16(Bits(0x7F800001u)))));  // a signalling NaN stays a NaN
}

TEST(StorageTypes, BFloat16RoundsToNearestEvenAtEveryMidpoint) {
  for (uint32_t bits = 0; bits < 0x7F80; ++bits) {
    const float value = ToFloat(BFloat16{static_cast<uint16_t>(bits)});
    ASSERT_EQ(ToBFloat16(value).bits, bits);
    ASSERT_EQ(ToBFloat16(-value).bits, bits | 0x8000u);
    const uint32_t mid_bits = (bits << 16) | 0x8000u;  // halfway to the next bf16, as float bits
    const uint32_t even = (bits & 1u) ? bits + 1 : bits;
    ASSERT_EQ(ToBFloat16(Bits(mid_bits)).bits, even) << Bits(mid_bits);
    ASSERT_EQ(ToBFloat16(Bits(mid_bits - 1)).bits, bits);
    ASSERT_EQ(ToBFloat16(Bits(mid_bits + 1)).bits, bits + 1);
  }
  EXPECT_EQ(ToBFloat16(std::numeric_limits<float>::max()).bits, 0x7F80);  // rounds past the range: ∞
  EXPECT_TRUE(std::isnan(ToFloat(ToBFloat16(std::nanf("")))));
  EXPECT_TRUE(std::isnan(ToFloat(ToBFloat16(Bits(0x7F800001u)))));  // low payload bits only: still NaN
  EXPECT_EQ(RoundedTo(DataType::kBFloat16, 1.0f + std::ldexp(1.0f, -8)), 1.0f);  // a tie, to even
  EXPECT_EQ(RoundedTo(DataType::kBFloat16, 1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));
}

TEST(TypedBlob, SixteenBitStorageTakesHalfTheMemoryAndConvertsOnReadAndWrite) {
  Blob wide({3, 5}), narrow({3, 5});
  narrow.set_types(DataType::kBFloat16, DataType::kFloat16);
  EXPECT_EQ(wide.data_floats(), 15);
  EXPECT_EQ(narrow.data_floats(), 8);  // 30 bytes, in 4-byte units
  auto arena = AllocateBlobs({&wide, &narrow}, true);
  std::vector<float> values(15);
  for (int i = 0; i < 15; ++i) values[i] = 1.0f + i / 300.0f;
  narrow.WriteData(values);
  narrow.WriteDiff(values);
  const std::vector<float> data = narrow.ReadData(), diff = narrow.ReadDiff();
  for (int i = 0; i < 15; ++i) {
    EXPECT_EQ(data[i], RoundedTo(DataType::kBFloat16, values[i]));
    EXPECT_EQ(diff[i], RoundedTo(DataType::kFloat16, values[i]));
    EXPECT_EQ(narrow.data_as<BFloat16>()[i].bits, ToBFloat16(values[i]).bits);
  }
  EXPECT_NE(data[1], values[1]);  // bf16 keeps 8 significant bits: these values do not survive whole
  // The float view of a 16-bit blob is refused (a layer reading it would misread every value).
  EXPECT_DEATH(narrow.data(), "float view of a bf16 blob");
  // A caffemodel blob stays float whatever the storage.
  BlobProto proto;
  narrow.ToProto(&proto, true);
  ASSERT_EQ(proto.data_size(), 15);
  EXPECT_EQ(proto.data(3), data[3]);
  EXPECT_EQ(proto.diff(3), diff[3]);
  wide.FromProto(proto);
  EXPECT_EQ(wide.ReadData(), data);
}

}  // namespace cortado::test
