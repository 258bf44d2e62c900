// blob_test.cpp — shapes, arena binding, and BlobProto conversion (new and legacy 4-D shapes).
#include "cortado/error.hpp"
#include "cortado/memory.hpp"
#include "test_util.hpp"

namespace cortado::test {

TEST(Blob, ShapeAndCounts) {
  Blob b({2, 3, 4, 5});
  EXPECT_EQ(b.count(), 120);
  EXPECT_EQ(b.count(1), 60);
  EXPECT_EQ(b.count(1, 3), 12);
  EXPECT_EQ(b.shape(-1), 5);
  EXPECT_EQ(b.CanonicalAxisIndex(-2), 2);
  EXPECT_EQ(b.shape_string(), "2 3 4 5 (120)");
  EXPECT_EQ(b.offset(1, 2, 3, 4), 119);
  EXPECT_THROW(b.CanonicalAxisIndex(4), Error);
}

TEST(Blob, UpToThirtyTwoAxes) {
  Blob b(std::vector<int>(32, 1));
  EXPECT_EQ(b.num_axes(), 32);
  EXPECT_THROW(b.Reshape(std::vector<int>(33, 1)), Error);
}

TEST(Arena, OneAllocationBindsAlignedRegions) {
  Blob a({3, 5}), b({7});
  auto arena = AllocateBlobs({&a, &b}, true);
  ASSERT_NE(a.data(), nullptr);
  ASSERT_NE(a.diff(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.diff()) % 64, 0u);
  EXPECT_LE(arena->used(), arena->bytes());
  // Regions do not overlap: writing one leaves the others intact.
  for (int i = 0; i < 15; ++i) a.data()[i] = 1, a.diff()[i] = 2;
  for (int i = 0; i < 7; ++i) b.data()[i] = 3, b.diff()[i] = 4;
  for (int i = 0; i < 15; ++i) EXPECT_EQ(a.data()[i] + a.diff()[i], 3);
}

TEST(Blob, ProtoRoundTripAndLegacyShape) {
  Blob a({2, 3});
  auto arena = AllocateBlobs({&a}, true);
  for (int i = 0; i < 6; ++i) a.data()[i] = i * 0.5f, a.diff()[i] = -i;
  BlobProto proto;
  a.ToProto(&proto, true);
  Blob b;
  b.Reshape(BlobProtoShape(proto));
  auto arena_b = AllocateBlobs({&b}, true);
  b.FromProto(proto);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(b.data()[i], a.data()[i]);
    EXPECT_EQ(b.diff()[i], a.diff()[i]);
  }
  // Caffe's legacy num/channels/height/width protos, with double data.
  BlobProto legacy;
  legacy.set_num(1), legacy.set_channels(2), legacy.set_height(1), legacy.set_width(3);
  for (int i = 0; i < 6; ++i) legacy.add_double_data(i + 0.25);
  EXPECT_EQ(BlobProtoShape(legacy), (std::vector<int>{1, 2, 1, 3}));
  Blob c({1, 2, 1, 3});
  auto arena_c = AllocateBlobs({&c}, false);
  c.FromProto(legacy);
  EXPECT_EQ(c.data()[5], 5.25f);
  Blob wrong({6});
  auto arena_w = AllocateBlobs({&wrong}, false);
  EXPECT_THROW(wrong.FromProto(legacy), Error);
}

}  // namespace cortado::test

