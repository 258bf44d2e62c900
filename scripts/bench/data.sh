#!/usr/bin/env bash
# data.sh — images/s through Cortado's data pipeline at 1, 2, … worker threads, against a plain
# single-threaded OpenCV/numpy loop doing the same work (data_reference.py), in one run; then the
# share of a LeNet CPU training run that the step spent waiting for data.
#
# Datasets: MNIST's training set as raw Datums (LeNet's transform: scale 1/256), and $IMAGES synthetic
# 256×256 colour JPEGs converted with `convert_imageset --encoded` (decoded in the workers; random
# 227×227 crop, random mirror, mean subtraction, as CaffeNet trains). Cortado's rate comes from
# `trainer time` on a net of the Data layer alone (a Silence layer consumes its tops): the mean time
# of one Forward — waiting for and copying out one batch — over the iterations after the ring's
# first refill, so it measures the pipeline's steady rate, not its head start.
#
# Usage: scripts/bench/data.sh        (no arguments; --help prints this)
# Environment: THREADS ("1 2 4" by default: 1, 2, the cores, and twice the cores, at most 8),
#   IMAGES (default 1000), CORTADO_BUILD_DIR. Each measurement runs about 2 s of batches.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
settings_from_environment "THREADS, IMAGES" "$@"
cd "$REPO_ROOT"

IMAGES="${IMAGES:-1000}"
cores=$(nproc)
default_threads="1 2 $cores $((2 * cores))"
THREADS="${THREADS:-$(tr ' ' '\n' <<<"$default_threads" | awk '$1 <= 8' | sort -nu | tr '\n' ' ')}"
[[ "$IMAGES" =~ ^[1-9][0-9]*$ ]] || die "IMAGES must be a positive integer, not '$IMAGES'"
[[ -n "${THREADS//[[:space:]]/}" ]] || die "THREADS is empty: give at least one thread count (or leave it unset)"
for t in $THREADS; do
  [[ "$t" =~ ^[1-9][0-9]*$ ]] || die "THREADS takes positive integers, not '$t'"
done

if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  cortado_configure
fi
cortado_build trainer convert_imageset convert_mnist_data
cortado_prepare_mnist

work="$BUILD_DIR/bench_data"
mkdir -p "$work"
jpegs="$work/jpeg_${IMAGES}"
if [[ ! -f "$jpegs/list.txt" ]]; then
  log "writing $IMAGES synthetic 256x256 JPEGs to $jpegs"
  "$PYTHON" scripts/bench/data_reference.py make-images "$jpegs" "$IMAGES"
fi
jpeg_lmdb="$work/jpeg_${IMAGES}_encoded_lmdb"
if [[ ! -d "$jpeg_lmdb" ]]; then
  "$BUILD_DIR/tools/convert_imageset" --encoded "$jpegs/" "$jpegs/list.txt" "$jpeg_lmdb" 2>"$work/convert.log" ||
    { tail -n 5 "$work/convert.log" >&2; die "convert_imageset failed"; }
fi

# A net of one Data layer (its tops consumed by Silence).
write_net() {  # write_net PATH SOURCE BATCH THREADS TRANSFORM
  cat >"$1" <<NET
name: "data_bench"
layer { name: "data" type: "Data" top: "data" top: "label"
  transform_param { $5 }
  data_param { source: "$2" batch_size: $3 backend: LMDB threads: $4 } }
layer { name: "sink" type: "Silence" bottom: "data" bottom: "label" }
NET
}

# Mean ms per Forward after the first 2·prefetch iterations (the ring starts full), from
# "Iteration: N forward-backward time: X ms." lines.
pipeline_rate() {  # pipeline_rate SOURCE BATCH THREADS TRANSFORM ITERATIONS -> images/s
  local net="$work/net_$3.prototxt" log="$work/time_$3.log"
  write_net "$net" "$1" "$2" "$3" "$4"
  "$BUILD_DIR/tools/trainer" time --model="$net" --iterations="$5" >"$log" 2>&1 ||
    { tail -n 5 "$log" >&2; die "trainer time failed; see $log"; }
  sed -nE 's/.*Iteration: ([0-9]+) forward-backward time: ([0-9.eE+-]+) ms\./\1 \2/p' "$log" |
    awk -v batch="$2" '$1 > 8 { sum += $2; n++ } END { if (n == 0 || sum <= 0) exit 1
                                                        printf "%.1f", batch * n * 1000 / sum }'
}

reference_rate() {  # reference_rate ARGS... -> images/s
  "$PYTHON" scripts/bench/data_reference.py "$@" | sed -nE 's/^REFERENCE images_per_s=//p'
}

table=()
check_line=""
measure() {  # measure NAME SOURCE BATCH TRANSFORM ITERATIONS REFERENCE_ARGS...
  local name=$1 source=$2 batch=$3 transform=$4 iterations=$5
  shift 5
  log "$name: reference loop"
  local reference one="" rate
  reference=$(reference_rate "$@")
  table+=("$(printf '%-34s %-28s %10.0f %8s' "$name" "OpenCV/numpy loop, 1 thread" "$reference" "1.00x")")
  for t in $THREADS; do
    log "$name: Cortado, $t worker thread(s)"
    rate=$(pipeline_rate "$source" "$batch" "$t" "$transform" "$iterations")
    [[ -n "$one" ]] || one=$rate
    table+=("$(printf '%-34s %-28s %10.0f %7.2fx   (%.2fx one thread)' "$name" "Cortado, $t worker threads" "$rate" \
                "$(awk -v a="$rate" -v b="$reference" 'BEGIN { print a / b }')" \
                "$(awk -v a="$rate" -v b="$one" 'BEGIN { print a / b }')")")
    if [[ "$t" == 2 ]]; then
      check_line+="$name: 2 threads give $(awk -v a="$rate" -v b="$one" 'BEGIN { printf "%.2f", a / b }')x one thread. "
    fi
  done
}

measure "MNIST Datums (28x28, batch 64)" "data/mnist/mnist_train_lmdb" 64 "scale: 0.00390625" 15000 \
  mnist data/mnist/train-images-idx3-ubyte
measure "JPEG 256x256, crop 227 + mirror" "$jpeg_lmdb" 32 \
  "crop_size: 227 mirror: true mean_value: 104 mean_value: 117 mean_value: 123" 120 \
  jpeg "$jpegs/list.txt" "$jpegs/"

# ---- LeNet: the share of the step spent waiting for data ---------------------------------------
solver="$work/lenet_wait_solver.prototxt"
sed -e 's/^max_iter:.*/max_iter: 1000/' -e 's/^snapshot:.*/snapshot: 0/' -e 's/^test_interval:.*/test_interval: 100000/' \
    -e 's/^solver_mode:.*/solver_mode: CPU/' \
    -e "s|^snapshot_prefix:.*|snapshot_prefix: \"$work/lenet_wait\"|" models/mnist/lenet_solver.prototxt >"$solver"
echo "snapshot_after_train: false" >>"$solver"
echo "test_initialization: false" >>"$solver"
lenet_log="$work/lenet_wait.log"
log "LeNet: 1000 CPU iterations (log: $lenet_log)"
"$BUILD_DIR/tools/trainer" train --solver="$solver" >"$lenet_log" 2>&1 ||
  { tail -n 5 "$lenet_log" >&2; die "LeNet training failed; see $lenet_log"; }
wait_line=$(sed -nE 's/.*Data wait: ([0-9.]+)% of the time \(([0-9.]+)s of ([0-9.]+)s\).*/\2 \3/p' "$lenet_log" |
            awk '{ w += $1; t += $2 } END { if (t > 0) printf "%.2f%% of %.1fs over %d displays", 100 * w / t, t, NR }')

echo
printf '%-34s %-28s %10s %8s\n' "dataset" "reader" "images/s" "vs loop"
printf '%s\n' "${table[@]}"
echo
echo "$check_line"
echo "LeNet CPU training (1000 iterations, batch 64): the step waited for data ${wait_line}."
