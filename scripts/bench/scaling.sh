#!/usr/bin/env bash
# scaling.sh — data-parallel training throughput (parallel.hpp), in one run: for LeNet, cifar10_quick
# and ResNet-50 on the CPU, images/s of
#   one process with 1 thread, one process with 2 threads (the reference), and
#   mpirun -np 2 with 1 thread per rank (half the batch each: the same effective batch),
# and the share of the ranks' step time spent waiting for the averaged gradients (the trainer's
# "Gradient exchange: waited X%" line). On a machine with a GPU it adds, per net, `trainer train
# --gpu=0` against `mpirun -np 1 trainer train --gpu=0` (NCCL with one rank: the exchange's cost on
# one GPU; the GPU machines at hand have one).
#
# The nets are the deploy prototxts made training nets by make_train_net.py (a constant DummyData
# batch: no data reading in the times). images/s is the median over the display intervals after the
# first (which holds the start-up) of "Iteration N (X iter/s, ...)" × the effective batch.
#
# Usage: scripts/bench/scaling.sh        (no arguments; --help prints this)
# Environment: NETS (default "lenet cifar10_quick resnet50"), SCALE (iterations multiplier, default 1),
#   TRAINER (default <build>/tools/trainer), BUILD (default 1; 0 uses the trainer as it is),
#   MPIRUN (default "mpirun --allow-run-as-root --oversubscribe"), CORTADO_BUILD_DIR (default build/).
# Logs and nets: build/bench_scaling/. About 4 minutes on 2 idle cores.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
settings_from_environment "NETS, SCALE, TRAINER, BUILD" "$@"
cd "$REPO_ROOT"

NETS="${NETS:-lenet cifar10_quick resnet50}"
SCALE="${SCALE:-1}"
BUILD="${BUILD:-1}"
MPIRUN="${MPIRUN:-mpirun --allow-run-as-root --oversubscribe}"
[[ "$SCALE" =~ ^[1-9][0-9]*$ ]] || die "SCALE must be a positive integer"
for name in $NETS; do
  [[ " lenet cifar10_quick resnet50 " == *" $name "* ]] ||
    die "unknown net '$name' in NETS (choose from lenet cifar10_quick resnet50)"
done
command -v mpirun >/dev/null || die "mpirun is missing (scripts/install_deps.sh installs openmpi-bin)"

if [[ "$BUILD" == 1 && -z "${TRAINER:-}" ]]; then
  cortado_configure
  cortado_build trainer
fi
TRAINER="${TRAINER:-$BUILD_DIR/tools/trainer}"
[[ -x "$TRAINER" ]] || die "no trainer at $TRAINER"
out="$BUILD_DIR/bench_scaling"
mkdir -p "$out"

net_spec() {  # net_spec NET -> "DEPLOY BATCH ITERATIONS DISPLAY" (batch: the effective one)
  case "$1" in
    lenet) echo "models/mnist/lenet.prototxt 64 $((600 * SCALE)) $((100 * SCALE))" ;;
    cifar10_quick) echo "models/cifar10/cifar10_quick.prototxt 100 $((60 * SCALE)) $((10 * SCALE))" ;;
    resnet50) echo "models/resnet/ResNet-50-deploy.prototxt 16 $((8 * SCALE)) $((2 * SCALE))" ;;
    *) die "unknown net $1 (choose from lenet cifar10_quick resnet50)" ;;
  esac
}

# write_solver NET BATCH ITERATIONS DISPLAY -> the solver's path (its net: the deploy net at BATCH)
write_solver() {
  local name=$1 batch=$2 iters=$3 display=$4 deploy
  read -r deploy _ <<<"$(net_spec "$name")"
  "$PYTHON" scripts/bench/make_train_net.py "$deploy" "$batch" "$out/${name}_b$batch.prototxt" 2>/dev/null
  cat >"$out/${name}_b${batch}_solver.prototxt" <<EOF
train_net: "$out/${name}_b$batch.prototxt"
base_lr: 0.0001 lr_policy: "fixed" momentum: 0.9 weight_decay: 0.0005
max_iter: $iters display: $display snapshot_after_train: false random_seed: 1 solver_mode: CPU
EOF
  echo "$out/${name}_b${batch}_solver.prototxt"
}

# The median over the display intervals after the first of iter/s, times the batch; and the median
# exchange wait in percent ("-" without one).
summarise() {  # summarise LOG BATCH -> "IMAGES_PER_S WAIT"
  awk -v batch="$2" '
    /\] Iteration [0-9]+ \(/ { n++; if (n > 1) { sub(/.*\(/, ""); rates[++r] = $1 * batch } }
    /Gradient exchange: waited/ { w = $0; sub(/.*waited /, "", w); sub(/%.*/, "", w); waits[++k] = w }
    function median(a, m,   i, j, t) {
      for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }
    END {
      if (r == 0) { print "nan -"; exit }
      printf "%.1f %s\n", median(rates, r), (k > 0 ? sprintf("%.1f%%", median(waits, k)) : "-")
    }' "$1"
}

run() {  # run LOG COMMAND... (fails with the log's tail)
  local log=$1
  shift
  if ! "$@" >"$log" 2>&1; then
    tail -n 5 "$log" >&2
    die "failed: $* (log: $log)"
  fi
}

has_gpu() { nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }

printf '%-15s %-34s %10s %8s %14s\n' net run "images/s" "vs 1×1" "exchange wait" | tee "$out/summary.txt"
for name in $NETS; do
  read -r _ batch iters display <<<"$(net_spec "$name")"
  whole=$(write_solver "$name" "$batch" "$iters" "$display")
  half=$(write_solver "$name" $((batch / 2)) "$iters" "$display")
  log "$name: batch $batch, $iters iterations"
  run "$out/${name}_1x1.log" env OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$TRAINER" train --solver="$whole"
  run "$out/${name}_1x2.log" env OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 "$TRAINER" train --solver="$whole"
  # shellcheck disable=SC2086  # MPIRUN is a command with its options
  run "$out/${name}_2x1.log" $MPIRUN -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 -np 2 "$TRAINER" train \
    --solver="$half"
  read -r base _ <<<"$(summarise "$out/${name}_1x1.log" "$batch")"
  for config in "1x1:1 process, 1 thread" "1x2:1 process, 2 threads" "2x1:2 ranks (mpirun), 1 thread each"; do
    read -r rate wait <<<"$(summarise "$out/${name}_${config%%:*}.log" "$batch")"
    printf '%-15s %-34s %10s %8s %14s\n' "$name" "${config#*:}" "$rate" \
      "$(awk -v a="$rate" -v b="$base" 'BEGIN { printf "%.2f", a / b }')" "$wait" | tee -a "$out/summary.txt"
  done
  read -r threads _ <<<"$(summarise "$out/${name}_1x2.log" "$batch")"
  read -r ranks _ <<<"$(summarise "$out/${name}_2x1.log" "$batch")"
  printf '%-15s 2 ranks / 1 process of 2 threads: %.2f\n' "$name" "$(awk -v a="$ranks" -v b="$threads" 'BEGIN { print a / b }')" |
    tee -a "$out/summary.txt"
  if has_gpu; then
    sed -i 's/solver_mode: CPU/solver_mode: GPU/' "$whole"
    run "$out/${name}_gpu.log" "$TRAINER" train --solver="$whole" --gpu=0
    # shellcheck disable=SC2086
    run "$out/${name}_gpu_nccl.log" $MPIRUN -np 1 "$TRAINER" train --solver="$whole" --gpu=0
    read -r alone _ <<<"$(summarise "$out/${name}_gpu.log" "$batch")"
    read -r nccl wait <<<"$(summarise "$out/${name}_gpu_nccl.log" "$batch")"
    printf '%-15s %-34s %10s %8s %14s\n' "$name" "GPU 0 alone" "$alone" "" "-" | tee -a "$out/summary.txt"
    printf '%-15s %-34s %10s %8s %14s\n' "$name" "GPU 0, NCCL, 1 rank (mpirun)" "$nccl" \
      "$(awk -v a="$nccl" -v b="$alone" 'BEGIN { printf "%.2f", a / b }')" "$wait" | tee -a "$out/summary.txt"
  fi
done
log "summary: $out/summary.txt"
