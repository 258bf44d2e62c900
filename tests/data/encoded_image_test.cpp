// encoded_image_test.cpp — ReadEncodedImageHeader on hand-made headers of every format it knows, and
// DecodeDatum and ReadImageToDatum (the image files of ImageData, convert_imageset and classify)
// refusing an image whose header claims more pixels than they decode, before any decoder allocates
// them (fuzzing found a 676-byte JPEG that had OpenCV allocate gigabytes), a TIFF listing its size twice
// included.
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

// A PNG's signature and IHDR chunk (8-bit RGB) claiming width×height, and no image data: a damaged file.
std::string Png(uint32_t width, uint32_t height) {
  auto big32 = [](uint32_t v) { return Bytes({int(v >> 24), int(v >> 16 & 0xFF), int(v >> 8 & 0xFF), int(v & 0xFF)}); };
  return std::string("\x89PNG\r\n\x1a\n", 8) + big32(13) + "IHDR" + big32(width) + big32(height) +
         Bytes({8, 2, 0, 0, 0}) + big32(0);
}

// A little-endian TIFF whose one directory lists ImageWidth and ImageLength twice: 32768×32768 (LONG)
// first, then 1×1 (SHORT). libtiff, hence OpenCV, keeps the first entry of a tag and ignores the others.
std::string TiffListingItsSizeTwice() {
  return Bytes({'I', 'I', 42, 0, 8, 0, 0, 0, 4, 0,   //
                0, 1, 4, 0, 1, 0, 0, 0, 0, 0x80, 0, 0,  // ImageWidth 32768
                1, 1, 4, 0, 1, 0, 0, 0, 0, 0x80, 0, 0,  // ImageLength 32768
                0, 1, 3, 0, 1, 0, 0, 0, 1, 0, 0, 0,     // ImageWidth 1
                1, 1, 3, 0, 1, 0, 0, 0, 1, 0, 0, 0,     // ImageLength 1
                0, 0, 0, 0});
}

// The message of ReadImageToDatum's Error on `path`, which must be one line.
std::string FileError(const std::string& path, ColorMode mode, int height = 0, int width = 0,
                      const std::string& encoding = "") {
  Datum datum;
  const std::string error = ErrorOf([&] { ReadImageToDatum(path, 0, height, width, mode, encoding, &datum); });
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  return error;
}

std::string TooManyPixels(const std::string& path, const std::string& format, int width, int height) {
  return "cannot read image '" + path + "': the " + format + " image claims " + std::to_string(width) + "×" +
         std::to_string(height) + " pixels, more than the 67108864 Cortado decodes (a damaged header?)";
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

// libtiff measures a directory by its first ImageWidth and ImageLength entries, so the header must too:
// taking the last passed a 32768×32768 TIFF as 1×1, and OpenCV then allocated 3 GiB for it.
TEST(EncodedImage, ATiffListingItsSizeTwiceIsMeasuredByTheFirstEntries) {
  const EncodedImageHeader h = HeaderOf(TiffListingItsSizeTwice());
  EXPECT_STREQ(h.format, "TIFF");
  EXPECT_EQ(h.width, 32768u);
  EXPECT_EQ(h.height, 32768u);
  if (!BuiltWithImageSupport()) return;
  Datum encoded, decoded;
  encoded.set_encoded(true);
  encoded.set_data(TiffListingItsSizeTwice());
  EXPECT_EQ(ErrorOf([&] { DecodeDatum(encoded, ColorMode::kKeep, &decoded); }),
            "the encoded TIFF image claims 32768×32768 pixels, more than the 67108864 Cortado decodes (a damaged "
            "header?)");
  const std::string path = TempDir() + "/twice.tif";
  WriteFile(path, TiffListingItsSizeTwice());
  EXPECT_EQ(FileError(path, ColorMode::kColor), TooManyPixels(path, "TIFF", 32768, 32768));
}

// ImageData, convert_imageset and classify read image files through ReadImageToDatum: a small file whose
// header claims 20000×20000 pixels (which OpenCV itself would allocate, 1.2 GB) is refused by one line
// naming it, in every colour mode, resized or re-encoded, before any decoder sees it.
TEST(EncodedImage, AnImageFileClaimingTooManyPixelsIsRefusedNamingIt) {
  if (!BuiltWithImageSupport()) GTEST_SKIP() << "this build has no OpenCV";
  const std::string dir = TempDir();
  WriteFile(dir + "/big.png", Png(20000, 20000));
  WriteFile(dir + "/big.jpg", Jpeg(20000, 30000));
  for (ColorMode mode : {ColorMode::kKeep, ColorMode::kColor, ColorMode::kGray}) {
    EXPECT_EQ(FileError(dir + "/big.png", mode), TooManyPixels(dir + "/big.png", "PNG", 20000, 20000));
    EXPECT_EQ(FileError(dir + "/big.jpg", mode), TooManyPixels(dir + "/big.jpg", "JPEG", 30000, 20000));
  }
  EXPECT_EQ(FileError(dir + "/big.png", ColorMode::kColor, 32, 32, "png"),
            TooManyPixels(dir + "/big.png", "PNG", 20000, 20000));
}

// Files that are missing, not images or damaged keep their "cannot read image '<path>'" line; real images
// decode as cv::imread decoded them: kKeep as stored, kColor 3 channels, kGray 1, any format written.
TEST(EncodedImage, ImageFilesDecodeAsBeforeAndOthersAreNamed) {
  if (!BuiltWithImageSupport()) GTEST_SKIP() << "this build has no OpenCV";
  const std::string dir = TempDir();
  EXPECT_EQ(FileError(dir + "/missing.png", ColorMode::kColor),
            "cannot read image '" + dir + "/missing.png' (missing, unreadable or not an image)");
  EXPECT_EQ(FileError(dir, ColorMode::kColor), "cannot read image '" + dir + "' (missing, unreadable or not an image)");
  WriteFile(dir + "/text.png", "not an image");
  EXPECT_EQ(FileError(dir + "/text.png", ColorMode::kColor),
            "cannot read image '" + dir + "/text.png': the image (12 bytes) is not a JPEG, PNG, BMP, PNM, TIFF or "
            "WebP image OpenCV can decode (damaged or of another format)");
  WriteFile(dir + "/empty.png", "");
  EXPECT_NE(FileError(dir + "/empty.png", ColorMode::kGray).find("cannot read image '" + dir + "/empty.png': "),
            std::string::npos);
  WriteFile(dir + "/small.png", Png(2, 2));  // a header within bounds but no pixels: OpenCV's decoder fails
  EXPECT_NE(FileError(dir + "/small.png", ColorMode::kKeep).find("cannot read image '" + dir + "/small.png': the "
                                                                  "image (33 bytes) is not a JPEG"),
            std::string::npos);

  WriteFile(dir + "/g.pgm", "P5\n3 2\n255\n" + Bytes({1, 2, 3, 4, 5, 6}));
  Datum datum;
  ReadImageToDatum(dir + "/g.pgm", 7, 0, 0, ColorMode::kKeep, "", &datum);
  EXPECT_EQ(datum.channels(), 1);
  EXPECT_EQ(datum.height(), 2);
  EXPECT_EQ(datum.width(), 3);
  EXPECT_EQ(datum.label(), 7);
  EXPECT_EQ(datum.data(), Bytes({1, 2, 3, 4, 5, 6}));
  ReadImageToDatum(dir + "/g.pgm", 7, 0, 0, ColorMode::kColor, "", &datum);
  EXPECT_EQ(datum.channels(), 3);
  EXPECT_EQ(datum.data(), Bytes({1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}));  // B, G, R planes
  // Re-encoded as PNG, written and read back: the same pixels, through the PNG decoder.
  ReadImageToDatum(dir + "/g.pgm", 7, 0, 0, ColorMode::kGray, "png", &datum);
  ASSERT_TRUE(datum.encoded());
  WriteFile(dir + "/g.png", datum.data());
  ReadImageToDatum(dir + "/g.png", 3, 0, 0, ColorMode::kGray, "", &datum);
  EXPECT_EQ(datum.channels(), 1);
  EXPECT_EQ(datum.data(), Bytes({1, 2, 3, 4, 5, 6}));
  ReadImageToDatum(dir + "/g.png", 3, 4, 6, ColorMode::kGray, "", &datum);  // resized
  EXPECT_EQ(datum.height(), 4);
  EXPECT_EQ(datum.width(), 6);
}

}  // namespace cortado::test
