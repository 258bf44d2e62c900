// onednn_layers_stub.cpp — a build without oneDNN: no Convolution, Pooling or LRN primitive is ever
// made with it, so the calls below are never reached.
#include <glog/logging.h>

#include "../onednn_engine.hpp"

namespace cortado {

namespace {
const char kNoOneDnn[] = "this build has no oneDNN (install libdnnl-dev and rebuild)";
}  // namespace

OneDnnConvolutionPtr CreateOneDnnConvolution(int, int, int, const ConvGeometry&, bool, OneDnnLayout, std::string* why,
                                             OneDnnDataType, bool) {
  *why = kNoOneDnn;
  return {nullptr, nullptr};
}
size_t OneDnnConvolutionScratchBytes(const OneDnnConvolution&) { LOG(FATAL) << kNoOneDnn; }
std::string OneDnnConvolutionImplementation(const OneDnnConvolution&) { LOG(FATAL) << kNoOneDnn; }
void OneDnnConvolutionForward(const OneDnnConvolution&, const void*, const void*, const void*, void*, void*) {
  LOG(FATAL) << kNoOneDnn;
}
void OneDnnConvolutionBackward(const OneDnnConvolution&, const void*, const void*, const void*, void*, void*, void*,
                               void*) {
  LOG(FATAL) << kNoOneDnn;
}

OneDnnPoolingPtr CreateOneDnnPooling(const PoolShape&, bool, std::string* why, OneDnnDataType) {
  *why = kNoOneDnn;
  return {nullptr, nullptr};
}
size_t OneDnnPoolingScratchBytes(const OneDnnPooling&) { LOG(FATAL) << kNoOneDnn; }
size_t OneDnnPoolingWorkspaceBytes(const OneDnnPooling&) { LOG(FATAL) << kNoOneDnn; }
std::string OneDnnPoolingImplementation(const OneDnnPooling&) { LOG(FATAL) << kNoOneDnn; }
void OneDnnPoolingForward(const OneDnnPooling&, const void*, void*, void*, void*) { LOG(FATAL) << kNoOneDnn; }
void OneDnnPoolingBackward(const OneDnnPooling&, const void*, void*, const void*, void*) { LOG(FATAL) << kNoOneDnn; }

OneDnnLrnPtr CreateOneDnnLrn(const LrnShape&, OneDnnLayout, std::string* why, OneDnnDataType) {
  *why = kNoOneDnn;
  return {nullptr, nullptr};
}
size_t OneDnnLrnScratchBytes(const OneDnnLrn&) { LOG(FATAL) << kNoOneDnn; }
size_t OneDnnLrnWorkspaceBytes(const OneDnnLrn&) { LOG(FATAL) << kNoOneDnn; }
std::string OneDnnLrnImplementation(const OneDnnLrn&) { LOG(FATAL) << kNoOneDnn; }
void OneDnnLrnForward(const OneDnnLrn&, const void*, void*, void*, void*) { LOG(FATAL) << kNoOneDnn; }
void OneDnnLrnBackward(const OneDnnLrn&, const void*, const void*, void*, const void*, void*) { LOG(FATAL) << kNoOneDnn; }

}  // namespace cortado
