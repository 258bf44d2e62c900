// conv_geometry.cpp — ConvolutionParameter read and checked once for Convolution and Deconvolution
// (conv_geometry.hpp).
#include "conv_geometry.hpp"

#include <cctype>
#include <string>

#include "cortado/error.hpp"

namespace cortado {

namespace {

using Repeated = google::protobuf::RepeatedField<uint32_t>;

// A repeated spatial parameter: empty → fallback; one value for both axes; or (h, w).
void ReadPair(const Layer& layer, const char* name, const Repeated& values, int fallback, int* h, int* w) {
  CORTADO_REQUIRE(values.size() <= 2, layer.Describe(), ": ", name,
                  " takes one value or one per spatial axis (2), but has ", values.size());
  *h = values.empty() ? fallback : static_cast<int>(values.Get(0));
  *w = values.empty() ? fallback : static_cast<int>(values.Get(values.size() - 1));
}

ConvGeometry ReadGeometry(const Layer& layer, const ConvolutionParameter& p) {
  const std::string who = layer.Describe();
  ConvGeometry g;
  if (p.has_kernel_h() || p.has_kernel_w()) {
    CORTADO_REQUIRE(p.has_kernel_h() && p.has_kernel_w(), who, ": give both kernel_h and kernel_w");
    CORTADO_REQUIRE(p.kernel_size_size() == 0, who, ": give kernel_size or kernel_h/kernel_w, not both");
    g.kernel_h = static_cast<int>(p.kernel_h());
    g.kernel_w = static_cast<int>(p.kernel_w());
  } else {
    CORTADO_REQUIRE(p.kernel_size_size() > 0, who, ": kernel_size (or kernel_h and kernel_w) is required");
    ReadPair(layer, "kernel_size", p.kernel_size(), 0, &g.kernel_h, &g.kernel_w);
  }
  if (p.has_pad_h() || p.has_pad_w()) {
    CORTADO_REQUIRE(p.pad_size() == 0, who, ": give pad or pad_h/pad_w, not both");
    g.pad_h = static_cast<int>(p.pad_h());
    g.pad_w = static_cast<int>(p.pad_w());
  } else {
    ReadPair(layer, "pad", p.pad(), 0, &g.pad_h, &g.pad_w);
  }
  if (p.has_stride_h() || p.has_stride_w()) {
    CORTADO_REQUIRE(p.has_stride_h() && p.has_stride_w(), who, ": give both stride_h and stride_w");
    CORTADO_REQUIRE(p.stride_size() == 0, who, ": give stride or stride_h/stride_w, not both");
    g.stride_h = static_cast<int>(p.stride_h());
    g.stride_w = static_cast<int>(p.stride_w());
  } else {
    ReadPair(layer, "stride", p.stride(), 1, &g.stride_h, &g.stride_w);
  }
  ReadPair(layer, "dilation", p.dilation(), 1, &g.dilation_h, &g.dilation_w);
  CORTADO_REQUIRE(g.kernel_h > 0 && g.kernel_w > 0, who, ": kernel size must be positive, got ", g.kernel_h, "x",
                  g.kernel_w);
  CORTADO_REQUIRE(g.stride_h > 0 && g.stride_w > 0, who, ": stride must be positive, got ", g.stride_h, "x",
                  g.stride_w);
  CORTADO_REQUIRE(g.dilation_h > 0 && g.dilation_w > 0, who, ": dilation must be positive, got ", g.dilation_h,
                  "x", g.dilation_w);
  return g;
}

}  // namespace

ConvSettings ReadConvSettings(const Layer& layer, const Blob& x) {
  const ConvolutionParameter& p = layer.layer_param().convolution_param();
  const std::string who = layer.Describe();
  std::string kind = layer.type();  // "convolution", "deconvolution"
  for (char& ch : kind) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  CORTADO_REQUIRE(x.num_axes() == 4 && x.CanonicalAxisIndex(p.axis()) == 1, who, ": only 2-D ", kind,
                  " is supported (a 4-D bottom with channel axis 1), but the bottom is ", x.shape_string(),
                  " with axis ", p.axis());
  ConvSettings s;
  s.geom = ReadGeometry(layer, p);
  s.num_output = static_cast<int>(p.num_output());
  s.group = static_cast<int>(p.group());
  s.channels = x.shape(1);
  s.bias_term = p.bias_term();
  CORTADO_REQUIRE(s.num_output > 0, who, ": num_output must be positive");
  CORTADO_REQUIRE(s.group > 0, who, ": group must be positive");
  CORTADO_REQUIRE(s.channels % s.group == 0, who, ": the input's ", s.channels, " channels are not divisible by group ",
                  s.group);
  CORTADO_REQUIRE(s.num_output % s.group == 0, who, ": num_output ", s.num_output, " is not divisible by group ",
                  s.group);
  return s;
}

}  // namespace cortado
