#!/usr/bin/env bash
# cpu_lenet.sh — LeNet training on the CPU, Cortado against PyTorch, in one run.
#
# Both train Caffe's LeNet (models/mnist/lenet_train_test.prototxt) on MNIST's training set with
# batch 64, SGD momentum 0.9, base_lr 0.01, weight_decay 5e-4, lr policy inv, for the same number of
# steps, each with $THREADS threads (OPENBLAS_NUM_THREADS/OMP_NUM_THREADS for Cortado,
# torch.set_num_threads for PyTorch). The first $WARMUP steps are not timed; ms/iteration is the
# median over windows of 100 steps. Cortado's windows come from its display lines
# "Iteration N (X iter/s, Ys/100 iters), loss = L"; Cortado's time includes its data layer
# (LMDB read and transform), PyTorch's batches are slices of a tensor already in memory.
#
# Usage: scripts/bench/cpu_lenet.sh        (no arguments; --help prints this)
# Environment: ITERS (default 1000), WARMUP (default 100, a multiple of 100), THREADS (default 2),
# CORTADO_BUILD_DIR (default build/; the trainer is built there if needed).
# Needs: the Debian packages of scripts/install_deps.sh; fetches and converts MNIST if missing.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
settings_from_environment "ITERS, WARMUP, THREADS" "$@"
cd "$REPO_ROOT"

ITERS="${ITERS:-1000}"
WARMUP="${WARMUP:-100}"
THREADS="${THREADS:-2}"
WINDOW=100
for var in ITERS THREADS; do
  [[ "${!var}" =~ ^[1-9][0-9]*$ ]] || die "$var must be a positive integer, not '${!var}'"
done
[[ "$WARMUP" =~ ^[0-9]+$ ]] || die "WARMUP must be a non-negative integer, not '$WARMUP'"
((WARMUP % WINDOW == 0)) || die "WARMUP must be a multiple of $WINDOW"
((ITERS - WARMUP >= 2 * WINDOW)) || die "ITERS must leave at least two windows of $WINDOW after WARMUP"

"$PYTHON" -c 'import torch, numpy' 2>/dev/null ||
  die "$PYTHON lacks torch or numpy: run scripts/install_deps.sh"

# ---- build and data ---------------------------------------------------------------------------
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  cortado_configure
fi
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")
[[ "$build_type" == Release ]] || log "warning: $BUILD_DIR is a '$build_type' build, not Release"
cortado_build trainer convert_mnist_data
cortado_prepare_mnist

median() {  # the median of the numbers on stdin, one per line
  sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1
                   print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ---- Cortado ----------------------------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/cortado_bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
solver="$work/lenet_bench_solver.prototxt"
cat >"$solver" <<EOF
# LeNet CPU benchmark (scripts/bench/cpu_lenet.sh): lenet_solver.prototxt without tests or snapshots.
net: "models/mnist/lenet_train_test.prototxt"
test_iter: 100
test_interval: 100000
test_initialization: false
base_lr: 0.01
momentum: 0.9
weight_decay: 0.0005
lr_policy: "inv"
gamma: 0.0001
power: 0.75
display: $WINDOW
max_iter: $ITERS
snapshot: 0
snapshot_after_train: false
snapshot_prefix: "$work/lenet_bench"
solver_mode: CPU
EOF

busy=$(other_load)
if ((busy > 10)); then
  log "warning: the CPU was ${busy}% busy before the run; the timings below are not trustworthy"
fi

cortado_log="$BUILD_DIR/bench_cpu_lenet_cortado.log"
log "Cortado: $ITERS iterations, $THREADS threads (log: $cortado_log)"
t0=$(date +%s.%N)
if ! OPENBLAS_NUM_THREADS="$THREADS" OMP_NUM_THREADS="$THREADS" GLOG_logtostderr=1 \
     "$BUILD_DIR/tools/trainer" train --solver="$solver" >"$cortado_log" 2>&1; then
  tail -n 20 "$cortado_log" >&2
  die "Cortado training failed; see $cortado_log"
fi
t1=$(date +%s.%N)
cortado_wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')

# "Iteration 300 (123.4 iter/s, 0.81s/100 iters), loss = 0.2": the window that ends at iteration
# 300 covers the 100 steps after the display at 200. Iteration 0's display times one step only.
windows=$(sed -nE 's/.*Iteration ([0-9]+) \([^,]*, ([-+0-9.eE]+)s\/([0-9]+) iters\), loss = .*/\1 \2 \3/p' \
            "$cortado_log" |
          awk -v warmup="$WARMUP" '$1 - $3 >= warmup && $3 > 0 { printf "%.6f\n", $2 * 1000 / $3 }')
[[ -n "$windows" ]] || die "no timed display lines in $cortado_log"
cortado_ms=$(median <<<"$windows")
cortado_loss=$(sed -nE 's/.*Iteration [0-9]+ \(.*\), loss = ([-+0-9.eE]+).*/\1/p' "$cortado_log" | tail -n 1)
echo "Cortado: median $(printf '%.3f' "$cortado_ms") ms/iter over $(wc -l <<<"$windows") windows" \
     "of $WINDOW; wall ${cortado_wall}s; last displayed loss $cortado_loss"

# ---- PyTorch ----------------------------------------------------------------------------------
torch_log="$BUILD_DIR/bench_cpu_lenet_pytorch.log"
log "PyTorch: $ITERS iterations, $THREADS threads (log: $torch_log)"
if ! OMP_NUM_THREADS="$THREADS" "$PYTHON" "$REPO_ROOT/scripts/bench/pytorch_lenet.py" \
     --data "$REPO_ROOT/data/mnist" --iters "$ITERS" --warmup "$WARMUP" --display "$WINDOW" \
     --threads "$THREADS" >"$torch_log" 2>&1; then
  tail -n 20 "$torch_log" >&2
  die "PyTorch training failed; see $torch_log"
fi
result=$(grep '^RESULT ' "$torch_log" | tail -n 1)
torch_ms=$(sed -E 's/.*ms_per_iter=([^ ]+).*/\1/' <<<"$result")
torch_wall=$(sed -E 's/.*wall_s=([^ ]+).*/\1/' <<<"$result")
torch_loss=$(sed -E 's/.*loss=([^ ]+).*/\1/' <<<"$result")
grep '^PyTorch: median' "$torch_log" || true
echo "PyTorch: wall ${torch_wall}s; last loss $torch_loss"

# ---- summary ----------------------------------------------------------------------------------
echo
awk -v c="$cortado_ms" -v p="$torch_ms" -v t="$THREADS" 'BEGIN {
  printf "LeNet CPU training, batch 64, %d threads: Cortado %.2f ms/iter, PyTorch %.2f ms/iter, ratio %.2fx\n",
         t, c, p, p / c }'
if ((busy > 10)); then
  echo "(other work kept the CPU ${busy}% busy before the run: rerun on an idle machine)"
fi
