// convolution_onednn_stub.cpp — a build without oneDNN: no convolution is ever made with it.
#include <glog/logging.h>

#include "cortado/kernels/onednn.hpp"

namespace cortado {

OneDnnConvolutionPtr CreateOneDnnConvolution(int, int, int, const ConvGeometry&, bool, OneDnnLayout, std::string* why) {
  *why = "this build has no oneDNN (install libdnnl-dev and rebuild)";
  return {nullptr, nullptr};
}
size_t OneDnnConvolutionScratchBytes(const OneDnnConvolution&) { LOG(FATAL) << "no oneDNN in this build"; }
std::string OneDnnConvolutionImplementation(const OneDnnConvolution&) { LOG(FATAL) << "no oneDNN in this build"; }
void OneDnnConvolutionForward(const OneDnnConvolution&, const float*, const float*, const float*, float*, void*) {
  LOG(FATAL) << "no oneDNN in this build";
}
void OneDnnConvolutionBackward(const OneDnnConvolution&, const float*, const float*, const float*, float*, float*,
                               float*, void*) {
  LOG(FATAL) << "no oneDNN in this build";
}

}  // namespace cortado
