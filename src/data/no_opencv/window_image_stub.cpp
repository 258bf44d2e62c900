// window_image_stub.cpp — the WindowData layer's image functions in a build without OpenCV: each says
// clearly that it is missing (the layer refuses to set up before reaching them).
#include "cortado/window_file.hpp"
#include "cortado/error.hpp"

namespace cortado {

void ReadImage8(const std::string& path, ColorMode, Image8*) {
  Fail("image '", path, "': this build of Cortado has no image support (install libopencv-dev and rebuild)");
}

void ResizeRegion(const Image8&, int, int, int, int, int, int, Image8*) {
  Fail("this build of Cortado has no image support (install libopencv-dev and rebuild)");
}

}  // namespace cortado
