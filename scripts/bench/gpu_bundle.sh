#!/usr/bin/env bash
# gpu_bundle.sh — on the build machine (through `scripts/gpu_check.sh pack`): builds the GPU binaries
# (Release, sm_90, no OpenCV) into build-gpu/ and packs them with what scripts/bench/gpu.sh reads on
# the GPU machine — trainer, convert_mnist_data, cortado_tests, the other tools its tests run
# (compute_image_mean, convert_mnist_siamese_data, extract_features), MNIST's IDX files (gzipped) and a
# CIFAR-shaped dataset (data/make_cifar10_shaped.sh) — into .gpu/bundle.tar.gz, with
# ../shared/device/bundle.sh (which adds the shared libraries the GPU machine lacks: glog, gflags,
# LMDB, protobuf...). The repository's own files (models/, scripts/) travel with the checkout and are
# not packed again.
#
# Usage: scripts/bench/gpu_bundle.sh [--dry-run]    --dry-run: prints the commands, runs none
# Environment: CMAKE_CUDA_ARCHITECTURES (default 90), CORTADO_CMAKE_ARGS.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
cd "$REPO_ROOT"

dry_run=0
case ${1:-} in
  --dry-run) dry_run=1 ;;
  "") ;;
  *) die "usage: $0 [--dry-run]" ;;
esac
if ((dry_run)); then
  cmake() { :; }  # cortado_configure and cortado_build only print their cmake lines
fi
# step CMD...: prints CMD, then runs it (unless --dry-run).
step() {
  log "$*"
  if ((!dry_run)); then "$@"; fi
}
gzip_to() { gzip -c "$1" >"$2"; }  # gzip_to FILE ARCHIVE

bundler="$REPO_ROOT/../shared/device/bundle.sh"
((dry_run)) || [[ -x $bundler ]] || die "$bundler is missing: it packs the programs with their libraries"
if ((dry_run)); then
  stage="${TMPDIR:-/tmp}/gpu_bundle.XXXXXX"
else
  stage=$(mktemp -d "${TMPDIR:-/tmp}/gpu_bundle.XXXXXX")
  trap 'rm -rf "$stage"' EXIT
fi

# The CIFAR-shaped data (2,000 training and 500 test images: the bench's epochs wrap) is made with the
# tools of the usual build, which decode PNG with OpenCV.
cortado_configure
cortado_build convert_imageset compute_image_mean
step env CORTADO_TOOLS="$BUILD_DIR/tools" CIFAR_SHAPED_DEST="$stage/cifar10" data/make_cifar10_shaped.sh 2000 500

# The GPU binaries are built without OpenCV: its chain of libraries (GDAL, Poppler, codecs...) alone
# would pass the 64 MiB a device call may carry, and nothing on the GPU machine decodes images.
# Nor Python: the GPU machine's Python is another version than the one the package would be built for.
BUILD_DIR="$REPO_ROOT/build-gpu"
export CMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-90}"
CORTADO_USE_CUDA=ON CORTADO_CMAKE_ARGS="-DCORTADO_USE_OPENCV=OFF -DCORTADO_USE_PYTHON=OFF ${CORTADO_CMAKE_ARGS:-}" \
  cortado_configure
tools=(trainer convert_mnist_data compute_image_mean convert_mnist_siamese_data extract_features)
cortado_build "${tools[@]}" cortado_tests
step data/get_mnist.sh
step mkdir -p "$stage/mnist" .gpu
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  step gzip_to "data/mnist/$f" "$stage/mnist/$f.gz"
done
step "$bundler" .gpu/bundle.tar.gz "${tools[@]/#/$BUILD_DIR/tools/}" "$BUILD_DIR/tests/cortado_tests" -- \
  "$stage/mnist" "$stage/cifar10"
