#!/usr/bin/env bash
# gpu_check.sh — the one command that checks Cortado on a GPU: the GPU tests, compute-sanitizer,
# LeNet, cifar10_quick and ResNet-50 training against PyTorch in the same run, and ResNet-50's time
# per layer (scripts/bench/gpu.sh holds the stages). Made to fit a short turn on a shared GPU
# machine: `run` takes at most 7 minutes with its own set-up, `run quick` 3, and what they leave is
# two files, a summary and one archive of every log.
#
#   On a machine with a GPU and the build tools: `scripts/gpu_check.sh` builds and runs.
#   For a GPU machine without build tools (or libraries such as glog and LMDB), in two halves:
#     pack  here: builds build-gpu/ and packs it with its libraries and data into
#           .gpu/bundle.tar.gz (scripts/bench/gpu_bundle.sh), kept under 64 MiB so it travels easily;
#     run   there, in a copy of this checkout that includes .gpu/.
#
# Usage: scripts/gpu_check.sh [pack | run [quick] [--cudnn DIR] [STAGE...] | --dry-run]
#   (nothing)     a GPU and the build tools here: pack for this GPU's architecture, then run;
#                 a GPU only: run; no GPU: pack
#   run           every stage, in at most 7 minutes (gpu.sh's deadline)
#   run quick     only the headline rows, in at most 3 minutes: LeNet and cifar10_quick with CUDA
#                 graphs, ResNet-50 at batch 128 in TF32 and FP32, Cortado and PyTorch each
#   --cudnn DIR   Cortado loads the cuDNN in DIR (first on its LD_LIBRARY_PATH), e.g. the one beside
#                 PyTorch: `--cudnn pytorch` finds that one
#   run STAGE...  only those stages (small resnet layers tests bandwidth sanitizer)
#   --dry-run     lists what pack and run would do, with the commands and each one's time budget;
#                 builds and runs nothing (works from a clean clone, on any machine)
# Output of run: summary.txt and logs.tar.gz in $OUT when that variable names a folder, else in
# build-gpu-bench/. Exit status (run): 0 when every target passed, 1 when one failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly bundle=.gpu/bundle.tar.gz
readonly max_bytes=$((64 * 1024 * 1024))

die() { printf 'gpu_check.sh: %s\n' "$*" >&2; exit 1; }

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

has_gpu() { nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }

# The build tools pack needs (scripts/common.sh adds /usr/local/cuda/bin to PATH for nvcc).
has_build_tools() { command -v cmake >/dev/null && { command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; }; }

next_steps() {
  cat <<'EOF'
Next, on the GPU machine, in a copy of this checkout that includes .gpu/:
    scripts/gpu_check.sh run          # everything, at most 7 minutes
    scripts/gpu_check.sh run quick    # the headline rows only, at most 3 minutes
It leaves summary.txt and logs.tar.gz in $OUT when that variable names a folder, else in
build-gpu-bench/; the output ends with the table.
EOF
}

# The bundle: present, with the programs and data gpu.sh reads, and under 64 MiB.
check_bundle() {
  [[ -f $bundle ]] || die "$bundle was not made"
  local size total entries entry
  size=$(stat -c %s "$bundle")
  total=$(du -sb .gpu | cut -f1)
  ((size < max_bytes)) ||
    die "$bundle is $(mib "$size") ($size bytes); it is kept under 64 MiB so it travels easily. Leave something out of scripts/bench/gpu_bundle.sh (or strip it)."
  ((total < max_bytes)) ||
    die ".gpu/ holds $(mib "$total") in all (the bundle: $(mib "$size")); keep the folder under 64 MiB too: remove the rest"
  entries=$(tar tzf "$bundle")
  for entry in ./bin/trainer ./bin/convert_mnist_data ./bin/cortado_tests ./extra/mnist/ ./extra/cifar10/; do
    grep -qxF "$entry" <<<"$entries" || die "$bundle has no $entry"
  done
  echo "$bundle: $(mib "$size") ($size bytes; .gpu/ $(mib "$total") in all), under 64 MiB."
}

pack() {
  scripts/bench/gpu_bundle.sh
  check_bundle
}

# This GPU's architecture for CMake (compute capability 9.0 -> 90), or nothing when unknown.
local_architecture() {
  nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .'
}

dry_run() {
  echo "scripts/gpu_check.sh --dry-run: nothing is built or run."
  echo
  echo "== pack, where the build tools are: scripts/gpu_check.sh pack"
  scripts/bench/gpu_bundle.sh --dry-run 2>&1 | sed 's/^==> /   /'
  echo "   then: $bundle must be under 64 MiB ($max_bytes bytes), and .gpu/ in all too, and hold"
  echo "   bin/trainer, bin/convert_mnist_data, bin/cortado_tests, extra/mnist/, extra/cifar10/; else it fails."
  echo "   (scripts/gpu_check.sh alone on a machine with a GPU and the build tools: pack for that GPU's"
  echo "   architecture, then run.)"
  echo
  next_steps | sed 's/^/   /'
  echo
  echo "== run, on the GPU machine: scripts/gpu_check.sh run = scripts/bench/gpu.sh"
  scripts/bench/gpu.sh --dry-run
  echo
  echo "== run quick: scripts/gpu_check.sh run quick = scripts/bench/gpu.sh quick"
  scripts/bench/gpu.sh --dry-run quick
}

[[ ${1:-} != --dry-run && ${1:-} != pack ]] || (($# <= 1)) || die "$1 takes nothing after it, not '$2'"
case ${1:-} in
  --dry-run) dry_run ;;
  pack) pack; echo; next_steps ;;
  run) shift; exec scripts/bench/gpu.sh "$@" ;;
  "")
    if has_gpu && has_build_tools; then
      arch=$(local_architecture)
      [[ -z $arch ]] || export CMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-$arch}"
      pack
      exec scripts/bench/gpu.sh
    elif has_gpu; then
      exec scripts/bench/gpu.sh
    else
      pack
      echo
      next_steps
    fi
    ;;
  -h | --help) sed -n '2,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "$0" ;;
  *) die "unknown argument '$1' (pack, run, --dry-run; see --help)" ;;
esac
