// image.hpp — image files and encoded Datums, through OpenCV (src/data/opencv/). A build without
// OpenCV links src/data/no_opencv/, whose functions throw an Error that says so.
//
//   DecodeDatum       an encoded Datum (JPEG, PNG, ... bytes in data) → a raw uint8 C×H×W Datum
//   ReadImageToDatum  an image file → a Datum, raw (optionally resized) or re-encoded
//   ReadEncodedImageHeader  the format and size an encoded image's header claims (no OpenCV needed)
//   ResizePlanes      a planar C×H×W image (uint8 or float) resized with cv::resize
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cortado/cortado.pb.h"

namespace cortado {

// How to read an image's channels: as stored (kKeep), always 3-channel BGR, or always 1-channel.
enum class ColorMode { kKeep, kColor, kGray };

// True when this build decodes images (OpenCV was found).
bool BuiltWithImageSupport();

// Decodes `encoded` (encoded() true; data holds a JPEG, PNG, BMP, PNM, TIFF or WebP file: what
// Cortado's and Caffe's convert_imageset keep or write) into `decoded`: channels, height, width and
// uint8 pixels in C×H×W order (BGR for colour, as OpenCV and Caffe store them), label copied. Reuses
// decoded's storage. Throws Error when the bytes are not such an image, or when its header claims more
// than MostDecodedPixels pixels (a damaged header would have the decoder allocate gigabytes); other
// formats never reach a decoder.
void DecodeDatum(const Datum& encoded, ColorMode mode, Datum* decoded);
constexpr uint64_t kMostDecodedPixels = uint64_t{1} << 26;  // 8192×8192

// The most pixels decoded from an encoded image of `bytes` bytes: kMostDecodedPixels, or for a larger
// file kMostPixelsPerEncodedByte for each of its bytes (a photograph compresses 10 to 50 times, so a
// 100-megapixel JPEG passes; a small file claiming more is a damaged header or a decompression bomb).
constexpr uint64_t kMostPixelsPerEncodedByte = 64;
constexpr uint64_t MostDecodedPixels(uint64_t bytes) {
  return bytes > kMostDecodedPixels / kMostPixelsPerEncodedByte ? bytes * kMostPixelsPerEncodedByte
                                                                 : kMostDecodedPixels;
}

// What an encoded image's header says: its format ("JPEG", "PNG", "BMP", "PNM", "TIFF", "WebP") and
// size. False when the bytes start no such header (or it lacks the size: a JPEG without a frame).
struct EncodedImageHeader {
  const char* format = "";
  uint32_t width = 0, height = 0;
};
bool ReadEncodedImageHeader(std::string_view bytes, EncodedImageHeader* header);

// Reads the image file at `path` into `datum` with `label`. When height and width are both > 0 the
// image is resized to them (bilinear, as Caffe). `encoding` empty stores raw pixels; "jpg" or "png"
// stores the (resized) image encoded in that format, with encoded = true. Throws Error when the file
// is missing or not an image, or its header claims more than MostDecodedPixels(its size) pixels (the
// file is decoded as DecodeDatum decodes a record).
void ReadImageToDatum(const std::string& path, int label, int height, int width, ColorMode mode,
                      const std::string& encoding, Datum* datum);

// Resizes a planar C×H×W image (a raw Datum's layout) to C×new_height×new_width with OpenCV's
// cv::resize, plane by plane, using `interpolation`: OpenCV's number, which TransformationParameter's
// InterpolationAlgo shares (0 nearest, 1 linear, 2 cubic, 3 area). `out` is resized to hold the result.
// Every size must be positive. Without OpenCV it throws an Error that says so.
void ResizePlanes(const uint8_t* in, int channels, int height, int width, int new_height, int new_width,
                  int interpolation, std::vector<uint8_t>* out);
void ResizePlanes(const float* in, int channels, int height, int width, int new_height, int new_width,
                  int interpolation, std::vector<float>* out);

}  // namespace cortado
