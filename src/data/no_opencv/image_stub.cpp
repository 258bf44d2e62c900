// image_stub.cpp — image functions of a build without OpenCV: each says clearly that it is missing.
#include "cortado/error.hpp"
#include "cortado/image.hpp"

namespace cortado {

namespace {
[[noreturn]] void NoOpenCV(const std::string& what) {
  Fail(what, ": this build of Cortado has no image support (install libopencv-dev and rebuild)");
}
}  // namespace

bool BuiltWithImageSupport() { return false; }

void DecodeDatum(const Datum&, ColorMode, Datum*) { NoOpenCV("an encoded Datum (JPEG/PNG)"); }

void ReadImageToDatum(const std::string& path, int, int, int, ColorMode, const std::string&, Datum*) {
  NoOpenCV("image '" + path + "'");
}

void ResizePlanes(const uint8_t*, int, int, int, int, int, int, std::vector<uint8_t>*) {
  NoOpenCV("resizing an image");
}
void ResizePlanes(const float*, int, int, int, int, int, int, std::vector<float>*) { NoOpenCV("resizing an image"); }

}  // namespace cortado
