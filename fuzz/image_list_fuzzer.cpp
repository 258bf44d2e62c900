// image_list_fuzzer.cpp — an image list file ("relative/path label" lines), as the ImageData layer
// reads one (convert_imageset reads it through the same ReadImageList): a net of one ImageData layer
// over the work directory's images/ (a 5×4 grey PGM and a 3×3 colour PPM, made once) runs forward
// twice, so that every listed image is read, resized to 4×4 and transformed.
#include <filesystem>

#include "cortado/io.hpp"
#include "cortado/net.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string root = [] {
    const std::string dir = cortado::fuzz::FreshFolder("images");
    std::string grey = "P5\n5 4\n255\n", colour = "P6\n3 3\n255\n";
    for (int i = 0; i < 20; ++i) grey.push_back(static_cast<char>(12 * i));
    for (int i = 0; i < 27; ++i) colour.push_back(static_cast<char>(9 * i));
    cortado::fuzz::WriteInput("images/a.pgm", grey);
    cortado::fuzz::WriteInput("images/b.ppm", colour);
    return dir + "/";
  }();
  const std::string list = cortado::fuzz::WriteInput("list.txt", data, size);
  return cortado::fuzz::Run([&] {
    cortado::NetParameter param;
    cortado::ReadProtoFromTextString("layer { name: 'images' type: 'ImageData' top: 'data' top: 'label' "
                                     "image_data_param { source: '" + list + "' root_folder: '" + root +
                                     "' batch_size: 2 new_height: 4 new_width: 4 } "
                                     "transform_param { mirror: true crop_size: 3 } }",
                                     &param, "images.prototxt");
    cortado::Context ctx(cortado::Device::kCPU, 1);
    cortado::Net net(param, ctx, "images.prototxt");
    net.AllocateOwnArena();
    net.Forward();
    net.Forward();
  });
}
