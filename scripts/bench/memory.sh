#!/usr/bin/env bash
# memory.sh — peak memory and time of training forward + backward on the CPU, Cortado against
# PyTorch, in one run, for ResNet-50 (batch 8), GoogLeNet (batch 16) and AlexNet (batch 16).
#
# The nets come from their deploy prototxts, the one copy of each topology
# (models/resnet/ResNet-50-deploy.prototxt, models/imagenet/{googlenet,alexnet}/deploy.prototxt):
# scripts/bench/make_train_net.py makes each a training net (a constant DummyData batch, weight
# fillers where the deploy net has none, BatchNorm on batch statistics, SoftmaxWithLoss), which
# Cortado times with `trainer time --phase=TRAIN` ("Average Forward-Backward: X ms.", after one
# untimed forward + backward). pytorch_memory.py has the same nets in plain torch.nn and times the same
# step (zero the gradients, forward, CrossEntropyLoss, backward; one untimed first).
#
# Peak memory is the whole process's peak resident set (the kernel's maxrss for the process, as
# `/usr/bin/time -f %M` reports it), each net on each side in its own process so peaks do not mix;
# PyTorch's includes the interpreter and libtorch, Cortado's its libraries: the last line gives each
# side's start-up (PyTorch resident before the model; the trainer's peak on a one-blob net).
# Threads: OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=$THREADS on both sides, and torch.set_num_threads.
#
# Usage: scripts/bench/memory.sh        (no arguments; --help prints this)
# Environment: THREADS (default 2), ITERS (timed iterations, default 5), NETS (default
#   "resnet50 googlenet alexnet"), BUILD (default 1; 0 uses the trainer in the build folder as it is,
#   without configuring or building), CORTADO_BUILD_DIR (default build/).
# Logs and the generated nets: build/bench_memory/. About 40 s on 2 idle cores with ITERS=5 (and far
# longer on busy ones: PyTorch's OpenMP threads slow down badly when they share the cores).
# The exit status is 0 when every run finished (the targets in the last lines are information).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
settings_from_environment "THREADS, ITERS, NETS" "$@"
cd "$REPO_ROOT"

THREADS="${THREADS:-2}"
ITERS="${ITERS:-5}"
NETS="${NETS:-resnet50 googlenet alexnet}"
BUILD="${BUILD:-1}"
[[ "$THREADS" =~ ^[1-9][0-9]*$ ]] || die "THREADS must be a positive integer"
[[ "$ITERS" =~ ^[1-9][0-9]*$ ]] || die "ITERS must be a positive integer"

net_spec() {  # net_spec NET -> "DEPLOY BATCH"
  case "$1" in
    resnet50) echo "models/resnet/ResNet-50-deploy.prototxt 8" ;;
    googlenet) echo "models/imagenet/googlenet/deploy.prototxt 16" ;;
    alexnet) echo "models/imagenet/alexnet/deploy.prototxt 16" ;;
    *) return 1 ;;
  esac
}
for net in $NETS; do
  net_spec "$net" >/dev/null || die "unknown net '$net' in NETS (resnet50, googlenet, alexnet)"
done

"$PYTHON" -c 'import torch' 2>/dev/null || die "$PYTHON lacks torch: run scripts/install_deps.sh"

# ---- build ------------------------------------------------------------------------------------
bench_trainer

work="$BUILD_DIR/bench_memory"
mkdir -p "$work"

# Runs CMD and writes its peak resident set in KiB to PEAKFILE: the ru_maxrss that wait4 returns for
# the child (what /usr/bin/time -f %M prints, without needing the `time` package).
peak_of() {  # peak_of PEAKFILE CMD...
  "$PYTHON" -c '
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as e:
        print(f"cannot run {sys.argv[2]}: {e}", file=sys.stderr)
    os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{usage.ru_maxrss}\n")
sys.exit(os.waitstatus_to_exitcode(status))' "$@"
}

# ---- the runs ---------------------------------------------------------------------------------
busy=$(other_load)
if ((busy > 10)); then
  log "warning: the CPU was ${busy}% busy before the run; the timings below are not trustworthy"
fi
failed=0
rows=()
verdicts=()
notes=()

# Cortado's start-up cost: the peak of `trainer time` on a net of one blob (the libraries loaded and
# initialised, no layers worth the name), to set beside PyTorch's resident set before its model.
tiny="$work/baseline.prototxt"
cat >"$tiny" <<'NET'
name: "baseline"
layer { name: "data" type: "DummyData" top: "data" dummy_data_param { shape { dim: 1 dim: 1 } } }
layer { name: "sink" type: "Silence" bottom: "data" }
NET
c_base=""
if OPENBLAS_NUM_THREADS="$THREADS" OMP_NUM_THREADS="$THREADS" GLOG_logtostderr=1 \
   peak_of "$work/baseline_cortado.peak" "$trainer" time --model="$tiny" --phase=TRAIN --iterations=1 \
     >"$work/baseline_cortado.log" 2>&1; then
  c_base=$(cat "$work/baseline_cortado.peak")
else
  log "warning: the trainer failed on a one-blob net; see $work/baseline_cortado.log"
fi
p_base_all=""
for net in $NETS; do
  read -r deploy batch < <(net_spec "$net")
  before=$(cpu_sample)

  model="$work/${net}_train_b$batch.prototxt"
  "$PYTHON" scripts/bench/make_train_net.py "$deploy" "$batch" "$model" 2>"$work/${net}_generate.log" ||
    { cat "$work/${net}_generate.log" >&2; die "could not make the training net of $deploy"; }

  # Cortado
  clog="$work/${net}_cortado.log"
  log "$net, batch $batch: Cortado, $ITERS iterations, $THREADS threads (log: $clog)"
  c_ms="" c_kib=""
  if OPENBLAS_NUM_THREADS="$THREADS" OMP_NUM_THREADS="$THREADS" GLOG_logtostderr=1 \
     peak_of "$work/${net}_cortado.peak" "$trainer" time --model="$model" --phase=TRAIN \
       --iterations="$ITERS" >"$clog" 2>&1; then
    c_ms=$(sed -nE 's/.*Average Forward-Backward: ([-+0-9.eE]+) ms\..*/\1/p' "$clog" | tail -n 1)
    c_kib=$(cat "$work/${net}_cortado.peak")
  fi
  if [[ -z "$c_ms" || -z "$c_kib" ]]; then
    tail -n 10 "$clog" >&2
    log "error: Cortado failed on $net; see $clog"
    failed=1
    c_ms="" c_kib=""
  else
    c_loss=$(sed -nE 's/.*Initial loss: ([-+0-9.eE]+).*/\1/p' "$clog" | tail -n 1)
    echo "$net batch $batch: Cortado $(printf '%.1f' "$c_ms") ms per forward+backward, peak" \
         "$(awk -v k="$c_kib" 'BEGIN { printf "%.1f", k / 1024 }') MiB, initial loss $c_loss"
    # The trainer's own account of its memory, where it logs one.
    sed -nE 's/.*\] (Memory plan.*)/  \1/p' "$clog" | head -n 1
  fi

  # PyTorch
  plog="$work/${net}_pytorch.log"
  log "$net, batch $batch: PyTorch, $ITERS iterations, $THREADS threads (log: $plog)"
  p_ms="" p_kib=""
  if OPENBLAS_NUM_THREADS="$THREADS" OMP_NUM_THREADS="$THREADS" \
     peak_of "$work/${net}_pytorch.peak" "$PYTHON" scripts/bench/pytorch_memory.py --net "$net" \
       --batch "$batch" --iters "$ITERS" --threads "$THREADS" >"$plog" 2>&1; then
    result=$(grep '^RESULT ' "$plog" | tail -n 1 || true)
    p_ms=$(sed -nE 's/.* ms_per_iter=([^ ]+).*/\1/p' <<<"$result")
    p_kib=$(cat "$work/${net}_pytorch.peak")
  fi
  if [[ -z "$p_ms" || -z "$p_kib" ]]; then
    tail -n 10 "$plog" >&2
    log "error: PyTorch failed on $net; see $plog"
    failed=1
    p_ms="" p_kib=""
  else
    p_base=$(sed -nE 's/.* base_rss_kib=([0-9]+).*/\1/p' <<<"$result")
    p_base_all="$p_base"
    p_loss=$(sed -nE 's/.* loss=([^ ]+).*/\1/p' <<<"$result")
    echo "$net batch $batch: PyTorch $(printf '%.1f' "$p_ms") ms per forward+backward, peak" \
         "$(awk -v k="$p_kib" 'BEGIN { printf "%.1f", k / 1024 }') MiB" \
         "($(awk -v k="$p_base" 'BEGIN { printf "%.1f", k / 1024 }') MiB before the model), last loss $p_loss"
  fi

  share=$(other_share "$before" "$(cpu_sample)")
  if ((share > 10)); then
    log "warning: other work took ${share}% of the CPU during $net's runs; its timings are not trustworthy"
    notes+=("$net: other work took ${share}% of the CPU during its runs")
  fi

  rows+=("$(awk -v n="$net" -v b="$batch" -v ck="$c_kib" -v pk="$p_kib" -v cm="$c_ms" -v pm="$p_ms" '
    function num(v, f) { return v == "" ? "-" : sprintf(f, v) }
    function ratio(a, b) { return (a == "" || b == "" || b + 0 <= 0) ? "-" : sprintf("%.2fx", a / b) }
    BEGIN {
      printf "%-10s %5d %12s %12s %10s %12s %12s %11s", n, b,
             num(ck == "" ? "" : ck / 1024, "%.1f"), num(pk == "" ? "" : pk / 1024, "%.1f"), ratio(ck, pk),
             num(cm, "%.1f"), num(pm, "%.1f"), ratio(pm, cm)
    }')")
  if [[ -n "$c_kib" && -n "$p_kib" ]]; then
    verdicts+=("$(awk -v n="$net" -v c="$c_kib" -v p="$p_kib" 'BEGIN {
      printf "%s: Cortado peak %.1f MiB <= PyTorch %.1f MiB: %s; <= 0.6x PyTorch (%.1f MiB, the goal beyond): %s",
             n, c / 1024, p / 1024, (c <= p) ? "yes" : "NO", 0.6 * p / 1024, (c <= 0.6 * p) ? "yes" : "NO" }')")
  else
    verdicts+=("$net: not measured (a run failed)")
  fi
done

# ---- summary ----------------------------------------------------------------------------------
echo
echo "CPU training forward+backward, $THREADS threads, $ITERS timed iterations; peak resident memory of the whole process"
printf '%-10s %5s %12s %12s %10s %12s %12s %11s\n' net batch "Cortado MiB" "PyTorch MiB" "peak C/P" \
       "Cortado ms" "PyTorch ms" "speed P/C"
printf '%s\n' "${rows[@]}"
echo
printf '%s\n' "${verdicts[@]}"
awk -v c="$c_base" -v p="$p_base_all" 'BEGIN {
  printf "Start-up, in every peak above: Cortado %s (trainer time on a one-blob net, peak), PyTorch %s (after import torch, before the model)\n",
         c == "" ? "-" : sprintf("%.1f MiB", c / 1024), p == "" ? "-" : sprintf("%.1f MiB", p / 1024) }'
if ((busy > 10)) || ((${#notes[@]} > 0)); then
  ((busy > 10)) && notes=("before the runs: the CPU was ${busy}% busy" "${notes[@]}")
  joined=$(printf '%s; ' "${notes[@]}")
  echo "(the times are not trustworthy, rerun on an idle machine: ${joined%; })"
fi
exit "$failed"
