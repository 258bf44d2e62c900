#!/usr/bin/env bash
# gpu.sh — the GPU half of scripts/gpu_check.sh (which runs it; this file holds the stages). With
# .gpu/bundle.tar.gz (scripts/bench/gpu_bundle.sh) unpacked to /tmp/cortado_bundle, the data prepared
# (MNIST's LMDB converted from the bundled IDX files, the bundled CIFAR-shaped LMDB) and the cuDNN,
# cuBLAS and CUDA runtime that Cortado loads named with their versions (cuda_libraries.py), in order:
#   small      Caffe's LeNet (10,000 iterations, batch 64, the MNIST LMDB through the prefetcher) and
#              cifar10_quick (5,000, batch 100): Cortado with its steps replayed as CUDA graphs (the
#              default) and eagerly (--cuda_graph=false), beside PyTorch (pytorch_reference.py, data
#              already on the GPU, cudnn.benchmark on) eager and with the whole step as one CUDA
#              graph; training seconds from the first iteration to the last (start-up excluded)
#   resnet     ResNet-50 training throughput (images/s) at batch 128 (RESNET_BATCHES), TF32 and
#              FP32: Cortado (models/resnet/make_train_bench.sh: Gaussian images and valid labels
#              drawn once, on the GPU; FP32 is --strict_fp32; the median display interval after the
#              first, which holds the warm-up) beside PyTorch eager (plain torch.nn ResNet-50 on the
#              same kind of batch, 10 warm-up then 30 timed steps)
#   mixed      ResNet-50 at batch 256 (MIXED_BATCH) in bf16 and in fp16, NHWC: Cortado (--precision,
#              --layout=nhwc; fp16 scales its loss dynamically) beside PyTorch with autocast and
#              channels_last (fp16 with a GradScaler), as resnet's rows are measured; with the peak
#              GPU memory of each
#   layers     trainer time on that ResNet-50 at batch 128, layer by layer on the GPU (--output: a
#              CSV): the 15 layers with the most forward + backward time, and the time by layer type
#   tests      the GPU test suite, cortado_tests --gtest_filter='*Gpu*:*GPU*': passed, failed (named)
#              and skipped tests
#   bandwidth  the memory-bound steps (ReLU, Scale and BatchNorm forward, the SGD update) over 256 MiB
#              against a device-to-device copy in the same run (tests/gpu/bandwidth_bench_test.cpp)
#   sanitizer  compute-sanitizer memcheck over the GPU layer tests ($SANITIZER_FILTER) and racecheck
#              over those with shared-memory reductions ($RACECHECK_FILTER)
# and ends with one table: a row per run with Cortado's and PyTorch's figures, the speed-up, the peak
# GPU memory of each process (nvidia-smi sampled every 50 ms, above the idle level) and the targets
# with PASS/FAIL, then the layer table. `quick` runs only the headline rows: LeNet and cifar10_quick
# with CUDA graphs and ResNet-50 at batch 128 in TF32 and FP32, each in Cortado and PyTorch.
#
# Output: two files in $OUT (default build-gpu-bench/), rewritten after every stage so an interrupted
# run still leaves them: summary.txt (the libraries, each stage's seconds, notes such as the line a
# failed run ended with, the table, the layer table) and logs.tar.gz (logs/: every command's log, the
# results, the generated solvers and nets, the layer CSV). Work files: $GPU_CHECK_WORK (default
# /tmp/cortado_gpu_check).
#
# Time: every command runs under `timeout` with its own budget (below; one past it is killed and
# shows as TIMEOUT, and the rest still runs), and a deadline DEADLINE_S after the start (default 400 s,
# quick 170 s) caps those budgets, so a run ends within 7 minutes (quick: 3) with its own set-up.
#
# Usage (GPU machine, repository root; normally through `scripts/gpu_check.sh run`):
#   scripts/bench/gpu.sh [--dry-run] [quick | STAGE...] [--cudnn DIR]
#       default stages: small resnet mixed layers tests bandwidth sanitizer (the measurements first; the
#       deadline cuts the last ones)
#   --dry-run    prints the commands of each stage with their budgets; runs nothing (any machine)
#   --cudnn DIR  Cortado loads the cuDNN in DIR: DIR comes first on its LD_LIBRARY_PATH. `pytorch`
#                names the folder of the cuDNN PyTorch loads (cuda_libraries.py --torch-cudnn-dir)
# Cortado's programs run with LD_LIBRARY_PATH=[DIR:]/tmp/cortado_bundle/lib:/usr/local/cuda/lib64 and
# the caller's; PyTorch runs in the caller's environment unchanged, so it loads its own libraries.
# Environment: OUT, GPU_CHECK_WORK, BUNDLE (default .gpu/bundle.tar.gz), DEADLINE_S, LENET_ITERS,
#   CIFAR_ITERS, RESNET_ITERS (Cortado's, default 40), RESNET_BATCHES (default "128"; e.g. "128 64"),
#   MIXED_BATCH (default 256),
#   LAYER_ITERS (default 10), SANITIZER_FILTER, RACECHECK_FILTER, CORTADO_FLAGS (extra trainer
#   flags), PYTHON (default python3).
# Exit status: 0 when every target of the stages run passed, 1 when one failed, 2 on bad usage or a
# set-up that could not be done.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

usage_error() { echo "gpu.sh: $*" >&2; exit 2; }
DRY_RUN=0 QUICK=0 CUDNN_DIR='' stages=()
while (($#)); do
  case $1 in
    --dry-run) DRY_RUN=1 ;;
    quick) QUICK=1 ;;
    --cudnn) (($# >= 2)) || usage_error "--cudnn needs a folder (or 'pytorch')"; CUDNN_DIR=$2; shift ;;
    --cudnn=*) CUDNN_DIR=${1#--cudnn=} ;;
    small | resnet | mixed | layers | tests | bandwidth | sanitizer) stages+=("$1") ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "$0"; exit 0 ;;
    *) usage_error "unknown argument '$1' (quick; stages: small resnet mixed layers tests bandwidth sanitizer;" \
                   "--cudnn DIR; --dry-run)" ;;
  esac
  shift
done
if ((QUICK)); then
  ((${#stages[@]} == 0)) || usage_error "quick runs its own rows; name no stage with it"
  stages=(small resnet)
fi
((${#stages[@]})) || stages=(small resnet mixed layers tests bandwidth sanitizer)

BUNDLE="${BUNDLE:-.gpu/bundle.tar.gz}"
LENET_ITERS="${LENET_ITERS:-10000}"
CIFAR_ITERS="${CIFAR_ITERS:-5000}"
RESNET_ITERS="${RESNET_ITERS:-40}"
RESNET_BATCHES="${RESNET_BATCHES:-128}"
((QUICK)) && RESNET_BATCHES=128
LAYER_BATCH=128
MIXED_BATCH="${MIXED_BATCH:-256}"
LAYER_ITERS="${LAYER_ITERS:-10}"
DEADLINE_S="${DEADLINE_S:-$( ((QUICK)) && echo 170 || echo 400)}"
PYTHON="${PYTHON:-python3}"
out="${OUT:-build-gpu-bench}"
work="${GPU_CHECK_WORK:-${TMPDIR:-/tmp}/cortado_gpu_check}"
logs="$work/logs"
results="$logs/results.tsv"
b=/tmp/cortado_bundle
read -r -a cortado_flags <<<"${CORTADO_FLAGS:-}"
GPU_TEST_FILTER='*Gpu*:*GPU*'
# memcheck: every layer's GPU code against its CPU code (LayerTableGpu), the normalisation and loss
# kernels and the fused layers' GPU tests (suites or tests named *Fus*/*Chain* with Gpu). Left out:
# the tests that watch the device's allocations, which the sanitizer adds to. racecheck, many times
# slower, checks the kernels with shared-memory reductions only.
readonly fused_gpu_tests='*Fus*Gpu*:*Gpu*Fus*:*Chain*Gpu*:*Gpu*Chain*'
SANITIZER_FILTER="${SANITIZER_FILTER:-*LayerTableGpu*:*NormGpu*:*LossGpu*:$fused_gpu_tests-*NoDeviceAllocation*:\
*AllocateNoDeviceMemory*}"
RACECHECK_FILTER="${RACECHECK_FILTER:-*NormGpu*:*LossGpu*:$fused_gpu_tests-*NoDeviceAllocation*}"

# ---- time budgets, seconds per command ------------------------------------------------------------
T_UNPACK=30 T_CONVERT=20 T_LIBRARIES=20
T_LENET=(25 20 45 25)                            # Cortado graphs, Cortado eager, PyTorch eager, PyTorch graph
T_CIFAR=(25 20 35 25)
T_RESNET=(45 35)                                 # each run of one batch and precision: Cortado, PyTorch
T_MIXED=(60 45)                                  # each precision at MIXED_BATCH: Cortado, PyTorch
T_LAYERS=45
T_TESTS=90
T_BANDWIDTH=20
T_SANITIZER=(60 40)                              # memcheck, racecheck

# ---- running ------------------------------------------------------------------------------------
stage_budget=0 total_budget=0 stage_start=0 sampler='' child='' idle_mib=0 RC=0 MIB=- cortado_ld=''
section() { printf '\n== %s\n' "$*"; stage_budget=0; stage_start=$SECONDS; }
# section_end NAME: the stage's budget (dry run) or its time, recorded for the summary.
section_end() {
  total_budget=$((total_budget + stage_budget))
  if ((DRY_RUN)); then
    printf '   budget of this stage: %d s\n' "$stage_budget"
  else
    printf '   stage %s: %d s (%d s since the start, deadline %d s)\n' "$1" $((SECONDS - stage_start)) "$SECONDS" \
      "$DEADLINE_S"
    record "stage.$1" ok $((SECONDS - stage_start)) -
    finish quiet
  fi
}
note() { printf '   %s\n' "$*"; }

stop_children() {
  [[ -z $child ]] || kill -TERM "$child" 2>/dev/null || true
  [[ -z $sampler ]] || kill "$sampler" 2>/dev/null || true
}
on_signal() {
  trap - INT TERM HUP
  echo "gpu.sh: stopped by a signal; summary.txt and logs.tar.gz hold what ran" >&2
  stop_children
  ((DRY_RUN)) || finish quiet
  exit 130
}
trap on_signal INT TERM HUP
trap stop_children EXIT

# run_cmd LOG BUDGET ENV CMD...: runs CMD under `timeout` (BUDGET seconds, fewer when the deadline is
# nearer), its stdout and stderr to LOG, sampling the GPU's memory meanwhile. ENV: cortado (Cortado's
# LD_LIBRARY_PATH, and where the tests find the repository and the tools) or plain (this shell's
# environment: PyTorch, tar). Sets RC (CMD's status; 124 or 137: timed out; no-time: not started, the
# deadline was too near; dry: --dry-run) and MIB (the peak MiB above the idle level, or -). Never
# fails itself. CMD runs in the background and is waited for, so a signal stops it at once.
run_cmd() {
  local log=$1 budget=$2 kind=$3 left start samples
  shift 3
  stage_budget=$((stage_budget + budget))
  MIB=-
  if ((DRY_RUN)); then
    printf '   [%3d s] %s  > %s\n' "$budget" "$*" "logs/${log#"$logs"/}"
    RC=dry
    return 0
  fi
  left=$((DEADLINE_S - SECONDS - 8))
  ((budget <= left)) || budget=$left
  if ((left < 5)); then
    echo "gpu.sh: not run, the ${DEADLINE_S} s deadline was too near: $*" >"$log"
    RC=no-time
    printf '   %-11s %4s    %s\n' NO-TIME - "${log#"$logs"/}"
    return 0
  fi
  local envs=()
  [[ $kind == cortado ]] &&
    envs=(env LD_LIBRARY_PATH="$cortado_ld" CORTADO_SOURCE_DIR="$PWD" CORTADO_TOOLS_DIR="$b/bin")
  samples=$(mktemp)
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 50 >"$samples" 2>/dev/null &
  sampler=$!
  start=$SECONDS
  RC=0
  timeout -k 5 "$budget" "${envs[@]}" "$@" >"$log" 2>&1 </dev/null &
  child=$!
  wait "$child" || RC=$?
  child=''
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  sampler=''
  MIB=$(sort -n "$samples" | tail -n 1 | awk -v idle="$idle_mib" 'NF { print $1 - idle }')
  [[ -n $MIB ]] || MIB=-
  rm -f "$samples"
  if [[ $RC == 124 || $RC == 137 ]]; then
    echo "gpu.sh: killed after its budget of ${budget} s: $*" >>"$log"
  fi
  printf '   %-11s %4d s  %s\n' "$(status_of "$RC" | tr '[:lower:]' '[:upper:]')" $((SECONDS - start)) "${log#"$logs"/}"
  [[ $RC == 0 || $RC == 124 || $RC == 137 ]] || failure_line "$log" | sed 's/^/      | /'
}

status_of() {  # status_of RC -> ok, timeout, no-time, failed(RC)
  case $1 in
    0) echo ok ;;
    124 | 137) echo timeout ;;
    no-time) echo no-time ;;
    *) echo "failed($1)" ;;
  esac
}

# failure_line LOG: the line that says why a run failed: pytorch_reference.py's "ERROR ..." line, else
# the last line that reads as an error (the trainer's one-line errors, a CUDA or cuDNN status, a
# Python exception), else the last line; at most 200 characters.
failure_line() {
  local line
  line=$({ grep -m1 '^ERROR ' "$1" || true; } | sed 's/^ERROR //')
  [[ -n $line ]] ||
    line=$({ grep -E -e '[Ee]rror|ERROR|FAILED|Check failed|[Ee]xception|Aborted|Segmentation|terminate called' \
               -e 'gpu.sh: killed' "$1" || true; } | tail -n 1)
  [[ -n $line ]] || line=$(grep -v '^[[:space:]]*$' "$1" | tail -n 1 || true)
  printf '%s\n' "${line:0:200}"
}

# record ID STATUS VALUE MIB [NOTE]: one result, a line of $results (tab-separated).
record() {
  ((DRY_RUN)) || printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5:-}" | tr -d '\r' >>"$results"
}
# record_run ID VALUE [NOTE]: the result of the command just run (RC, MIB), with the line it failed
# on as its note when it failed.
record_run() {
  local note=${3:-}
  [[ $RC == 0 ]] || note=$(failure_line "$log")
  record "$1" "$(status_of "$RC")" "${2:--}" "$MIB" "$(tr '\t' ' ' <<<"$note")"
}
# field ID N: field N of result ID (1 ID, 2 status, 3 value, 4 MiB, 5 note); empty when not recorded.
field() {
  [[ -f $results ]] || return 0
  awk -F'\t' -v id="$1" -v n="$2" '$1 == id { v = $n } END { print v }' "$results"
}

# value_of LOG KEY: KEY=VALUE from pytorch_reference.py's RESULT line.
value_of() { { grep -m1 '^RESULT ' "$1" || true; } | sed -nE "s/.* $2=([^ ]+).*/\1/p"; }

# log_span LOG START_PATTERN END_PATTERN: seconds between the glog timestamps of the first line
# matching each; empty when either is missing.
log_span() {
  local t0 t1
  t0=$({ grep -m1 -E "$2" "$1" || true; } | awk '{ print $2 }')
  t1=$({ grep -m1 -E "$3" "$1" || true; } | awk '{ print $2 }')
  [[ -n $t0 && -n $t1 ]] || return 0
  awk -v a="$t0" -v b="$t1" 'function s(t, p) { split(t, p, ":"); return p[1] * 3600 + p[2] * 60 + p[3] }
                             BEGIN { d = s(b) - s(a); if (d < 0) d += 86400; printf "%.3f", d }'
}

# cortado_rate LOG BATCH: images/s, the median of Cortado's display intervals ("Iteration N (X iter/s,
# ...)") after the first, which holds the warm-up and the graph capture; empty without any.
cortado_rate() {
  { grep -oE '\] Iteration [0-9]+ \([0-9.e+-]+ iter/s' "$1" || true; } |
    awk '$3 > 10 { sub(/^\(/, "", $4); print $4 }' | sort -g |
    awk -v b="$2" '{ v[NR] = $1 } END { if (NR) printf "%.0f", b * (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

# ---- setup --------------------------------------------------------------------------------------
# fatal MESSAGE: a set-up step that the rest needs failed: recorded, the summary written, exit 2.
fatal() {
  echo "gpu.sh: $*" >&2
  record setup "failed" - - "$*"
  finish print
  exit 2
}

setup() {
  section "setup: unpack $BUNDLE to $b, the libraries Cortado loads, the data (logs: $out/logs.tar.gz)"
  if ((!DRY_RUN)); then
    [[ -f $BUNDLE ]] ||
      usage_error "no $BUNDLE: make it with scripts/gpu_check.sh pack where the build tools are, and bring .gpu/ along"
    command -v nvidia-smi >/dev/null || usage_error "no nvidia-smi: this machine has no NVIDIA GPU driver"
    mkdir -p "$out"
    out=$(cd "$out" && pwd)
    rm -rf "$logs" "$b" && mkdir -p "$logs" "$b"
    rm -f "$out/summary.txt" "$out/logs.tar.gz"
    idle_mib=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -n 1)
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -n 1 >"$logs/gpu.txt"
    note "GPU: $(cat "$logs/gpu.txt")"
  fi
  local log
  run_cmd "$logs/unpack.log" "$T_UNPACK" plain tar xzf "$BUNDLE" -C "$b"
  [[ $RC == 0 || $RC == dry ]] || fatal "could not unpack $BUNDLE: $(failure_line "$logs/unpack.log")"

  # Another cuDNN for Cortado: a folder, or the one PyTorch loads.
  if [[ $CUDNN_DIR == pytorch ]]; then
    log="$logs/cudnn_dir.log"
    run_cmd "$log" "$T_LIBRARIES" plain "$PYTHON" scripts/bench/cuda_libraries.py --torch-cudnn-dir
    if ((!DRY_RUN)); then
      [[ $RC == 0 ]] || fatal "--cudnn pytorch: could not find PyTorch's cuDNN: $(failure_line "$log")"
      CUDNN_DIR=$({ grep '^/' "$log" || true; } | tail -n 1)
      [[ -n $CUDNN_DIR ]] || fatal "--cudnn pytorch: cuda_libraries.py named no folder (logs/cudnn_dir.log)"
    else
      CUDNN_DIR="<PyTorch's cuDNN folder>"
    fi
  fi
  if [[ -n $CUDNN_DIR ]] && ((!DRY_RUN)); then
    compgen -G "$CUDNN_DIR/libcudnn.so*" >/dev/null || fatal "--cudnn $CUDNN_DIR: no libcudnn.so* there"
    CUDNN_DIR=$(cd "$CUDNN_DIR" && pwd)
  fi
  local base_ld=${LD_LIBRARY_PATH:-}
  cortado_ld="${CUDNN_DIR:+$CUDNN_DIR:}$b/lib:/usr/local/cuda/lib64${base_ld:+:$base_ld}"
  note "Cortado's programs: LD_LIBRARY_PATH=${CUDNN_DIR:+$CUDNN_DIR:}$b/lib:/usr/local/cuda/lib64 (then the caller's),"
  note "  CORTADO_SOURCE_DIR=\$PWD, CORTADO_TOOLS_DIR=$b/bin; PyTorch: the caller's environment, unchanged"
  log="$logs/libraries_cortado.log"
  run_cmd "$log" "$T_LIBRARIES" plain "$PYTHON" scripts/bench/cuda_libraries.py --ld-library-path "$cortado_ld" \
    "$b/bin/trainer"
  if ((!DRY_RUN)); then
    record libraries "$(status_of "$RC")" - - "$([[ $RC == 0 ]] || failure_line "$log")"
    note "Cortado loads: $(libraries_of "$log" cortado)"
  fi

  note "gunzip $b/extra/mnist/*.gz into data/mnist/; $b/extra/cifar10/ copied to data/cifar10/ (where missing)"
  if ((!DRY_RUN)); then
    mkdir -p data/mnist data/cifar10
    local f target
    for f in "$b"/extra/mnist/*.gz; do
      target="data/mnist/$(basename "$f" .gz)"
      [[ -f $target ]] || gunzip -c "$f" >"$target"
    done
    [[ -d data/cifar10/cifar10_train_lmdb ]] || cp -r "$b"/extra/cifar10/. data/cifar10/
  fi
  local split name
  for split in train t10k; do
    name=$([[ $split == t10k ]] && echo test || echo train)
    if ((DRY_RUN)) || [[ ! -f data/mnist/mnist_${name}_lmdb/data.mdb ]]; then
      ((DRY_RUN)) || rm -rf "data/mnist/mnist_${name}_lmdb"
      run_cmd "$logs/convert_mnist_$name.log" "$T_CONVERT" cortado "$b/bin/convert_mnist_data" \
        "data/mnist/$split-images-idx3-ubyte" "data/mnist/$split-labels-idx1-ubyte" "data/mnist/mnist_${name}_lmdb"
    fi
  done
  section_end setup
}

# libraries_of LOG SIDE: "cuDNN 9.14.0 (/path), cuBLAS 13.0.2 (/path), ..." from the LIBRARY lines.
libraries_of() {
  awk -v side="$2" '$1 == "LIBRARY" && $2 == "side=" side && $4 != "version=-" {
      text[substr($3, 6)] = substr($4, 9) " (" substr($0, index($0, " path=") + 6) ")"
    }
    END {
      split("cudnn cublas cublasLt cudart", order, " ")
      split("cuDNN,cuBLAS,cuBLASLt,CUDA runtime", labels, ",")
      for (i = 1; i <= 4; i++) if (order[i] in text) printf "%s%s %s", (n++ ? ", " : ""), labels[i], text[order[i]]
      if (!n) printf "unknown"
    }' "$1" 2>/dev/null || echo unknown
}

# ---- LeNet and cifar10_quick --------------------------------------------------------------------
cortado_solver() {  # cortado_solver SOLVER ITERS: a copy in the logs without tests and snapshots; prints its path
  local solver
  solver="$logs/$(basename "$1" .prototxt)_bench.prototxt"
  if ((!DRY_RUN)); then
    sed -e "s/^max_iter:.*/max_iter: $2/" -e 's/^test_interval:.*/test_interval: 100000000/' \
        -e 's/^snapshot:.*/snapshot: 0/' -e 's/^solver_mode:.*/solver_mode: GPU/' "$1" >"$solver"
    printf 'test_initialization: false\nsnapshot_after_train: false\n' >>"$solver"
  fi
  echo "$solver"
}

bench_net() {  # bench_net NAME SOLVER ITERS BUDGET_CORTADO BUDGET_CORTADO_EAGER BUDGET_PYTORCH_EAGER BUDGET_PYTORCH_GRAPH
  local name=$1 iters=$3 solver run log
  solver=$(cortado_solver "$2" "$iters")
  ((DRY_RUN)) && note "logs/${solver#"$logs"/}: $2 with max_iter $iters, no tests, no snapshots, solver_mode GPU"
  local -A budget=([cortado]=$4 [cortado-eager]=$5 [pytorch-eager]=$6 [pytorch-graph]=$7)
  local runs=(cortado cortado-eager pytorch-eager pytorch-graph)
  ((QUICK)) && runs=(cortado pytorch-graph)
  for run in "${runs[@]}"; do
    log="$logs/${run}_$name.log"
    case $run in
      cortado | cortado-eager)
        local flags=("${cortado_flags[@]}")
        [[ $run == cortado-eager ]] && flags+=(--cuda_graph=false)
        run_cmd "$log" "${budget[$run]}" cortado "$b/bin/trainer" train --solver="$solver" "${flags[@]}"
        ((DRY_RUN)) || record_run "$name.$run" "$(log_span "$log" '\] Solving ' 'Optimization Done')"
        ;;
      *)
        run_cmd "$log" "${budget[$run]}" plain "$PYTHON" scripts/bench/pytorch_reference.py --net "$name" \
          --mode "${run#pytorch-}" --iters "$iters"
        ((DRY_RUN)) || record_run "$name.$run" "$(value_of "$log" train_s)"
        ;;
    esac
  done
}

stage_small() {
  if ((QUICK)); then
    section "small: LeNet ($LENET_ITERS iterations) and cifar10_quick ($CIFAR_ITERS), CUDA graphs: Cortado and PyTorch"
  else
    section "small: LeNet ($LENET_ITERS iterations) and cifar10_quick ($CIFAR_ITERS): Cortado graphs/eager," \
            "PyTorch eager/graph"
  fi
  bench_net lenet models/mnist/lenet_solver.prototxt "$LENET_ITERS" "${T_LENET[@]}"
  bench_net cifar10_quick models/cifar10/cifar10_quick_solver.prototxt "$CIFAR_ITERS" "${T_CIFAR[@]}"
  section_end small
}

# ---- ResNet-50 ----------------------------------------------------------------------------------
# resnet_net BATCH: generates the net and its solver into the logs (make_train_bench.sh) and sets
# `solver` and `net` to their paths.
resnet_net() {
  solver="$logs/resnet/resnet50_train_b${1}_solver.prototxt"
  net="${solver%_solver.prototxt}.prototxt"
  if [[ -f $solver && -f $net ]]; then return 0; fi
  note "models/resnet/make_train_bench.sh $1 logs/resnet $RESNET_ITERS  (writes ${solver##*/} and its net)"
  ((DRY_RUN)) || bash models/resnet/make_train_bench.sh "$1" "$logs/resnet" "$RESNET_ITERS" >/dev/null ||
    note "make_train_bench.sh failed: the runs of batch $1 will fail"
}

stage_resnet() {
  section "resnet: ResNet-50 training images/s, batch ${RESNET_BATCHES// /, }, TF32 and FP32: Cortado" \
          "($RESNET_ITERS iterations, display 10), PyTorch eager (10 + 30)"
  local batch precision id solver net log
  for batch in $RESNET_BATCHES; do
    resnet_net "$batch"
    for precision in tf32 fp32; do
      id="resnet50_b${batch}_$precision"
      local flags=("${cortado_flags[@]}")
      [[ $precision == fp32 ]] && flags+=(--strict_fp32)
      log="$logs/cortado_$id.log"
      run_cmd "$log" "${T_RESNET[0]}" cortado "$b/bin/trainer" train --solver="$solver" "${flags[@]}"
      ((DRY_RUN)) || record_run "$id.cortado" "$(cortado_rate "$log" "$batch")" \
        "$({ grep -m1 -oE 'CUDA graphs (on|off)[^;]*' "$log" || true; } | cut -c1-100)"
      log="$logs/pytorch_$id.log"
      run_cmd "$log" "${T_RESNET[1]}" plain "$PYTHON" scripts/bench/pytorch_reference.py --net resnet50 --batch "$batch" \
        --precision "$precision" --warmup 10 --iters 30
      ((DRY_RUN)) || record_run "$id.pytorch" "$(value_of "$log" img_per_s)"
    done
  done
  section_end resnet
}

stage_mixed() {
  section "mixed: ResNet-50 training images/s at batch $MIXED_BATCH, bf16 and fp16 with NHWC: Cortado" \
          "($RESNET_ITERS iterations), PyTorch autocast + channels_last (10 + 30)"
  local precision id log solver net
  resnet_net "$MIXED_BATCH"
  for precision in bf16 fp16; do
    id="resnet50_b${MIXED_BATCH}_${precision}_nhwc"
    log="$logs/cortado_$id.log"
    run_cmd "$log" "${T_MIXED[0]}" cortado "$b/bin/trainer" train --solver="$solver" --precision="$precision" \
      --layout=nhwc "${cortado_flags[@]}"
    ((DRY_RUN)) || record_run "$id.cortado" "$(cortado_rate "$log" "$MIXED_BATCH")"
    log="$logs/pytorch_$id.log"
    run_cmd "$log" "${T_MIXED[1]}" plain "$PYTHON" scripts/bench/pytorch_reference.py --net resnet50 \
      --batch "$MIXED_BATCH" --precision "$precision" --warmup 10 --iters 30
    ((DRY_RUN)) || record_run "$id.pytorch" "$(value_of "$log" img_per_s)"
  done
  section_end mixed
}

# layer_table CSV: trainer time's per-layer CSV as text: the totals, the 15 layers with the most
# forward + backward time, and the time by layer type. Columns are read from the end of each row
# (…,layer,type,forward_ms,backward_ms,forward_backward_ms,images_per_s), which a quoted model path
# cannot shift.
layer_table() {
  local rows
  rows=$(awk -F, 'NR > 1 && !($(NF - 5) == "total" && $(NF - 4) == "") {
                    printf "%.6f\t%s\t%s\t%.6f\t%.6f\n", $(NF - 3) + $(NF - 2), $(NF - 5), $(NF - 4),
                           $(NF - 3), $(NF - 2) }' "$1")
  awk -F, '$(NF - 5) == "total" && $(NF - 4) == "" {
             printf "trainer time, layer by layer (an event between layers, no CUDA graphs): forward %.2f ms,", $(NF - 3)
             printf " backward %.2f ms, forward-backward %.2f ms a step (%.0f img/s)\n", $(NF - 2), $(NF - 1), $NF }' "$1"
  sort -t$'\t' -k1,1gr <<<"$rows" | awk -F'\t' -v layers="$(grep -c . <<<"$rows")" '
    { sum += $1; row[NR] = $0 }
    END {
      printf "Top 15 of %d layers by forward + backward (share: of the layers'"'"' sum, %.2f ms; a fused chain is timed\n", layers, sum
      printf "as one, its forward at its first layer and its backward at its last):\n"
      printf "  %2s  %-22s %-18s %9s %9s %9s %6s\n", "#", "layer", "type", "fwd ms", "bwd ms", "f+b ms", "share"
      for (i = 1; i <= NR && i <= 15; i++) {
        split(row[i], f, "\t")
        printf "  %2d  %-22s %-18s %9.3f %9.3f %9.3f %5.1f%%\n", i, f[2], f[3], f[4], f[5], f[1],
               sum ? 100 * f[1] / sum : 0
      }
    }'
  awk -F'\t' '{ t[$3] += $1; s += $1 }
              END { for (k in t) printf "%.6f\t%s\t%.1f\n", t[k], k, s ? 100 * t[k] / s : 0 }' <<<"$rows" |
    sort -t$'\t' -k1,1gr |
    awk -F'\t' '{ printf "%s%s %.2f ms (%s%%)", NR == 1 ? "By type: " : ", ", $2, $1, $3 } END { if (NR) print "" }'
}

stage_layers() {
  section "layers: ResNet-50 batch $LAYER_BATCH, trainer time --gpu=0 --iterations=$LAYER_ITERS --output=CSV"
  local solver net log csv="$logs/resnet50_b${LAYER_BATCH}_layers.csv"
  resnet_net "$LAYER_BATCH"
  log="$logs/resnet50_b${LAYER_BATCH}_time.log"
  run_cmd "$log" "$T_LAYERS" cortado "$b/bin/trainer" time --model="$net" --gpu=0 --iterations="$LAYER_ITERS" \
    --output="$csv"
  if ((!DRY_RUN)); then
    if [[ -s $csv ]]; then layer_table "$csv" >"$logs/layers.txt" 2>&1 || true; fi
    record_run layers "$(awk -F, '$(NF - 5) == "total" { print $(NF - 1) }' "$csv" 2>/dev/null || true)"
    [[ ! -s $logs/layers.txt ]] || sed -n '1,8p' "$logs/layers.txt" | sed 's/^/   /'
  fi
  section_end layers
}

# ---- the GPU tests ------------------------------------------------------------------------------
stage_tests() {
  section "tests: the GPU test suite, --gtest_filter='$GPU_TEST_FILTER'"
  local log="$logs/gpu_tests.log"
  run_cmd "$log" "$T_TESTS" cortado "$b/bin/cortado_tests" --gtest_filter="$GPU_TEST_FILTER"
  if ((!DRY_RUN)); then
    local passed skipped names last status
    passed=$(grep -cE '^\[       OK \] ' "$log" || true)
    skipped=$(grep -cE '^\[  SKIPPED \] .* \([0-9]+ ms\)$' "$log" || true)
    names=$({ grep -E '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$log" || true; } |
            sed -E 's/^\[  FAILED  \] //; s/ \([0-9]+ ms\)$//; s/, where GetParam\(\) = .*//')
    # A test that started and never ended: the run was killed, or crashed, inside it.
    last=$({ grep -E '^\[ RUN      \] ' "$log" || true; } | tail -n 1 | sed 's/^\[ RUN      \] //')
    if [[ -n $last ]] && ! grep -qF -e "] $last (" -e "] $last, where" "$log"; then
      names+="${names:+$'\n'}$last ($(status_of "$RC"))"
    fi
    status=$(status_of "$RC")
    # Exit status 0 but no test passed, or one failed: not a pass either.
    [[ $status != ok || (-z $names && $passed -gt 0) ]] || status="failed(0)"
    record tests "$status" "$passed/$(grep -c . <<<"$names" || true)/$skipped" "$MIB" "$(paste -sd ';' <<<"$names")"
    echo "   $passed passed, $(grep -c . <<<"$names" || true) failed, $skipped skipped"
    local failed_names=()
    [[ -z $names ]] || mapfile -t failed_names <<<"$names"
    ((${#failed_names[@]} == 0)) || printf '     failed: %s\n' "${failed_names[@]}"
  fi
  section_end tests
}

# ---- compute-sanitizer --------------------------------------------------------------------------
stage_sanitizer() {
  section "sanitizer: compute-sanitizer over cortado_tests: memcheck '$SANITIZER_FILTER', racecheck '$RACECHECK_FILTER'"
  local sanitizer tool log errors status filter tests
  local -A budget=([memcheck]=${T_SANITIZER[0]} [racecheck]=${T_SANITIZER[1]})
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck; do
    log="$logs/sanitizer_$tool.log"
    filter=$SANITIZER_FILTER
    [[ $tool == racecheck ]] && filter=$RACECHECK_FILTER
    if ((!DRY_RUN)) && [[ ! -x $sanitizer ]]; then
      note "$tool: no compute-sanitizer on this machine"
      record "$tool" missing - - "no compute-sanitizer"
      continue
    fi
    run_cmd "$log" "${budget[$tool]}" cortado "$sanitizer" --tool "$tool" --error-exitcode 9 \
      "$b/bin/cortado_tests" --gtest_filter="$filter"
    ((!DRY_RUN)) || continue
    # memcheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)".
    errors=$({ grep -E 'SUMMARY:' "$log" || true; } | tail -n 1 | { grep -oE '[0-9]+ errors?' || true; } |
             head -n 1 | cut -d' ' -f1)
    tests=$(grep -cE '^\[       OK \] ' "$log" || true)
    status=$(status_of "$RC")
    case $RC in
      0 | 1) [[ -n $errors ]] && status=ok ;;  # 1: a test failed under the sanitizer, not a sanitizer error
      9) status=errors ;;
    esac
    local why="$tests tests passed under $tool"
    [[ $RC != 1 ]] || why+="; tests failed under $tool"
    if [[ $status != ok && $status != errors ]]; then  # cut short: what it found until then
      why+="; $(grep -cE '^=+ +(Invalid|Race|Error|Program hit)' "$log" || true) errors until it stopped"
    fi
    record "$tool" "$status" "${errors:--}" "$MIB" "$why"
    [[ $status == ok ]] || grep -m 5 -E '^=+ +(Invalid|Race|Error|Program hit)' "$log" | sed 's/^/     /' || true
  done
  section_end sanitizer
}

# ---- memory-bound steps against the copy bandwidth ----------------------------------------------
BANDWIDTH_OPS=(relu scale batchnorm sgd_update)
stage_bandwidth() {
  section "bandwidth: memory-bound steps over 256 MiB against a device-to-device copy"
  local log="$logs/bandwidth.log" op
  run_cmd "$log" "$T_BANDWIDTH" cortado "$b/bin/cortado_tests" --gtest_also_run_disabled_tests \
    --gtest_filter='DISABLED_BandwidthBench.*'
  if ((!DRY_RUN)); then
    for op in copy "${BANDWIDTH_OPS[@]}"; do
      local line gbps status
      line=$({ grep -m1 "^RESULT op=$op " "$log" || true; })
      gbps=$(sed -nE 's/.* gbps=([^ ]+).*/\1/p' <<<"$line")
      # A measured step is a result even when the benchmark failed (a ratio below its target).
      if [[ -n $gbps ]]; then status=ok; else status=$(status_of "$RC"); fi
      record "bw.$op" "$status" "${gbps:--}" "$MIB"
      [[ -z $line ]] || echo "   ${line#RESULT }"
    done
  fi
  section_end bandwidth
}

# ---- the summary --------------------------------------------------------------------------------
# cell ID: the value of result ID when it ran well, else its status in capitals (- when not run).
cell() {
  local status value
  status=$(field "$1" 2)
  value=$(field "$1" 3)
  if [[ -z $status ]]; then echo -; elif [[ $status == ok ]]; then echo "$value"; else tr '[:lower:]' '[:upper:]' <<<"$status"; fi
}
is_number() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]]; }
ratio() {  # ratio A B: A / B as "1.23x", - unless both are numbers
  if is_number "$1" && is_number "$2" && [[ $2 != 0 && $2 != 0.000 ]]; then
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'
  else
    echo -
  fi
}
at_most() { is_number "$1" && is_number "$2" && awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

# summary: the libraries, the stages' times, the notes, the table and the layer table; its last
# line is the verdict, "... PASS" when every target passed.
summary() {
  local verdicts=() v c p names notes
  line() { printf '%-38s %14s %10s %9s %7s %7s  %-26s %s\n' "$@"; }
  row() { line "$@"; [[ $8 == - ]] || verdicts+=("$8"); }  # a row with a target: PASS or FAIL counts
  echo "Cortado GPU check ($( ((QUICK)) && echo 'run quick' || echo run)), $(date -u '+%Y-%m-%d %H:%M UTC')," \
       "on $(cat "$logs/gpu.txt" 2>/dev/null || echo 'an unknown GPU') (name, driver, memory)"
  echo "Cortado loads: $(libraries_of "$logs/libraries_cortado.log" cortado)${CUDNN_DIR:+ (--cudnn $CUDNN_DIR)}"
  local torch_log
  torch_log=$(grep -l '^LIBRARY side=pytorch' "$logs"/pytorch*.log 2>/dev/null | head -n 1 || true)
  if [[ -n $torch_log ]]; then
    echo "PyTorch loads: $(libraries_of "$torch_log" pytorch); $(grep -m1 '^PYTORCH ' "$torch_log" | cut -d' ' -f2-)"
  fi
  local stages_line
  stages_line=$(awk -F'\t' '$1 ~ /^stage\./ { printf "%s%s %s", n++ ? ", " : "", substr($1, 7), $3 }' "$results" 2>/dev/null)
  echo "Stage seconds: $stages_line; $SECONDS s since the start (deadline $DEADLINE_S s). Every log: logs.tar.gz."
  names=$(field tests 5)
  if [[ -n $names ]]; then
    echo "GPU tests failing (logs/gpu_tests.log):"
    tr ';' '\n' <<<"$names" | sed 's/^/  /'
  fi
  notes=$([[ ! -f $results ]] ||
          awk -F'\t' '$1 != "tests" && $1 !~ /^stage\./ && $5 != "" { print "  " $1 ": " $5 }' "$results")
  [[ -z $notes ]] || printf 'Notes:\n%s\n' "$notes"
  echo
  echo "speed-up: Cortado over PyTorch, above 1 = Cortado faster. MiB: peak GPU memory of the process above the" \
       "idle level."
  line what Cortado PyTorch speed-up "C MiB" "P MiB" target result
  if [[ -n $(field tests 2) ]]; then
    c=$(field tests 3) v=PASS
    case $(field tests 2) in
      ok) ;;
      "failed(1)") v=FAIL ;;                 # test failures: their count says it
      *) v=FAIL c="$(cell tests) $c" ;;      # timed out, crashed, or not started
    esac
    row "GPU tests (passed/failed/skipped)" "$c" - - "$(field tests 4)" - "all pass" "$v"
  fi
  local tool
  for tool in memcheck racecheck; do
    [[ -n $(field "$tool" 2) ]] || continue
    c=$(cell "$tool")
    case $(field "$tool" 2) in
      ok) v=$([[ $c == 0 ]] && echo PASS || echo FAIL); c="$c errors" ;;
      errors) v=FAIL c="$(field "$tool" 3) errors" ;;
      missing) v=- ;;
      *) v=FAIL ;;
    esac
    row "compute-sanitizer $tool" "$c" - - "$(field "$tool" 4)" - "no errors" "$v"
  done
  local net iters mode target cid pid
  for net in lenet cifar10_quick; do
    [[ -n $(field "$net.cortado" 2) ]] || continue
    iters=$([[ $net == lenet ]] && echo "$LENET_ITERS" || echo "$CIFAR_ITERS")
    for mode in graph eager; do
      cid=$net.cortado pid=$net.pytorch-$mode
      [[ $mode == graph ]] || cid+=-eager
      [[ -n $(field "$cid" 2) || -n $(field "$pid" 2) ]] || continue
      c=$(cell "$cid") p=$(cell "$pid") v=- target=-
      if [[ $mode == graph && $net == lenet && $iters == 10000 ]]; then
        target="Cortado <= 2.0 s" v=FAIL
        ! at_most "$c" 2.0 || v=PASS
      elif [[ $mode == graph && $net == cifar10_quick ]]; then
        target="Cortado <= PyTorch" v=FAIL
        ! at_most "$c" "$p" || v=PASS
      fi
      row "$net $iters it, $([[ $mode == graph ]] && echo 'CUDA graphs' || echo eager) (s)" "$c" "$p" "$(ratio "$p" "$c")" \
        "$(field "$cid" 4)" "$(field "$pid" 4)" "$target" "$v"
    done
  done
  local batch precision id
  for batch in $RESNET_BATCHES; do
    for precision in tf32 fp32; do
      id="resnet50_b${batch}_$precision"
      [[ -n $(field "$id.cortado" 2) ]] || continue
      c=$(cell "$id.cortado") p=$(cell "$id.pytorch") v=- target=-
      if [[ $batch == 128 ]]; then
        target=">= PyTorch" v=FAIL
        [[ $precision == tf32 ]] && target=">= PyTorch (goal 2200)"
        ! at_most "$p" "$c" || v=PASS
      fi
      row "ResNet-50 b$batch ${precision^^} (img/s)" "$c" "$p" "$(ratio "$c" "$p")" "$(field "$id.cortado" 4)" \
        "$(field "$id.pytorch" 4)" "$target" "$v"
    done
  done
  for precision in bf16 fp16; do
    id="resnet50_b${MIXED_BATCH}_${precision}_nhwc"
    [[ -n $(field "$id.cortado" 2) ]] || continue
    c=$(cell "$id.cortado") p=$(cell "$id.pytorch") v=FAIL
    local cm pm
    cm=$(field "$id.cortado" 4) pm=$(field "$id.pytorch" 4)
    if is_number "$c" && is_number "$p" && at_most 5000 "$c" && awk -v c="$c" -v p="$p" 'BEGIN { exit !(c >= 1.25 * p) }' &&
       at_most "$cm" "$pm"; then
      v=PASS
    fi
    row "ResNet-50 b$MIXED_BATCH ${precision} NHWC (img/s)" "$c" "$p" "$(ratio "$c" "$p")" "$cm" "$pm" \
      ">= 5000, 1.25x, MiB <= PyTorch" "$v"
  done
  if [[ -n $(field layers 2) ]]; then
    row "ResNet-50 b$LAYER_BATCH, trainer time (ms/step)" "$(cell layers)" - - "$(field layers 4)" - - -
  fi
  local op copy_gbps
  copy_gbps=$(cell bw.copy)
  for op in "${BANDWIDTH_OPS[@]}"; do
    [[ -n $(field "bw.$op" 2) ]] || continue
    c=$(cell "bw.$op") v=FAIL
    is_number "$c" && is_number "$copy_gbps" && awk -v c="$c" -v r="$copy_gbps" 'BEGIN { exit !(c >= 0.8 * r) }' &&
      v=PASS
    row "$op, 256 MiB (GB/s; copy $copy_gbps)" "$c" - "$(ratio "$c" "$copy_gbps")" "$(field "bw.$op" 4)" - \
      ">= 0.80 of the copy" "$v"
  done
  if [[ -s $logs/layers.txt ]]; then
    echo
    echo "ResNet-50 per layer on the GPU, batch $LAYER_BATCH" \
         "(in logs.tar.gz: logs/resnet50_b${LAYER_BATCH}_layers.csv):"
    cat "$logs/layers.txt"
  fi
  echo
  local fails=0
  for v in "${verdicts[@]}"; do [[ $v == PASS ]] || fails=$((fails + 1)); done
  [[ -z $(field setup 2) ]] || fails=$((fails + 1))
  local met=$((${#verdicts[@]} - fails < 0 ? 0 : ${#verdicts[@]} - fails))
  line "targets" "" "" "" "" "" "$met of ${#verdicts[@]} met" \
    "$([[ $fails == 0 ]] && echo PASS || echo FAIL)"
}

# finish quiet|print: writes summary.txt (printed too with `print`) and logs.tar.gz into $out.
finish() {
  [[ -d $logs && -d $out ]] || return 0
  summary >"$logs/summary.txt" 2>&1 || true
  cp "$logs/summary.txt" "$out/summary.txt"
  tar czf "$out/logs.tar.gz.partial" -C "$work" "${logs##*/}" && mv -f "$out/logs.tar.gz.partial" "$out/logs.tar.gz"
  [[ $1 != print ]] || cat "$out/summary.txt"
}

# ---- main ---------------------------------------------------------------------------------------
if ((DRY_RUN)); then
  echo "gpu.sh --dry-run$( ((QUICK)) && echo ' quick'): what runs on the GPU machine, stage by stage;" \
       "[budget] command > log."
  echo "Every command runs under timeout with its budget; a deadline of ${DEADLINE_S} s from the start caps them all."
  echo "The logs go to $logs/ and, packed, to $out/logs.tar.gz, beside $out/summary.txt."
fi
setup
for stage in "${stages[@]}"; do
  "stage_$stage"
done
if ((DRY_RUN)); then
  printf '\nSum of the budgets: %d s; the deadline (DEADLINE_S) stops it at %d s. Then the table (%s/summary.txt):\n' \
    "$total_budget" "$DEADLINE_S" "$out"
  ((QUICK)) || note "targets: GPU tests all pass; compute-sanitizer no errors; ReLU, Scale, BatchNorm and the SGD"
  ((QUICK)) || note "update over 256 MiB >= 0.80 of the copy's GB/s;"
  note "LeNet with graphs <= 2.0 s; cifar10_quick with graphs <= PyTorch's whole-step graph; ResNet-50 batch 128"
  note ">= PyTorch's img/s in TF32 and in FP32 (goal: TF32 >= 2200 img/s)"
  ((QUICK)) || note "ResNet-50 batch $MIXED_BATCH in bf16 and fp16 NHWC >= 5000 img/s, >= 1.25x PyTorch's autocast +"
  ((QUICK)) || note "channels_last, and peak GPU memory <= PyTorch's"
  exit 0
fi
echo
finish print
[[ $(tail -n 1 "$out/summary.txt") == *PASS ]]
