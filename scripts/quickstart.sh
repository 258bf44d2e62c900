#!/usr/bin/env bash
# quickstart.sh — from a fresh checkout to a trained LeNet: installs what is missing, builds the
# trainer, fetches MNIST and converts it to LMDB (once), trains models/mnist/lenet_solver.prototxt
# (10,000 iterations, a test every 500), prints the final test accuracy and the wall time, and writes the
# trained net as an ONNX model (build/lenet.onnx) for ONNX runtimes.
#
# Usage: scripts/quickstart.sh [extra trainer flags, passed through]
# Environment: CORTADO_BUILD_DIR (default build/) and the build variables of scripts/test.sh.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$REPO_ROOT"  # the prototxts name their files relative to the repository root
start=$SECONDS

"$REPO_ROOT/scripts/install_deps.sh"
cortado_configure
cortado_build trainer convert_mnist_data export_onnx
cortado_prepare_mnist

solver=models/mnist/lenet_solver.prototxt
train_log="$BUILD_DIR/quickstart_lenet.log"
log "training: $BUILD_DIR/tools/trainer train --solver=$solver${*:+ $*} (log: $train_log)"
train_start=$(date +%s.%N)
if ! GLOG_logtostderr=1 "$BUILD_DIR/tools/trainer" train --solver="$solver" "$@" 2>&1 | tee "$train_log"; then
  die "training failed; see $train_log"
fi
train_end=$(date +%s.%N)

# "    Test net output #0: accuracy = 0.9912" — the last test of the run.
accuracy=$(sed -nE 's/.*Test net output #0: accuracy = ([-+0-9.eE]+).*/\1/p' "$train_log" | tail -n 1)
[[ -n "$accuracy" ]] || die "training ended without a test accuracy line; see $train_log"
train_s=$(awk -v a="$train_start" -v b="$train_end" 'BEGIN { printf "%.1f", b - a }')

# "Snapshotting to binary proto file models/mnist/lenet_iter_10000.caffemodel" — the trained weights.
weights=$(sed -nE 's/.*Snapshotting to binary proto file (.*\.caffemodel)$/\1/p' "$train_log" | tail -n 1)
onnx_line="no snapshot was written, so no ONNX model"
if [[ -n "$weights" ]]; then
  if "$BUILD_DIR/tools/export_onnx" models/mnist/lenet.prototxt "$weights" "$BUILD_DIR/lenet.onnx" 2>"$BUILD_DIR/lenet_onnx.log"; then
    onnx_line="ONNX model of $weights: $BUILD_DIR/lenet.onnx"
  else
    onnx_line="no ONNX model: $(tail -n 1 "$BUILD_DIR/lenet_onnx.log")"
  fi
fi

echo
echo "LeNet on MNIST: final test accuracy $accuracy"
echo "Training wall time ${train_s}s (whole quickstart $((SECONDS - start))s); log: $train_log"
echo "$onnx_line"
