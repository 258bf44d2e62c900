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
# Usage: scripts/bench/sweep.sh        (no arguments; --help prints this)
# Environment (all optional):
#   NETS        prototxts (default: models/mnist/lenet.prototxt models/cifar10/cifar10_quick.prototxt)
#   BATCHES     batch sizes (default: 16 64 256)
#   THREADS     CPU thread counts, OMP_NUM_THREADS (default: 1 and the number of cores)
#   GPUS        GPU ids to sweep as well (default: every GPU nvidia-smi lists; "none" for none)
#   ITERATIONS  timed iterations per configuration (default: 10)
#   OUT         output folder (default: build/sweep): sweep.csv, sweep.png, best.txt, logs/
#   CORTADO_BUILD_DIR  the build folder whose trainer runs (default build/; built if missing)
# Progress goes to stderr, one line per configuration with the time left; the summary on stdout at
# the end: the best configuration of each net, then every configuration that failed with its reason
# (the trainer's one-line error, "trainer: error: ..."). Exit status 1 when a configuration failed
# (its row says "failed" and its log is in OUT/logs), after the others have run; when none succeeded
# there is no sweep.png or best.txt (an earlier sweep's are removed). A bad setting is one line and
# exit status 1 before anything runs. Interrupted (ctrl-C), it exits with status 130 and leaves
# sweep.csv as it was. Files are written whole: sweep.csv and best.txt under temporary names, renamed.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
settings_from_environment "NETS, BATCHES, THREADS, GPUS, ITERATIONS, OUT" "$@"
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
for setting in NETS BATCHES THREADS; do
  [[ -n "${!setting//[[:space:]]/}" ]] || die "$setting is empty: give at least one value (or leave it unset)"
done
for value in $BATCHES $THREADS; do
  [[ "$value" =~ ^[1-9][0-9]*$ ]] || die "BATCHES and THREADS take positive integers, not '$value'"
done
[[ "$ITERATIONS" =~ ^[1-9][0-9]*$ ]] || die "ITERATIONS takes one positive integer, not '$ITERATIONS'"
for gpu in $GPUS; do
  [[ "$gpu" =~ ^[0-9]+$ ]] || die "GPUS takes GPU ids such as '0 1' (or none), not '$gpu'"
done
# The nets and their names in the CSV: the file name, or folder_file where two share a file name.
declare -A names taken
for net in $NETS; do
  [[ -f "$net" ]] || die "NETS: no such prototxt '$net'"
  [[ -z "${names[$net]:-}" ]] || die "NETS names $net twice"
  grep -Eq '^[[:space:]]*(net|train_net|test_net|net_param|train_net_param|base_lr)[[:space:]]*[:{]' "$net" &&
    die "NETS: $net is a solver prototxt; name the net prototxt instead"
  name=$(basename "$net" .prototxt)
  [[ -z "${taken[$name]:-}" ]] || name="$(basename "$(dirname "$net")")_$name"
  [[ -z "${taken[$name]:-}" ]] || die "NETS: $net and ${taken[$name]} would both be '$name' in the CSV; rename one"
  names[$net]=$name taken[$name]=$net
done
"$PYTHON" -c 'import matplotlib' 2>/dev/null || die "$PYTHON lacks matplotlib: run scripts/install_deps.sh"

trainer="$BUILD_DIR/tools/trainer"
if [[ ! -x "$trainer" ]]; then
  [[ -f "$BUILD_DIR/CMakeCache.txt" ]] || cortado_configure
  cortado_build trainer
fi

mkdir -p "$OUT/logs" "$OUT/nets" 2>/dev/null ||
  die "OUT: cannot make the folder $OUT/logs (is $OUT a writable folder?)"
csv="$OUT/sweep.csv"
partial="$csv.partial"
trap 'rm -f "$partial" "$OUT/best.txt.partial"' EXIT
echo "net,device,threads,batch_size,iterations,forward_ms,backward_ms,forward_backward_ms,images_per_s,status" >"$partial"

# The nets as timed: deploy nets made training nets.
declare -A timed
for net in $NETS; do
  name=${names[$net]}
  if grep -Eq 'type: *"Input"|^ *input *:' "$net"; then
    timed[$net]="$OUT/nets/${name}_train.prototxt"
    if ! made=$("$PYTHON" scripts/bench/make_train_net.py "$net" 1 "${timed[$net]}" 2>&1); then
      die "NETS: cannot make a training net of $net: ${made##*$'\n'}"
    fi
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

# Why a run failed, in one line: the trainer's own error line, else (a crash, a signal) how it ended
# and the last line of its log.
failure_reason() {  # failure_reason LOG STATUS
  local line how
  line=$(grep -m 1 '^trainer: error: ' "$1" || true)
  if [[ -z "$line" ]]; then
    how="exited with status $2"
    (($2 > 128)) && how="was killed by signal $(kill -l $(($2 - 128)) 2>/dev/null || echo $(($2 - 128)))"
    line=$(grep -v '^[[:space:]]*$' "$1" | tail -n 1 || true)
    line="the trainer $how${line:+; its log ends: $line}"
  fi
  printf '%s' "$line"
}

total=${#configs[@]}
start=$SECONDS
failed=0
failures=()  # "net: device, T threads, batch B: failed: reason", one per failed configuration
finished=0
interrupted() {  # ctrl-C: the CSV being written goes (the EXIT trap), an earlier one stays
  printf 'error: interrupted after %d of %d configurations; %s is left as it was\n' "$finished" "$total" "$csv" >&2
  exit 130
}
trap interrupted INT TERM
for ((i = 0; i < total; i++)); do
  read -r net device threads batch <<<"${configs[i]}"
  name=${names[$net]}
  run="$OUT/logs/${name}_${device}_t${threads}_b${batch}"
  gpu_flag=()
  [[ "$device" == GPU* ]] && gpu_flag=(--gpu="${device#GPU}")
  threads_text="$threads thread$([[ $threads == 1 ]] || echo s)"
  rm -f "$run.csv"
  code=0
  OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads "$trainer" time --model="${timed[$net]}" \
    --batch_size="$batch" --iterations="$ITERATIONS" "${gpu_flag[@]}" --output="$run.csv" 2>"$run.log" || code=$?
  row=''
  if ((code == 0)); then
    row=$(awk -F, '$7 == "total" { print $9 "," $10 "," $11 "," $12 }' "$run.csv" 2>/dev/null || true)
    reason="the trainer wrote no \"total\" row to $run.csv"
  else
    reason=$(failure_reason "$run.log" "$code")
  fi
  if [[ -n "$row" ]]; then
    status=ok
    rate=${row##*,}
    result="${rate%%.*} img/s"
  else
    status=failed
    failed=$((failed + 1))
    row=",,,"
    result="failed: $reason"
    failures+=("$name: $device, $threads_text, batch $batch: $result")
  fi
  echo "$name,$device,$threads,$batch,$ITERATIONS,$row,$status" >>"$partial"
  finished=$((i + 1))
  elapsed=$((SECONDS - start))
  left=$(( elapsed * (total - i - 1) / (i + 1) ))
  printf '[%d/%d] %s batch %s, %s, %s: %s (%dm%02ds elapsed, about %dm%02ds left)\n' \
    $((i + 1)) "$total" "$name" "$batch" "$threads_text" "$device" "$result" \
    $((elapsed / 60)) $((elapsed % 60)) $((left / 60)) $((left % 60)) >&2
done
mv "$partial" "$csv"

# The summary: the best configuration of each net (best.txt), then each failed one with its reason.
if ((failed < total)); then
  "$PYTHON" scripts/bench/sweep_report.py "$csv" "$OUT/sweep.png" >"$OUT/best.txt.partial"
  mv "$OUT/best.txt.partial" "$OUT/best.txt"
  cat "$OUT/best.txt"
  log "wrote $csv, $OUT/sweep.png and $OUT/best.txt"
else
  rm -f "$OUT/sweep.png" "$OUT/best.txt"  # an earlier sweep's; this one has nothing to plot
  log "wrote $csv; no configuration succeeded, so there is no sweep.png or best.txt"
fi
((failed == 0)) || printf '%s\n' "${failures[@]}"
((failed == 0)) || die "$failed of $total configurations failed (see $OUT/logs)"
