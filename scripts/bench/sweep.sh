#!/usr/bin/env bash
# sweep.sh — training throughput over nets × batch sizes × CPU thread counts (× GPUs where present),
# measured with `trainer time --batch_size=B --output=run.json` (one forward + backward untimed, then
# ITERATIONS timed), collected into one CSV, plotted (images/s against batch, one line per net and
# device, PNG by matplotlib) and summed up as the best configuration of each net.
#
# A net given as a deploy prototxt (an Input layer or `input:` fields) is first made a training net by
# make_train_net.py (a constant DummyData batch and a SoftmaxWithLoss, so no dataset is needed); a
# training prototxt is timed as it is (its data layers must find their data). On a GPU the thread
# count is not swept (the first of THREADS is used).
#
# Usage: scripts/bench/sweep.sh
# Environment (all optional):
#   NETS        prototxts (default: models/mnist/lenet.prototxt models/cifar10/cifar10_quick.prototxt)
#   BATCHES     batch sizes (default: 16 64 256)
#   THREADS     CPU thread counts, OMP_NUM_THREADS (default: 1 and the number of cores)
#   GPUS        GPU ids to sweep as well (default: every GPU nvidia-smi lists; "none" for none)
#   ITERATIONS  timed iterations per configuration (default: 10)
#   OUT         output folder (default: build/sweep): sweep.csv, sweep.png, best.txt, logs/
#   CORTADO_BUILD_DIR  the build folder whose trainer runs (default build/; built if missing)
# Progress goes to stderr, one line per configuration with the time left; the best configurations
# are printed at the end. Exit status 1 when a configuration failed (its row says "failed" and its
# log is in OUT/logs), after the others have run.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
cd "$REPO_ROOT"

NETS="${NETS:-models/mnist/lenet.prototxt models/cifar10/cifar10_quick.prototxt}"
BATCHES="${BATCHES:-16 64 256}"
THREADS="${THREADS:-$( (echo 1; nproc) | sort -nu | tr '\n' ' ')}"
ITERATIONS="${ITERATIONS:-10}"
OUT="${OUT:-$BUILD_DIR/sweep}"
if [[ -z "${GPUS:-}" ]]; then
  GPUS=$(nvidia-smi -L 2>/dev/null | sed -n 's/^GPU \([0-9]*\):.*/\1/p' | tr '\n' ' ' || true)
fi
[[ "${GPUS:-}" == none ]] && GPUS=""
for value in $BATCHES $THREADS $ITERATIONS; do
  [[ "$value" =~ ^[1-9][0-9]*$ ]] || die "BATCHES, THREADS and ITERATIONS take positive integers, not '$value'"
done
for net in $NETS; do
  [[ -f "$net" ]] || die "NETS: no such prototxt '$net'"
done
"$PYTHON" -c 'import matplotlib' 2>/dev/null || die "$PYTHON lacks matplotlib: run scripts/install_deps.sh"

trainer="$BUILD_DIR/tools/trainer"
if [[ ! -x "$trainer" ]]; then
  [[ -f "$BUILD_DIR/CMakeCache.txt" ]] || cortado_configure
  cortado_build trainer
fi

mkdir -p "$OUT/logs" "$OUT/nets"
csv="$OUT/sweep.csv"
partial="$csv.partial"
echo "net,device,threads,batch_size,iterations,forward_ms,backward_ms,forward_backward_ms,images_per_s,status" >"$partial"

# The nets as timed: deploy nets made training nets.
declare -A timed
for net in $NETS; do
  name=$(basename "$net" .prototxt)
  if grep -Eq 'type: *"Input"|^ *input *:' "$net"; then
    timed[$net]="$OUT/nets/${name}_train.prototxt"
    "$PYTHON" scripts/bench/make_train_net.py "$net" 1 "${timed[$net]}" 2>/dev/null ||
      die "make_train_net.py could not make a training net of $net"
  else
    timed[$net]="$net"
  fi
done

# The configurations: "net device threads batch" per line.
configs=()
first_threads=${THREADS%% *}
for net in $NETS; do
  for batch in $BATCHES; do
    for threads in $THREADS; do
      configs+=("$net CPU $threads $batch")
    done
    for gpu in $GPUS; do
      configs+=("$net GPU$gpu $first_threads $batch")
    done
  done
done

total=${#configs[@]}
start=$SECONDS
failed=0
for ((i = 0; i < total; i++)); do
  read -r net device threads batch <<<"${configs[i]}"
  name=$(basename "$net" .prototxt)
  run="$OUT/logs/${name}_${device}_t${threads}_b${batch}"
  gpu_flag=()
  [[ "$device" == GPU* ]] && gpu_flag=(--gpu="${device#GPU}")
  status=ok
  if OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads "$trainer" time --model="${timed[$net]}" \
       --batch_size="$batch" --iterations="$ITERATIONS" "${gpu_flag[@]}" --output="$run.csv" 2>"$run.log"; then
    row=$(awk -F, '$7 == "total" { print $9 "," $10 "," $11 "," $12 }' "$run.csv")
    rate=${row##*,}
  else
    status=failed
    failed=$((failed + 1))
    row=",,,"
    rate="failed ($(tail -n 1 "$run.log"))"
  fi
  echo "$name,$device,$threads,$batch,$ITERATIONS,$row,$status" >>"$partial"
  elapsed=$((SECONDS - start))
  left=$(( elapsed * (total - i - 1) / (i + 1) ))
  printf '[%d/%d] %s batch %s, %s thread%s, %s: %s img/s (%dm%02ds elapsed, about %dm%02ds left)\n' \
    $((i + 1)) "$total" "$name" "$batch" "$threads" "$([[ $threads == 1 ]] || echo s)" "$device" \
    "${rate%%.*}" $((elapsed / 60)) $((elapsed % 60)) $((left / 60)) $((left % 60)) >&2
done
mv "$partial" "$csv"

"$PYTHON" scripts/bench/sweep_report.py "$csv" "$OUT/sweep.png" | tee "$OUT/best.txt"
log "wrote $csv, $OUT/sweep.png and $OUT/best.txt"
((failed == 0)) || die "$failed of $total configurations failed (see $OUT/logs)"
