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

stage=$(mktemp -d "${TMPDIR:-/tmp}/gpu_bundle.XXXXXX")
trap 'rm -rf "$stage"' EXIT

# The CIFAR-shaped data (2,000 training and 500 test images: the bench's epochs wrap) is made with the
# tools of the usual build, which decode PNG with OpenCV.
cortado_configure
cortado_build convert_imageset compute_image_mean
CORTADO_TOOLS="$BUILD_DIR/tools" CIFAR_SHAPED_DEST="$stage/cifar10" data/make_cifar10_shaped.sh 2000 500

# The GPU binaries are built without OpenCV: its chain of libraries (GDAL, Poppler, codecs...) alone
# would pass the 64 MiB a device call may carry, and nothing on the GPU machine decodes images.
BUILD_DIR="$REPO_ROOT/build-gpu"
export CMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-90}"
CORTADO_USE_CUDA=ON CORTADO_CMAKE_ARGS="-DCORTADO_USE_OPENCV=OFF ${CORTADO_CMAKE_ARGS:-}" cortado_configure
cortado_build trainer convert_mnist_data cortado_tests
data/get_mnist.sh
mkdir -p "$stage/mnist"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  gzip -c "data/mnist/$f" >"$stage/mnist/$f.gz"
done
mkdir -p .gpu
"$REPO_ROOT/../shared/device/bundle.sh" .gpu/bundle.tar.gz "$BUILD_DIR/tools/trainer" \
  "$BUILD_DIR/tools/convert_mnist_data" "$BUILD_DIR/tests/cortado_tests" -- "$stage/mnist" "$stage/cifar10"
