#!/usr/bin/env bash
# versions.sh — CPU training speed of this build against another build of Cortado (a previous
# version), in one run: the forward + backward time (`trainer time --phase=TRAIN`, "Average
# Forward-Backward") of LeNet (batch 64), cifar10_quick (100), GoogLeNet (8) and ResNet-50 (8), the
# training nets scripts/bench/make_train_net.py makes from their deploy prototxts (as cpu_nets.sh).
# The two builds run alternately, ROUNDS times each, and the lower time of each is kept; the table
# gives both and their ratio (other ms / this ms: above 1, this build is faster). A warning is printed
# when other work kept the CPU busy before the runs.
#
# Usage: scripts/bench/versions.sh OTHER_TRAINER
#   OTHER_TRAINER: the other build's trainer, e.g. an older commit built in its own checkout:
#     git worktree add /tmp/old <commit> && (cd /tmp/old && cmake -S . -B build && make -C build trainer)
#     scripts/bench/versions.sh /tmp/old/build/tools/trainer
# Environment: THREADS (default 2), ROUNDS (default 3), SMALL_ITERS (LeNet and cifar10_quick, default 50),
#   ITERS (GoogLeNet and ResNet-50, default 5), NETS (default "lenet cifar10_quick googlenet resnet50"),
#   CORTADO_BUILD_DIR (this build, default build/), TRAINER_FLAGS (extra flags for both, e.g.
#   --precision=bf16 to compare a mode both builds have).
# Logs, generated nets and table.txt: build/bench_versions/.
set -euo pipefail
# shellcheck source=scripts/common.sh disable=SC1091
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
cd "$REPO_ROOT"

(($# == 1)) || die "usage: scripts/bench/versions.sh OTHER_TRAINER"
other=$1
[[ -x $other ]] || die "$other is not an executable trainer"
this="$BUILD_DIR/tools/trainer"
[[ -x $this ]] || die "$this is not built (cmake --build $BUILD_DIR --target trainer)"
THREADS="${THREADS:-2}" ROUNDS="${ROUNDS:-3}" SMALL_ITERS="${SMALL_ITERS:-50}" ITERS="${ITERS:-5}"
NETS="${NETS-lenet cifar10_quick googlenet resnet50}"
for var in THREADS ROUNDS SMALL_ITERS ITERS; do
  [[ "${!var}" =~ ^[1-9][0-9]*$ ]] || die "$var must be a positive integer, not '${!var}'"
done
read -r -a extra <<<"${TRAINER_FLAGS:-}"
work="$BUILD_DIR/bench_versions"
mkdir -p "$work"

net_spec() {  # net_spec NET -> "deploy batch iterations"
  case $1 in
    lenet) echo "models/mnist/lenet.prototxt 64 $SMALL_ITERS" ;;
    cifar10_quick) echo "models/cifar10/cifar10_quick.prototxt 100 $SMALL_ITERS" ;;
    googlenet) echo "models/imagenet/googlenet/deploy.prototxt 8 $ITERS" ;;
    resnet50) echo "models/resnet/ResNet-50-deploy.prototxt 8 $ITERS" ;;
    *) die "unknown net '$1' in NETS (lenet cifar10_quick googlenet resnet50)" ;;
  esac
}
for net in $NETS; do
  net_spec "$net" >/dev/null  # dies on an unknown name before anything runs
done

fwdbwd() {  # fwdbwd TRAINER MODEL ITERATIONS LOG -> the average forward + backward ms
  env OMP_NUM_THREADS="$THREADS" GLOG_logtostderr=1 "$1" time --model="$2" --phase=TRAIN --iterations="$3" \
    "${extra[@]}" >"$4" 2>&1 || { tail -n 5 "$4" >&2; die "$1 failed on $2; see $4"; }
  sed -nE 's/.*Average Forward-Backward: ([-+0-9.eE]+) ms\..*/\1/p' "$4" | tail -n 1
}

lower() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }

busy=$(other_load)
((busy <= 10)) || log "warning: the CPU was ${busy}% busy before the run; the timings below are not trustworthy"
log "this build: $this; the other: $other; $THREADS threads; $ROUNDS rounds${TRAINER_FLAGS:+; flags $TRAINER_FLAGS}"
table="$work/table.txt"
printf '%-14s %5s %12s %12s %9s\n' net batch "other ms" "this ms" "other/this" >"$table"
for net in $NETS; do
  read -r deploy batch iters < <(net_spec "$net")
  model="$work/${net}_train_b$batch.prototxt"
  "$PYTHON" scripts/bench/make_train_net.py "$deploy" "$batch" "$model" 2>"$work/${net}_generate.log" ||
    die "could not make the training net of $deploy; see $work/${net}_generate.log"
  best_other='' best_this=''
  for ((round = 1; round <= ROUNDS; ++round)); do
    best_other=$(lower "$best_other" "$(fwdbwd "$other" "$model" "$iters" "$work/${net}_other_$round.log")")
    best_this=$(lower "$best_this" "$(fwdbwd "$this" "$model" "$iters" "$work/${net}_this_$round.log")")
  done
  awk -v n="$net" -v b="$batch" -v o="$best_other" -v t="$best_this" \
    'BEGIN { printf "%-14s %5d %12.2f %12.2f %8.3fx\n", n, b, o, t, o / t }' >>"$table"
  log "result: $(tail -n 1 "$table")"
done
cat "$table"
