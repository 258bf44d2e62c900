#!/usr/bin/env bash
# check_kernels.sh — the rule that a formula is written once (kernels/for_each.hpp): every CUDA kernel
# (`__global__`) lives either in the shared kernels that run a layer's functors (cuda/for_each.cuh:
# Map, MapChannels, ForEach and Total; cuda/channel_sums.cuh: the per-channel sums), or in a file named
# below with the reason its kernels are its own; and every kernel launch goes through CORTADO_LAUNCH
# (cuda/check.hpp).
# Prints the kernel count per file and the total; exits 1 naming each file that breaks the rule (a
# kernel in an unnamed file, a named file without kernels, a hand-written <<<>>> launch).
# Usage: scripts/check_kernels.sh [--list]   (--list: the counts only, never fails)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

shared=(include/cortado/cuda/for_each.cuh include/cortado/cuda/channel_sums.cuh)

# Kernels that are not a layer's element-wise or per-channel arithmetic: a reduction or a walk in the
# GPU's own order, a gather or scatter, another algorithm than the CPU's.
declare -A device_specific=(
  [src/core/cuda/math_gpu.cu]="counting non-finite values with an atomic; a one-block dot product in double"
  [src/solvers/cuda/update_rules_gpu.cu]="the walk over a segment table, the gradient's processing folded in (the arithmetic is update_math.hpp's)"
  [src/solvers/cuda/step_stats.cu]="the step's sum of squares, its clipping scale and its dynamic loss scale, summed and kept in the GPU's order on the device"
  [src/layers/cuda/lrn.cu]="one thread per element sums its window, where the CPU slides a running sum"
  [src/layers/cuda/embed.cu]="a gather forward and a scatter, in a fixed order, backward"
  [src/layers/cuda/batch_reindex.cu]="a gather forward and a scatter backward"
  [src/layers/cuda/filter.cu]="row selection: a gather and a scatter"
  [src/layers/cuda/concat.cu]="strided row copies"
  [src/layers/cuda/pooling.cu]="a thread per output runs pooling_math.hpp's windows; backward gathers into each input where the CPU scatters"
  [src/layers/cuda/convolution.cu]="im2col: a thread per output position where the CPU copies each tap's rectangle; col2im gathers per pixel where the CPU scatter-adds"
)

status=0
total=0 shared_total=0 specific_total=0
declare -A seen=()
while IFS= read -r line; do
  file=${line%%:*}
  count=${line##*:}
  ((count > 0)) || continue
  total=$((total + count))
  printf '%4d  %s\n' "$count" "$file"
  seen[$file]=1
  if [[ " ${shared[*]} " == *" $file "* ]]; then
    shared_total=$((shared_total + count))
    continue
  elif [[ -n "${device_specific[$file]:-}" ]]; then
    specific_total=$((specific_total + count))
    continue
  fi
  echo "check_kernels.sh: $file holds $count __global__ kernel(s) but is not a shared kernel file nor named" \
    "with its reason in scripts/check_kernels.sh: write the arithmetic as functors run by Map/MapChannels" >&2
  status=1
done < <(grep -rc --include='*.cu' --include='*.cuh' '__global__' src include | sort)
printf '%4d  in all: %d shared (Map, MapChannels, ForEach, Total, ChannelSums), %d device-specific\n' \
  "$total" "$shared_total" "$specific_total"

for file in "${!device_specific[@]}"; do
  if [[ -z "${seen[$file]:-}" ]]; then
    echo "check_kernels.sh: $file is named in scripts/check_kernels.sh but holds no kernel: drop its entry" >&2
    status=1
  fi
done

# Hand-written launches: only CORTADO_LAUNCH's own definition may write <<<.
if launches=$(grep -rn --include='*.cu' --include='*.cuh' --include='*.hpp' --include='*.cpp' '<<<' src include |
              grep -v '^include/cortado/cuda/check.hpp:'); then
  echo "check_kernels.sh: kernel launches outside CORTADO_LAUNCH (cuda/check.hpp):" >&2
  echo "$launches" >&2
  status=1
fi

[[ "${1:-}" == --list ]] && exit 0
exit "$status"
