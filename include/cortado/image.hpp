// image.hpp — image files and encoded Datums, through OpenCV (src/data/opencv/). A build without
// OpenCV links src/data/no_opencv/, whose functions throw an Error that says so.
//
//   DecodeDatum       an encoded Datum (JPEG/PNG bytes in data) → a raw uint8 C×H×W Datum
//   ReadImageToDatum  an image file → a Datum, raw (optionally resized) or re-encoded
#pragma once

#include <string>

#include "cortado/cortado.pb.h"

namespace cortado {

// How to read an image's channels: as stored (kKeep), always 3-channel BGR, or always 1-channel.
enum class ColorMode { kKeep, kColor, kGray };

// True when this build decodes images (OpenCV was found).
bool BuiltWithImageSupport();

// Decodes `encoded` (encoded() true; data holds a JPEG/PNG file) into `decoded`: channels, height,
// width and uint8 pixels in C×H×W order (BGR for colour, as OpenCV and Caffe store them), label copied.
// Reuses decoded's storage. Throws Error when the bytes are not an image.
void DecodeDatum(const Datum& encoded, ColorMode mode, Datum* decoded);

// Reads the image file at `path` into `datum` with `label`. When height and width are both > 0 the
// image is resized to them (bilinear, as Caffe). `encoding` empty stores raw pixels; "jpg" or "png"
// stores the (resized) image encoded in that format, with encoded = true. Throws Error when the file
// is missing or not an image.
void ReadImageToDatum(const std::string& path, int label, int height, int width, ColorMode mode,
                      const std::string& encoding, Datum* datum);

}  // namespace cortado
