// conv_geometry.hpp — what Convolution and Deconvolution share: reading and checking their
// ConvolutionParameter against the bottom. Geometry: kernel_size (or kernel_h and kernel_w), pad (or
// pad_h/pad_w, default 0), stride (or stride_h/stride_w, default 1), dilation (default 1); each repeated
// field holds one value for both spatial axes or one per axis (h, w). Only 2-D, channel axis 1.
#pragma once

#include "cortado/blob.hpp"
#include "cortado/im2col.hpp"  // ConvGeometry
#include "cortado/layer.hpp"

namespace cortado {

struct ConvSettings {
  ConvGeometry geom;  // kernel, pad, stride and dilation; channels, height and width left as they are
  int num_output = 0;
  int group = 1;
  int channels = 0;  // the bottom's
  bool bias_term = true;
};

// layer's convolution_param for bottom x: a 4-D x with channel axis 1, positive kernel, stride and
// dilation, num_output > 0, group > 0 dividing both the bottom's channels and num_output. Errors are
// one-line cortado::Errors naming the layer.
ConvSettings ReadConvSettings(const Layer& layer, const Blob& x);

}  // namespace cortado
