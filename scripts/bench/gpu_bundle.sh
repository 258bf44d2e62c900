#!/usr/bin/env bash
# gpu_bundle.sh — on the build machine: builds the GPU binaries (Release, sm_90) into build-gpu/ and
# packs them with what scripts/bench/gpu.sh reads on the GPU machine — MNIST's IDX files (gzipped)
# and a CIFAR-shaped dataset (data/make_cifar10_shaped.sh) — into .gpu/bundle.tar.gz, with
# ../shared/device/bundle.sh. Carry .gpu to the GPU machine and run scripts/bench/gpu.sh there.
#
# Usage: scripts/bench/gpu_bundle.sh     Environment: CMAKE_CUDA_ARCHITECTURES (default 90).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
cd "$REPO_ROOT"

BUILD_DIR="$REPO_ROOT/build-gpu"
export CMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-90}"
CORTADO_USE_CUDA=ON cortado_configure
cortado_build trainer convert_mnist_data convert_imageset compute_image_mean cortado_tests
data/get_mnist.sh
CORTADO_TOOLS="$BUILD_DIR/tools" data/make_cifar10_shaped.sh

stage=$(mktemp -d "${TMPDIR:-/tmp}/gpu_bundle.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/mnist"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  gzip -c "data/mnist/$f" >"$stage/mnist/$f.gz"
done
mkdir -p .gpu
"$REPO_ROOT/../shared/device/bundle.sh" .gpu/bundle.tar.gz "$BUILD_DIR/tools/trainer" \
  "$BUILD_DIR/tools/convert_mnist_data" "$BUILD_DIR/tests/cortado_tests" -- "$stage/mnist" data/cifar10
