// encoded_image_test.cpp — ReadEncodedImageHeader on hand-made headers of every format it knows, and
// DecodeDatum refusing an image whose header claims more pixels than it decodes, before any decoder
// allocates them (fuzzing found a 676-byte JPEG that had OpenCV allocate gigabytes).
#include <string>

#include "cortado/image.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

std::string Bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

EncodedImageHeader HeaderOf(const std::string& bytes) {
  EncodedImageHeader header;
  EXPECT_TRUE(ReadEncodedImageHeader(bytes, &header)) << bytes.size() << " bytes";
  return header;
}

// A JPEG: SOI, an APP0 segment, then a baseline frame header of the given size.
std::string Jpeg(int height, int width) {
  return Bytes({0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 'J', 'F', 0xFF, 0xC0, 0x00, 0x0B, 0x08, height >> 8, height & 0xFF,
                width >> 8, width & 0xFF, 0x01, 0x01, 0x11, 0x00});
}

}  // namespace

TEST(EncodedImage, HeadersGiveFormatAndSize) {
  EncodedImageHeader h = HeaderOf(Jpeg(480, 640));
  EXPECT_STREQ(h.format, "JPEG");
  EXPECT_EQ(h.width, 640u);
  EXPECT_EQ(h.height, 480u);
  h = HeaderOf(std::string("\x89PNG\r\n\x1a\n", 8) + Bytes({0, 0, 0, 13}) + "IHDR" +
               Bytes({0, 0, 1, 0, 0, 0, 0, 200, 8, 2, 0, 0, 0}));
  EXPECT_STREQ(h.format, "PNG");
  EXPECT_EQ(h.width, 256u);
  EXPECT_EQ(h.height, 200u);
  std::string bmp = "BM" + std::string(12, '\0') + Bytes({40, 0, 0, 0, 0x20, 0, 0, 0, 0xF0, 0xFF, 0xFF, 0xFF});
  h = HeaderOf(bmp);  // height -16: rows stored top-down
  EXPECT_STREQ(h.format, "BMP");
  EXPECT_EQ(h.width, 32u);
  EXPECT_EQ(h.height, 16u);
  h = HeaderOf("P6\n# made by hand\n 12  7\n255\n");
  EXPECT_STREQ(h.format, "PNM");
  EXPECT_EQ(h.width, 12u);
  EXPECT_EQ(h.height, 7u);
  // TIFF, both byte orders: one directory with ImageWidth (LONG) and ImageLength (SHORT).
  h = HeaderOf(Bytes({'I', 'I', 42, 0, 8, 0, 0, 0, 2, 0, 0, 1, 4, 0, 1, 0, 0, 0, 0x2C, 1, 0, 0,  //
                      1, 1, 3, 0, 1, 0, 0, 0, 0x90, 1, 0, 0}));
  EXPECT_STREQ(h.format, "TIFF");
  EXPECT_EQ(h.width, 300u);
  EXPECT_EQ(h.height, 400u);
  h = HeaderOf(Bytes({'M', 'M', 0, 42, 0, 0, 0, 8, 0, 2, 1, 0, 0, 4, 0, 0, 0, 1, 0, 0, 1, 0x2C,  //
                      1, 1, 0, 3, 0, 0, 0, 1, 1, 0x90, 0, 0}));
  EXPECT_EQ(h.width, 300u);
  EXPECT_EQ(h.height, 400u);
  h = HeaderOf("RIFF" + std::string(4, '\0') + "WEBPVP8X" + std::string(8, '\0') + Bytes({99, 0, 0, 49, 0, 0}));
  EXPECT_STREQ(h.format, "WebP");
  EXPECT_EQ(h.width, 100u);
  EXPECT_EQ(h.height, 50u);
}

TEST(EncodedImage, OtherBytesAndHeadersWithoutASizeAreNotImages) {
  EncodedImageHeader header;
  for (const std::string& bytes : {std::string("not an image"), std::string("GIF89a......"),
                                   Jpeg(1, 1).substr(0, 8), std::string("P5\n12"), std::string()})
    EXPECT_FALSE(ReadEncodedImageHeader(bytes, &header)) << bytes;
}

TEST(EncodedImage, AHeaderClaimingTooManyPixelsIsRefusedBeforeDecoding) {
  if (!BuiltWithImageSupport()) GTEST_SKIP() << "this build has no OpenCV";
  Datum encoded;
  encoded.set_encoded(true);
  encoded.set_data(Jpeg(60000, 60000));
  Datum decoded;
  EXPECT_EQ(ErrorOf([&] { DecodeDatum(encoded, ColorMode::kKeep, &decoded); }),
            "the encoded JPEG image claims 60000×60000 pixels, more than the 67108864 Cortado decodes (a damaged "
            "header?)");
}

}  // namespace cortado::test
