// batch_norm.cpp — BatchNorm, Caffe's semantics: normalises each channel to zero mean and unit
// variance (no scale or shift of its own: Caffe nets follow it with a Scale layer), and NVIDIA Caffe's
// scale_bias, a learned scale and shift of its own.
//
// Bottom and top (N, C, ...) — (N, C) and (N, C, H, W) alike; a 1-D bottom is one channel. The
// statistics of channel c run over the m = N · spatial values of that channel.
// Parameters (batch_norm_param): use_global_stats (unset: false in TRAIN, true in TEST),
// moving_average_fraction maf (0.999), eps (1e-5); scale_bias (false; set too by giving scale_filler or
// bias_filler), scale_filler (constant 1), bias_filler (constant 0).
// Three blobs, not learned: running mean sum (C), running variance sum (C), and their weight (1).
//   batch statistics:  mean = Σx / m,  var = Σ(x − mean)² / m, and the running sums
//                      blob0 = blob0 · maf + mean,  blob1 = blob1 · maf + m/(m−1) · var (m > 1, else var),
//                      blob2 = blob2 · maf + 1;
//   global statistics: mean = blob0 / blob2,  var = blob1 / blob2 (both 0 when blob2 is 0).
//   Forward:  y = x̂ = (x − mean) / sqrt(var + eps)
//   Backward: batch:  dx = (dy − mean(dy) − mean(dy · x̂) · x̂) / sqrt(var + eps)  (means per channel)
//             global: dx = dy / sqrt(var + eps)
// The blobs' lr_mult is forced to 0, as Caffe does: LayerSetUp adds `param { lr_mult: 0 }` for each
// blob the prototxt gives no ParamSpec for (the Net reads the layer's own parameters when it
// registers blobs), and a ParamSpec with another lr_mult is an error.
// scale_bias (NVIDIA Caffe's BatchNorm): two more blobs, learned, in NVIDIA's order so its weights load:
// blob 3 γ (C), blob 4 β (C); y = γ · x̂ + β. dγ = Σ dy · x̂ and dβ = Σ dy (accumulated), and dx is the
// above with γ · dy for dy. Their ParamSpecs are the prototxt's param entries 3 and 4, else lr_mult 1,
// decay_mult 1 (NVIDIA sets 1 and 1 even over given entries). Such a layer runs as the fused chain
// BatchNorm → Scale (batch_norm_chain.cpp: one statistics pass, Σx and Σx²) with its own γ and β, x̂
// kept in a buffer of its own for Backward (not when the Net runs no backward pass), so it runs in place
// and a ReLU after it may too.
// The top is x̂ exactly, so Backward reads x̂ from the top's data (BackwardReadsTopData; global mode
// needs only std) and never the bottom's: it runs in place, and the Net must keep a later layer from
// overwriting the top in place before this Backward. The arithmetic is batch_norm_math.hpp's, on
// either device; the sums run in double, on the CPU with the channels split over the threads, on the
// GPU chunked with their partial sums in a workspace.
// Storage: without scale_bias, x, y, dy and dx are float or 16-bit (bf16 or fp16, one type for all: the
// net's plan gives this layer such blobs without Casts); the values are read as float, the statistics
// (the blobs, mean, std, and Backward's means) stay float, and each output is its float result rounded
// once. The scale_bias chain computes on the same storage types (batch_norm_chain.cpp).
#include "batch_norm.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

CORTADO_REGISTER_LAYER(BatchNorm, BatchNormLayer);

}  // namespace cortado
