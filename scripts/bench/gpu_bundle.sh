#!/usr/bin/env bash
# gpu_bundle.sh — `scripts/gpu_check.sh pack`: builds the GPU binaries (Release, no OpenCV, for
# CMAKE_CUDA_ARCHITECTURES, default 90: H100 and H200) into build-gpu/ and packs them, with the data
# scripts/bench/gpu.sh reads, into one archive, .gpu/bundle.tar.gz, that runs on a GPU machine
# without build tools or libraries of its own:
#   bin/    trainer, convert_mnist_data, cortado_tests and the other tools its tests run
#           (compute_image_mean, convert_mnist_siamese_data, extract_features);
#   lib/    every shared library they load (ldd) except the C and C++ runtimes and the CUDA libraries
#           (driver, runtime, cuBLAS, cuDNN, NCCL, ...): the GPU machine's own are the ones that must
#           run, and gpu.sh can put another cuDNN first (--cudnn);
#   extra/  MNIST's IDX files, gzipped, and a CIFAR-shaped dataset (data/make_cifar10_shaped.sh, 2,000
#           training and 500 test images: the bench's epochs wrap).
# The repository's own files (models/, scripts/) travel with the checkout and are not packed again.
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

# The libraries a GPU machine brings itself: the C library and the dynamic loader, the C++ runtime,
# and every CUDA library.
readonly system_libs='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libstdc\+\+|libgcc_s|libcuda\.|libcudart|libcublas|libcudnn|libnccl|libcurand|libcufft|libcusparse|libcusolver|libnvrtc|libnvJitLink|libnvToolsExt|libnvtx)'

# pack ARCHIVE STAGE PROGRAM...: copies the programs into STAGE/bin and the libraries they load
# (except system_libs) into STAGE/lib, strips the libraries, and archives STAGE.
pack() {
  local archive=$1 stage=$2 program name path
  shift 2
  mkdir -p "$stage/bin" "$stage/lib"
  for program in "$@"; do
    cp -L "$program" "$stage/bin/"
    while read -r name path; do
      [[ $name =~ $system_libs || -e $stage/lib/$name ]] || cp -L "$path" "$stage/lib/$name"
    done < <(ldd "$program" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }')
  done
  strip --strip-unneeded "$stage"/lib/*.so* 2>/dev/null || true
  tar czf "$archive" -C "$stage" .
  echo "$archive: $(du -h "$archive" | cut -f1) ($(find "$stage/bin" -type f | wc -l) programs," \
       "$(find "$stage/lib" -type f | wc -l) libraries)"
}

if ((dry_run)); then
  stage="${TMPDIR:-/tmp}/gpu_bundle.XXXXXX"
else
  stage=$(mktemp -d "${TMPDIR:-/tmp}/gpu_bundle.XXXXXX")
  trap 'rm -rf "$stage"' EXIT
fi

# The CIFAR-shaped data is made with the tools of the usual build, which decode PNG with OpenCV.
cortado_configure
cortado_build convert_imageset compute_image_mean
step mkdir -p "$stage/extra/mnist" .gpu
step env CORTADO_TOOLS="$BUILD_DIR/tools" CIFAR_SHAPED_DEST="$stage/extra/cifar10" data/make_cifar10_shaped.sh 2000 500

# The GPU binaries are built without OpenCV: its chain of libraries (GDAL, Poppler, codecs...) alone
# would make the bundle several times larger, and nothing on the GPU machine decodes images. Nor
# Python: the GPU machine's Python may be another version than the one the package would be built for.
BUILD_DIR="$REPO_ROOT/build-gpu"
export CMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-90}"
CORTADO_USE_CUDA=ON CORTADO_CMAKE_ARGS="-DCORTADO_USE_OPENCV=OFF -DCORTADO_USE_PYTHON=OFF ${CORTADO_CMAKE_ARGS:-}" \
  cortado_configure
tools=(trainer convert_mnist_data compute_image_mean convert_mnist_siamese_data extract_features)
cortado_build "${tools[@]}" cortado_tests
step data/get_mnist.sh
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  step gzip_to "data/mnist/$f" "$stage/extra/mnist/$f.gz"
done
step pack .gpu/bundle.tar.gz "$stage" "${tools[@]/#/$BUILD_DIR/tools/}" "$BUILD_DIR/tests/cortado_tests"
