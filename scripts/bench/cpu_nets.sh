#!/usr/bin/env bash
# cpu_nets.sh — CPU training speed of five Caffe nets, Cortado against PyTorch, in one run: the time
# of one training forward + backward for LeNet (batch 64), cifar10_quick (100), AlexNet (16),
# GoogLeNet (16) and ResNet-50 (8), and of one whole training step (forward, backward, SGD momentum
# update) for LeNet and cifar10_quick. Same threads and batch on both sides.
#
# The nets come from their deploy prototxts (models/mnist/lenet.prototxt,
# models/cifar10/cifar10_quick.prototxt, models/imagenet/{alexnet,googlenet}/deploy.prototxt,
# models/resnet/ResNet-50-deploy.prototxt): scripts/bench/make_train_net.py makes each a training net
# (a constant DummyData batch, data 0.5 and label 0, weight fillers where the deploy net has none,
# BatchNorm on batch statistics, SoftmaxWithLoss). pytorch_cpu_nets.py runs the same nets in plain
# torch.nn (the classes of pytorch_lenet.py, pytorch_reference.py and pytorch_memory.py) on the same
# constant batch.
#   - forward + backward: Cortado's `trainer time --phase=TRAIN` ("Average Forward-Backward: X ms.",
#     after one untimed forward + backward); PyTorch: one untimed step, then the mean of the timed
#     steps of zero the gradients (kept allocated), forward, CrossEntropyLoss, backward.
#   - training step: Cortado's `trainer train` on a solver written here (base_lr 0.01, weight_decay
#     5e-4 for LeNet; 0.001, 4e-3 for cifar10_quick; momentum 0.9, lr policy fixed, no snapshots;
#     display every $WINDOW steps): the median of the display lines' "Ys/$WINDOW iters" after
#     $WARMUP untimed steps. PyTorch: the same step plus optimizer.step() (SGD, the same settings,
#     biases at twice the lr), $WARMUP untimed steps, then the median over windows of $WINDOW steps.
# Each pair runs alternately, Cortado, PyTorch, Cortado, PyTorch, and the lower of each side's two
# times is kept. Threads: OMP_NUM_THREADS=$THREADS on both sides and torch.set_num_threads; the
# OPENBLAS_* variables are passed through as they are (neither set nor unset).
#
# Output: a table (also build/bench_cpu_nets/table.txt) of row, batch, Cortado ms, PyTorch ms, ratio
# PyTorch ms / Cortado ms (above 1: Cortado faster) and "engines", the engines Cortado chose per layer
# kind (the trainer's "<LayerType> engines: <name> <count>, ..." log lines; "-" where it logs none).
# A warning is printed when other work kept the CPU busy before or during the runs.
#
# Usage: scripts/bench/cpu_nets.sh        (no arguments; --help prints this)
# Environment: THREADS (default 2); ITERS (timed forward + backward iterations of AlexNet, GoogLeNet
#   and ResNet-50, default 5); SMALL_ITERS (the same for LeNet and cifar10_quick, default 50);
#   TRAIN_ITERS (timed training steps, a multiple of WINDOW, default 100); WARMUP (untimed training
#   steps first, a multiple of WINDOW, default 20); WINDOW (training steps per timed window, default
#   20); NETS (default "lenet cifar10_quick alexnet googlenet resnet50"); TRAIN_NETS (default "lenet
#   cifar10_quick"; those two only; "" for none); BUILD (default 1; 0 uses the trainer in the build
#   folder as it is, without configuring or building); CORTADO_BUILD_DIR (default build/).
# Needs: the Debian packages of scripts/install_deps.sh (python3-torch for /usr/bin/python3); no
#   dataset. Logs, generated nets and solvers, table.txt: build/bench_cpu_nets/. About 4 minutes on 2
#   idle cores with the defaults (far longer on busy ones: PyTorch's OpenMP threads suffer most).
# The exit status is 0 when every run finished; a failed run stops the script with an error naming
#   its log.
set -euo pipefail
# shellcheck source=scripts/common.sh disable=SC1091  # followed with shellcheck -x
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
settings_from_environment "THREADS, ITERS, NETS and the others" "$@"
cd "$REPO_ROOT"

THREADS="${THREADS:-2}"
ITERS="${ITERS:-5}"
SMALL_ITERS="${SMALL_ITERS:-50}"
TRAIN_ITERS="${TRAIN_ITERS:-100}"
WARMUP="${WARMUP:-20}"
WINDOW="${WINDOW:-20}"
NETS="${NETS-lenet cifar10_quick alexnet googlenet resnet50}"
TRAIN_NETS="${TRAIN_NETS-lenet cifar10_quick}"
BUILD="${BUILD:-1}"
for var in THREADS ITERS SMALL_ITERS TRAIN_ITERS WINDOW; do
  [[ "${!var}" =~ ^[1-9][0-9]*$ ]] || die "$var must be a positive integer"
done
[[ "$WARMUP" =~ ^[0-9]+$ ]] || die "WARMUP must be a non-negative integer"
((TRAIN_ITERS % WINDOW == 0 && WARMUP % WINDOW == 0)) ||
  die "TRAIN_ITERS ($TRAIN_ITERS) and WARMUP ($WARMUP) must be multiples of WINDOW ($WINDOW)"

net_spec() {  # net_spec NET -> "DEPLOY BATCH"
  case "$1" in
    lenet) echo "models/mnist/lenet.prototxt 64" ;;
    cifar10_quick) echo "models/cifar10/cifar10_quick.prototxt 100" ;;
    alexnet) echo "models/imagenet/alexnet/deploy.prototxt 16" ;;
    googlenet) echo "models/imagenet/googlenet/deploy.prototxt 16" ;;
    resnet50) echo "models/resnet/ResNet-50-deploy.prototxt 8" ;;
    *) return 1 ;;
  esac
}
solver_spec() {  # solver_spec NET -> "BASE_LR WEIGHT_DECAY" (its Caffe solver's)
  case "$1" in
    lenet) echo "0.01 0.0005" ;;
    cifar10_quick) echo "0.001 0.004" ;;
    *) return 1 ;;
  esac
}
for net in $NETS; do
  net_spec "$net" >/dev/null ||
    die "unknown net '$net' in NETS (lenet, cifar10_quick, alexnet, googlenet, resnet50)"
done
for net in $TRAIN_NETS; do
  solver_spec "$net" >/dev/null || die "unknown net '$net' in TRAIN_NETS (lenet, cifar10_quick)"
done
[[ -n "${NETS// /}${TRAIN_NETS// /}" ]] || die "NETS and TRAIN_NETS are both empty: nothing to run"

"$PYTHON" -c 'import torch' 2>/dev/null || die "$PYTHON lacks torch: run scripts/install_deps.sh"

# ---- build ------------------------------------------------------------------------------------
bench_trainer

work="$BUILD_DIR/bench_cpu_nets"
mkdir -p "$work"

# The lower of two times (either may be empty).
best_of() {  # best_of A B
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "") print b; else if (b == "" || a + 0 <= b + 0) print a; else print b }'
}

# The trainer's "<LayerType> engines: <name> <count>, <name> <count>" lines of LOG, one net's after
# another's in the order logged, each once: "Convolution onednn 50 im2col 3; Pooling ...", or "-".
engines_of() {  # engines_of LOG
  local e
  e=$(sed -nE 's/.*\] ([A-Za-z0-9_]+) engines: (.*)$/\1 \2/p' "$1" | tr -d ',' | tr -s ' ' |
      awk '!seen[$0]++' | paste -sd ';' - | sed 's/;/; /g')
  echo "${e:--}"
}

# Runs CMD with its output in LOG; on failure shows the log's end and stops with an error naming it.
run_logged() {  # run_logged WHAT LOG CMD...
  local what="$1" logfile="$2"
  shift 2
  if ! "$@" >"$logfile" 2>&1; then
    tail -n 8 "$logfile" >&2
    die "$what failed; see $logfile"
  fi
}

# One Cortado forward + backward run of MODEL: prints the average ms.
cortado_fwdbwd() {  # cortado_fwdbwd MODEL ITERATIONS LOG
  run_logged "Cortado (trainer time on $1)" "$3" \
    env OMP_NUM_THREADS="$THREADS" GLOG_logtostderr=1 "$trainer" time --model="$1" --phase=TRAIN \
      --iterations="$2"
  local ms
  ms=$(sed -nE 's/.*Average Forward-Backward: ([-+0-9.eE]+) ms\..*/\1/p' "$3" | tail -n 1)
  [[ -n "$ms" ]] || die "no 'Average Forward-Backward' line in $3"
  echo "$ms"
}

median() {  # the median of the numbers on stdin, one per line
  sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1
                   print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# One Cortado training run of SOLVER: prints the median ms per step over the display windows after
# the warm-up. "Iteration 60 (105.9 iter/s, 0.1887s/20 iters), loss = L" is printed before step 60
# and covers steps 40..59; iteration 0's covers the set-up only. max_iter is one more than the last
# step timed, so that the display before it (which times the last window) is printed.
cortado_train() {  # cortado_train SOLVER LOG
  run_logged "Cortado (trainer train --solver=$1)" "$2" \
    env OMP_NUM_THREADS="$THREADS" GLOG_logtostderr=1 "$trainer" train --solver="$1"
  local windows
  windows=$(sed -nE 's/.*Iteration ([0-9]+) \([^,]*, ([-+0-9.eE]+)s\/([0-9]+) iters\), loss = .*/\1 \2 \3/p' "$2" |
            awk -v warmup="$WARMUP" '$1 > 0 && $1 - $3 >= warmup && $3 > 0 { printf "%.6f\n", $2 * 1000 / $3 }')
  [[ -n "$windows" ]] || die "no timed display lines after the warm-up in $2"
  local n
  n=$(wc -l <<<"$windows")
  ((n == TRAIN_ITERS / WINDOW)) ||
    log "warning: $n timed windows of $WINDOW steps in $2, expected $((TRAIN_ITERS / WINDOW))"
  median <<<"$windows"
}

# One PyTorch run: prints its ms per step.
pytorch_run() {  # pytorch_run LOG ARGS...
  local logfile="$1"
  shift
  run_logged "PyTorch (pytorch_cpu_nets.py $*)" "$logfile" \
    env OMP_NUM_THREADS="$THREADS" "$PYTHON" scripts/bench/pytorch_cpu_nets.py --threads "$THREADS" "$@"
  local ms
  ms=$(grep '^RESULT ' "$logfile" | tail -n 1 | sed -nE 's/.* ms_per_iter=([^ ]+).*/\1/p')
  [[ -n "$ms" ]] || die "no RESULT line in $logfile"
  echo "$ms"
}

make_net() {  # make_net NET -> the training net's path (made if missing or older than its sources)
  local deploy batch model
  read -r deploy batch < <(net_spec "$1")
  model="$work/${1}_train_b$batch.prototxt"
  if [[ ! -s "$model" || "$model" -ot "$deploy" || "$model" -ot scripts/bench/make_train_net.py ]]; then
    "$PYTHON" scripts/bench/make_train_net.py "$deploy" "$batch" "$model" 2>"$work/${1}_generate.log" ||
      { cat "$work/${1}_generate.log" >&2; die "could not make the training net of $deploy; see $work/${1}_generate.log"; }
  fi
  echo "$model"
}

# ---- the runs ---------------------------------------------------------------------------------
busy=$(other_load)
read -r load1 _ </proc/loadavg
if ((busy > 10)); then
  log "warning: the CPU was ${busy}% busy before the run (load average $load1 over the last minute); the timings below are not trustworthy"
fi
torch_version=$("$PYTHON" -c 'import torch; print(torch.__version__)')
log "Cortado: $trainer; PyTorch $torch_version ($PYTHON); $THREADS threads (OMP_NUM_THREADS);" \
    "OPENBLAS_NUM_THREADS ${OPENBLAS_NUM_THREADS-unset}"
rows=()
notes=()

add_row() {  # add_row NAME BATCH CORTADO_MS PYTORCH_MS ENGINES
  rows+=("$(awk -v n="$1" -v b="$2" -v c="$3" -v p="$4" -v e="$5" 'BEGIN {
    printf "%-21s %5d %11.2f %11.2f %7s  %s", n, b, c, p, (c > 0 ? sprintf("%.2fx", p / c) : "-"), e }')")
  log "result: ${rows[-1]}"
}
check_share() {  # check_share NAME "SAMPLE_BEFORE"
  local share
  share=$(other_share "$2" "$(cpu_sample)")
  if ((share > 10)); then
    log "warning: other work took ${share}% of the CPU during $1's runs; its timings are not trustworthy"
    notes+=("$1: other work took ${share}% of the CPU during its runs")
  fi
}

for net in $NETS; do
  read -r _ batch < <(net_spec "$net")
  iters="$ITERS"
  [[ "$net" == lenet || "$net" == cifar10_quick ]] && iters="$SMALL_ITERS"
  model=$(make_net "$net")
  before=$(cpu_sample)
  c_best="" p_best="" c_log=""
  for round in 1 2; do
    clog="$work/${net}_fwdbwd_cortado_$round.log"
    log "$net fwd+bwd, batch $batch, round $round: Cortado, $iters iterations (log: $clog)"
    c_ms=$(cortado_fwdbwd "$model" "$iters" "$clog")
    if [[ "$(best_of "$c_best" "$c_ms")" == "$c_ms" ]]; then
      c_best="$c_ms" c_log="$clog"
    fi
    plog="$work/${net}_fwdbwd_pytorch_$round.log"
    log "$net fwd+bwd, batch $batch, round $round: PyTorch, $iters iterations (log: $plog)"
    p_ms=$(pytorch_run "$plog" --net "$net" --batch "$batch" --mode fwdbwd --iters "$iters")
    p_best=$(best_of "$p_best" "$p_ms")
  done
  add_row "$net fwd+bwd" "$batch" "$c_best" "$p_best" "$(engines_of "$c_log")"
  check_share "$net fwd+bwd" "$before"
done

for net in $TRAIN_NETS; do
  read -r _ batch < <(net_spec "$net")
  read -r base_lr decay < <(solver_spec "$net")
  model=$(make_net "$net")
  solver="$work/${net}_solver.prototxt"
  cat >"$solver" <<EOF
# Generated by scripts/bench/cpu_nets.sh: training steps of $net on a constant DummyData batch.
net: "$model"
base_lr: $base_lr
momentum: 0.9
weight_decay: $decay
lr_policy: "fixed"
display: $WINDOW
max_iter: $((WARMUP + TRAIN_ITERS + 1))
snapshot: 0
snapshot_after_train: false
snapshot_prefix: "$work/${net}_train"
solver_mode: CPU
EOF
  before=$(cpu_sample)
  c_best="" p_best="" c_log=""
  for round in 1 2; do
    clog="$work/${net}_train_cortado_$round.log"
    log "$net training, batch $batch, round $round: Cortado, $WARMUP + $TRAIN_ITERS steps (log: $clog)"
    c_ms=$(cortado_train "$solver" "$clog")
    if [[ "$(best_of "$c_best" "$c_ms")" == "$c_ms" ]]; then
      c_best="$c_ms" c_log="$clog"
    fi
    plog="$work/${net}_train_pytorch_$round.log"
    log "$net training, batch $batch, round $round: PyTorch, $WARMUP + $TRAIN_ITERS steps (log: $plog)"
    p_ms=$(pytorch_run "$plog" --net "$net" --batch "$batch" --mode train --iters "$TRAIN_ITERS" \
             --warmup "$WARMUP" --window "$WINDOW")
    p_best=$(best_of "$p_best" "$p_ms")
  done
  add_row "$net train" "$batch" "$c_best" "$p_best" "$(engines_of "$c_log")"
  check_share "$net training" "$before"
done

# ---- summary ----------------------------------------------------------------------------------
{
  echo "CPU training, $THREADS threads, Cortado against PyTorch $torch_version, the best of 2 runs per side;" \
       "ratio PyTorch ms / Cortado ms (above 1: Cortado faster)"
  echo "fwd+bwd: mean of $SMALL_ITERS (lenet, cifar10_quick) or $ITERS iterations; train (with the SGD" \
       "update): median of windows of $WINDOW steps over $TRAIN_ITERS, after $WARMUP untimed"
  printf '%-21s %5s %11s %11s %7s  %s\n' row batch "Cortado ms" "PyTorch ms" ratio engines
  printf '%s\n' "${rows[@]}"
  if ((busy > 10)) || ((${#notes[@]} > 0)); then
    if ((busy > 10)); then
      notes=("before the runs: the CPU was ${busy}% busy (load average $load1)" "${notes[@]}")
    fi
    joined=$(printf '%s; ' "${notes[@]}")
    echo "(warning: the times are not trustworthy, rerun on an idle machine: ${joined%; })"
  fi
} >"$work/table.txt"
echo
cat "$work/table.txt"
log "table saved to $work/table.txt"
