#!/usr/bin/env bash
# gpu_check.sh — the one command that proves Cortado on the GPU machine (one H100, 10 minutes a
# device call, nothing installable there), in two halves:
#   pack (the build machine, no GPU): builds the GPU binaries and packs them with the data into
#        .gpu/bundle.tar.gz (scripts/bench/gpu_bundle.sh), fails if the bundle or .gpu/ is 64 MiB or
#        more (the most a device call carries), and prints the device command to run next;
#   run  (the GPU machine, the checkout with .gpu/ carried): scripts/bench/gpu.sh's stages in under
#        9 minutes — the GPU tests, compute-sanitizer memcheck and racecheck, LeNet and cifar10_quick
#        against PyTorch, ResNet-50 training images/s against PyTorch, peak GPU memory — every log
#        under $OUT, ending with one table of the runs and the targets with PASS/FAIL.
#
# Usage: scripts/gpu_check.sh [pack | run [STAGE...] | --dry-run]
#   (nothing)   run where `nvidia-smi -L` lists a GPU, else pack
#   run STAGE   only those stages (tests sanitizer small resnet layers; see scripts/bench/gpu.sh)
#   --dry-run   lists what pack and run would do, with the commands and each one's time budget;
#               builds and runs nothing (works from a clean clone, on any machine)
# Exit status (run): 0 when every target passed, 1 when one failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly bundle=.gpu/bundle.tar.gz
readonly max_bytes=$((64 * 1024 * 1024))  # a device call carries at most 64 MiB

die() { printf 'gpu_check.sh: %s\n' "$*" >&2; exit 1; }

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

has_gpu() { nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }

device_command() {
  cat <<'EOF'
Next, on the GPU machine, in a copy of this checkout that includes .gpu/ (allow 10 minutes):
    scripts/gpu_check.sh run
Its logs and summary.txt are written under $OUT when that variable names a folder, else under
build-gpu-bench/; the output ends with the table.
EOF
}

# The bundle: present, with the programs and data gpu.sh reads, and small enough to carry.
check_bundle() {
  [[ -f $bundle ]] || die "$bundle was not made"
  local size total entries entry
  size=$(stat -c %s "$bundle")
  total=$(du -sb .gpu | cut -f1)
  ((size < max_bytes)) ||
    die "$bundle is $(mib "$size") ($size bytes): a device call carries less than 64 MiB. Leave something out of scripts/bench/gpu_bundle.sh (or strip it)."
  ((total < max_bytes)) ||
    die ".gpu/ holds $(mib "$total") in all (the bundle: $(mib "$size")); all of it is carried and must stay under 64 MiB: remove the rest"
  entries=$(tar tzf "$bundle")
  for entry in ./bin/trainer ./bin/convert_mnist_data ./bin/cortado_tests ./extra/mnist/ ./extra/cifar10/; do
    grep -qxF "$entry" <<<"$entries" || die "$bundle has no $entry"
  done
  echo "$bundle: $(mib "$size") ($size bytes; .gpu/ $(mib "$total") in all), under the 64 MiB a device call carries."
}

pack() {
  scripts/bench/gpu_bundle.sh
  check_bundle
  echo
  device_command
}

dry_run() {
  echo "scripts/gpu_check.sh --dry-run: nothing is built or run."
  echo
  echo "== pack, on the build machine (no GPU): scripts/gpu_check.sh pack"
  scripts/bench/gpu_bundle.sh --dry-run 2>&1 | sed 's/^==> /   /'
  echo "   then: $bundle must be under 64 MiB ($max_bytes bytes), and .gpu/ in all too, and hold"
  echo "   bin/trainer, bin/convert_mnist_data, bin/cortado_tests, extra/mnist/, extra/cifar10/; else it fails."
  echo
  device_command | sed 's/^/   /'
  echo
  echo "== run, on the GPU machine: scripts/gpu_check.sh run = scripts/bench/gpu.sh"
  scripts/bench/gpu.sh --dry-run
}

case ${1:-} in
  --dry-run) dry_run ;;
  pack) pack ;;
  run) shift; exec scripts/bench/gpu.sh "$@" ;;
  "") if has_gpu; then exec scripts/bench/gpu.sh; else pack; fi ;;
  -h | --help) sed -n '2,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "$0" ;;
  *) die "unknown argument '$1' (pack, run, --dry-run; see --help)" ;;
esac
