// window_file.hpp — the WindowData layer's helpers (src/layers/window_data.cpp).
//
//   ReadWindowFile  an R-CNN window file → its images and its foreground and background windows
//                   (window_file.cpp)
//   Image8          a decoded 8-bit image, interleaved H×W×C (OpenCV's layout, BGR for colour)
//   ReadImage8      an image file → Image8            } through OpenCV: opencv/window_image.cpp; a build
//   ResizeRegion    a region of an Image8, warped     } without OpenCV links no_opencv/, which throws
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cortado/image.hpp"  // ColorMode

namespace cortado {

// ---- the window file -----------------------------------------------------------------------------

// One image block of a window file.
struct WindowImage {
  std::string path;  // root_folder prepended
  int channels, height, width;  // as the file declares them
  int line;  // of the path, from 1
};

// A window kept for sampling: inclusive pixel corners inside its image; label is the class index for
// a foreground window, 0 for a background one.
struct Window {
  int32_t image;  // index into WindowFile::images
  int32_t label;
  int32_t x1, y1, x2, y2;
  int32_t line;  // of the window in the file, from 1
};

struct WindowFile {
  std::vector<WindowImage> images;
  std::vector<Window> foreground, background;
  size_t dropped = 0;  // windows with bg_threshold <= overlap < fg_threshold: neither
};

// Reads a window file: blocks of
//     # <image index>          0, 1, 2, ... in order
//     <image path>             relative to root_folder, one token
//     <channels> <height> <width>
//     <number of windows>
//     <class index> <overlap> <x1> <y1> <x2> <y2>      that many times
// separated by any white space (Caffe reads it token by token). A window whose overlap is at least
// fg_threshold is foreground (its class index must be > 0); one below bg_threshold is background.
// Every mistake is an Error "<path>:<line>: ..." naming what was expected: a missing or unreadable
// file, an image that does not exist, channels other than 1 or 3 or differing between images, counts
// or numbers that do not parse, a block holding another number of windows than it declares, a window
// that is empty or outside its image's declared size. An empty file is an Error too.
WindowFile ReadWindowFile(const std::string& path, const std::string& root_folder, float fg_threshold,
                          float bg_threshold);

// ---- images ---------------------------------------------------------------------------------------

struct Image8 {
  int channels = 0, height = 0, width = 0;
  std::vector<uint8_t> pixels;  // H×W×C
};

// Reads the image file at `path` as colour (kColor, 3 channels) or grey (kGray, 1 channel). Throws
// Error "cannot read image '<path>' ..." when it is missing or not an image.
void ReadImage8(const std::string& path, ColorMode mode, Image8* image);

// Warps the region of `image` with top-left corner (x, y) and size width×height (inside the image) to
// out_width×out_height with OpenCV's bilinear resize (cv::resize, INTER_LINEAR, as Caffe warps its
// windows) into `out`, reusing its storage.
void ResizeRegion(const Image8& image, int x, int y, int width, int height, int out_width, int out_height,
                  Image8* out);

}  // namespace cortado
