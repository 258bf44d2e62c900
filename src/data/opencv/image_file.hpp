// image_file.hpp — what the OpenCV backend's image.cpp shares with window_image.cpp: reading an image
// file the one way Cortado decodes images (its header checked before a decoder is handed the bytes).
#pragma once

#include <opencv2/core.hpp>

#include <string>

#include "cortado/image.hpp"  // ColorMode

namespace cortado {

// The image file at `path`, decoded 8-bit as cv::imread(path, flag) would (interleaved, BGR for colour;
// kKeep: 1 or 3 channels as stored), through the same checks and decoder as DecodeDatum: a JPEG, PNG,
// BMP, PNM, TIFF or WebP file whose header claims at most MostDecodedPixels(its size) pixels. Throws Error
// "cannot read image '<path>' ..." when the file is missing or unreadable, is not such an image, or
// claims more pixels.
cv::Mat ReadImageFile(const std::string& path, ColorMode mode);

}  // namespace cortado
