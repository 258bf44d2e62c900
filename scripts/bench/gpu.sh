#!/usr/bin/env bash
# gpu.sh — the GPU machine's half of scripts/gpu_check.sh (which runs it; this file holds the stages).
# With .gpu/bundle.tar.gz (scripts/bench/gpu_bundle.sh) unpacked to /tmp/cortado_bundle and the data
# prepared (MNIST's LMDB from the bundled IDX files, the bundled CIFAR-shaped LMDB), in order:
#   tests      the GPU test suite, cortado_tests --gtest_filter='*Gpu*:*GPU*': passed, failed (named)
#              and skipped tests
#   sanitizer  compute-sanitizer memcheck and racecheck over a subset of it ($SANITIZER_FILTER)
#   small      Caffe's LeNet (10,000 iterations, batch 64, the MNIST LMDB through the prefetcher) and
#              cifar10_quick (5,000, batch 100): Cortado with its steps replayed as CUDA graphs (the
#              default) and eagerly (--cuda_graph=false), beside PyTorch (pytorch_reference.py, data
#              already on the GPU, cudnn.benchmark on) eager and with the whole step as one CUDA
#              graph; training seconds from the first iteration to the last (start-up excluded)
#   resnet     ResNet-50 training throughput (images/s) at batch 128 and 64, TF32 and FP32: Cortado
#              (models/resnet/make_train_bench.sh: a DummyData batch already on the GPU; FP32 is
#              --strict_fp32; the median display interval after the first, which holds the warm-up)
#              beside PyTorch eager (plain torch.nn ResNet-50, 10 warm-up then 30 timed steps)
#   bandwidth  the memory-bound steps (ReLU, Scale and BatchNorm forward, the SGD update) over 256 MiB
#              against a device-to-device copy in the same run (tests/gpu/bandwidth_bench_test.cpp):
#              each one's GB/s and its fraction of the copy's
#   layers     (only when named) trainer time's per-layer table of that ResNet-50 at batch 32
# and ends with one table: a row per run with Cortado's and PyTorch's figures, the speed-up, the peak
# GPU memory of each process (nvidia-smi sampled every 50 ms, above the idle level) and the targets
# with PASS/FAIL; also written to $OUT/summary.txt, beside every log.
#
# Time: every command runs under `timeout` with its own budget (below; one past it is killed and
# shows as TIMEOUT, and the rest still runs), and a deadline DEADLINE_S (default 530 s) after the
# start caps those budgets, so the whole stays under 9 minutes, inside one 10-minute device call.
#
# Usage (GPU machine, repository root; normally through `scripts/gpu_check.sh run`):
#   scripts/bench/gpu.sh [--dry-run] [STAGE...]     default stages: tests small resnet bandwidth sanitizer (the
#               measurements before the sanitizer, which the deadline cuts first)
#   --dry-run   prints the commands of each stage with their budgets; runs nothing (any machine)
# Environment: OUT (logs; default build-gpu-bench/), BUNDLE (default .gpu/bundle.tar.gz), DEADLINE_S,
#   LENET_ITERS, CIFAR_ITERS, RESNET_ITERS (Cortado's, default 50), CORTADO_FLAGS (extra trainer
#   flags), PYTHON (default python3).
# Exit status: 0 when every target of the stages run passed, 1 when one failed, 2 on bad usage.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

DRY_RUN=0
stages=()
for arg in "$@"; do
  case $arg in
    --dry-run) DRY_RUN=1 ;;
    tests | sanitizer | small | resnet | bandwidth | layers) stages+=("$arg") ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "$0"; exit 0 ;;
    *) echo "gpu.sh: unknown argument '$arg' (stages: tests sanitizer small resnet bandwidth layers; --dry-run)" >&2; exit 2 ;;
  esac
done
((${#stages[@]})) || stages=(tests small resnet bandwidth sanitizer)

BUNDLE="${BUNDLE:-.gpu/bundle.tar.gz}"
LENET_ITERS="${LENET_ITERS:-10000}"
CIFAR_ITERS="${CIFAR_ITERS:-5000}"
RESNET_ITERS="${RESNET_ITERS:-50}"
DEADLINE_S="${DEADLINE_S:-530}"
PYTHON="${PYTHON:-python3}"
out="${OUT:-build-gpu-bench}"
b=/tmp/cortado_bundle
results="$out/results.tsv"
read -r -a cortado_flags <<<"${CORTADO_FLAGS:-}"
GPU_TEST_FILTER='*Gpu*:*GPU*'
# The training, normalisation and loss GPU tests (parameterised suites are Prefix/Suite, hence the
# leading *): the kernels with shared-memory reductions, and whole steps replayed from graphs. The
# device-memory test is left out: it watches the device's allocations, which the sanitizer adds to;
# so is the test whose capture fails on purpose (the sanitizer reports the refused call as an error).
# racecheck, many times slower, checks the shared-memory reductions only.
SANITIZER_FILTER='*TrainingGpu*:*NormGpu*:*LossGpu*-*TrainingGpuMemory*:*ACaptureThatFailsFallsBackToEagerSteps*'
RACECHECK_FILTER='*NormGpu*:*LossGpu*'

# ---- time budgets, seconds per command ------------------------------------------------------------
T_UNPACK=40 T_CONVERT=30
T_TESTS=120
T_BANDWIDTH=30
T_SANITIZER=50                                   # each of memcheck and racecheck
T_LENET=(25 45 45 25)                            # Cortado graphs, Cortado eager, PyTorch eager, PyTorch graph
T_CIFAR=(25 40 35 25)
T_RESNET=40                                      # each of the 8 runs (Cortado, PyTorch) x batch x precision
T_LAYERS=60

# ---- running ------------------------------------------------------------------------------------
# Output lines: section headers, one line per command (dry run: the command and its budget).
section() { printf '\n== %s\n' "$*"; stage_budget=0; }
section_end() { ((DRY_RUN)) && printf '   budget of this stage: %d s\n' "$stage_budget"; total_budget=$((total_budget + stage_budget)); }
note() { printf '   %s\n' "$*"; }
stage_budget=0 total_budget=0 sampler='' idle_mib=0 RC=0 MIB=-
trap '[[ -z $sampler ]] || kill "$sampler" 2>/dev/null || true' EXIT

# run_cmd LOG BUDGET CMD...: runs CMD under `timeout` (BUDGET seconds, fewer when the deadline is
# nearer), its stdout and stderr to LOG, sampling the GPU's memory meanwhile. Sets RC (CMD's status;
# 124 or 137: timed out; no-time: not started, the deadline was too near; dry: --dry-run) and MIB
# (the peak MiB above the idle level, or -). Never fails itself.
run_cmd() {
  local log=$1 budget=$2 left start samples
  shift 2
  stage_budget=$((stage_budget + budget))
  MIB=-
  if ((DRY_RUN)); then
    printf '   [%3d s] %s  > %s\n' "$budget" "$*" "$log"
    RC=dry
    return 0
  fi
  left=$((DEADLINE_S - SECONDS - 8))
  ((budget <= left)) || budget=$left
  if ((left < 5)); then
    echo "gpu.sh: not run, the ${DEADLINE_S} s deadline was too near: $*" >"$log"
    RC=no-time
    printf '   %-11s %4s    %s\n' NO-TIME - "${log#"$out"/}"
    return 0
  fi
  samples=$(mktemp)
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 50 >"$samples" 2>/dev/null &
  sampler=$!
  start=$SECONDS
  RC=0
  timeout -k 5 "$budget" "$@" >"$log" 2>&1 || RC=$?
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  sampler=''
  MIB=$(sort -n "$samples" | tail -n 1 | awk -v idle="$idle_mib" 'NF { print $1 - idle }')
  [[ -n $MIB ]] || MIB=-
  rm -f "$samples"
  if [[ $RC == 124 || $RC == 137 ]]; then
    echo "gpu.sh: killed after its budget of ${budget} s: $*" >>"$log"
  fi
  printf '   %-11s %4d s  %s\n' "$(status_of "$RC" | tr '[:lower:]' '[:upper:]')" $((SECONDS - start)) "${log#"$out"/}"
  [[ $RC == 0 || $RC == 124 || $RC == 137 ]] || tail -n 3 "$log" | cut -c1-160 | sed 's/^/      | /'
}

status_of() {  # status_of RC -> ok, timeout, no-time, failed(RC)
  case $1 in
    0) echo ok ;;
    124 | 137) echo timeout ;;
    no-time) echo no-time ;;
    *) echo "failed($1)" ;;
  esac
}

# record ID STATUS VALUE MIB [NOTE]: one result, a line of $results (tab-separated).
record() {
  ((DRY_RUN)) || printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5:-}" >>"$results"
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
setup() {
  section "setup: unpack $BUNDLE to $b, prepare the data (logs in $out/)"
  if ((!DRY_RUN)); then
    [[ -f $BUNDLE ]] || { echo "gpu.sh: no $BUNDLE: run scripts/gpu_check.sh pack on the build machine and carry .gpu" >&2; exit 2; }
    command -v nvidia-smi >/dev/null || { echo "gpu.sh: no nvidia-smi: this is not the GPU machine" >&2; exit 2; }
    mkdir -p "$out"
    rm -f "$results"
    rm -rf "$b" && mkdir -p "$b"
    idle_mib=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -n 1)
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -n 1 | sed 's/^/   GPU: /'
  fi
  run_cmd "$out/unpack.log" "$T_UNPACK" tar xzf "$BUNDLE" -C "$b"
  [[ $RC == 0 || $RC == dry ]] || { echo "gpu.sh: could not unpack $BUNDLE (see $out/unpack.log)" >&2; exit 2; }
  export LD_LIBRARY_PATH="$b/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
  # The tests find the repository and the tools here, not where they were built.
  export CORTADO_SOURCE_DIR="$PWD" CORTADO_TOOLS_DIR="$b/bin"
  note "LD_LIBRARY_PATH=$b/lib:/usr/local/cuda/lib64 CORTADO_SOURCE_DIR=\$PWD CORTADO_TOOLS_DIR=$b/bin"
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
      run_cmd "$out/convert_mnist_$name.log" "$T_CONVERT" "$b/bin/convert_mnist_data" \
        "data/mnist/$split-images-idx3-ubyte" "data/mnist/$split-labels-idx1-ubyte" "data/mnist/mnist_${name}_lmdb"
    fi
  done
  section_end
}

# ---- 1. the GPU tests ---------------------------------------------------------------------------
stage_tests() {
  section "1. the GPU test suite"
  local log="$out/gpu_tests.log"
  run_cmd "$log" "$T_TESTS" "$b/bin/cortado_tests" --gtest_filter="$GPU_TEST_FILTER"
  section_end
  ((!DRY_RUN)) || return 0
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
}

# ---- 4. compute-sanitizer -----------------------------------------------------------------------
stage_sanitizer() {
  section "4. compute-sanitizer over cortado_tests: memcheck --gtest_filter='$SANITIZER_FILTER', racecheck '$RACECHECK_FILTER'"
  local sanitizer tool log errors status filter
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck; do
    log="$out/sanitizer_$tool.log"
    if ((!DRY_RUN)) && [[ ! -x $sanitizer ]]; then
      note "$tool: no compute-sanitizer on this machine"
      record "$tool" missing - - "no compute-sanitizer"
      continue
    fi
    filter=$SANITIZER_FILTER
    [[ $tool == racecheck ]] && filter=$RACECHECK_FILTER
    run_cmd "$log" "$T_SANITIZER" "$sanitizer" --tool "$tool" --error-exitcode 9 "$b/bin/cortado_tests" \
      --gtest_filter="$filter"
    ((!DRY_RUN)) || continue
    # memcheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)"
    errors=$({ grep -E 'SUMMARY:' "$log" || true; } | tail -n 1 | { grep -oE '[0-9]+ errors?' || true; } |
             head -n 1 | cut -d' ' -f1)
    status=$(status_of "$RC")
    case $RC in
      0 | 1) [[ -n $errors ]] && status=ok ;;  # 1: a test failed under the sanitizer, not a sanitizer error
      9) status=errors ;;
    esac
    record "$tool" "$status" "${errors:--}" "$MIB" "$([[ $RC == 1 ]] && echo "tests failed under $tool")"
    [[ $status == ok ]] || grep -m 5 -E '^=+ +(Invalid|Race|Error|Program hit)' "$log" | sed 's/^/     /' || true
  done
  section_end
}

# ---- 2. LeNet and cifar10_quick -----------------------------------------------------------------
cortado_solver() {  # cortado_solver SOLVER ITERS: a copy in $out without tests and snapshots; prints its path
  local solver
  solver="$out/$(basename "$1" .prototxt)_bench.prototxt"
  if ((!DRY_RUN)); then
    sed -e "s/^max_iter:.*/max_iter: $2/" -e 's/^test_interval:.*/test_interval: 100000000/' \
        -e 's/^snapshot:.*/snapshot: 0/' -e 's/^solver_mode:.*/solver_mode: GPU/' "$1" >"$solver"
    printf 'test_initialization: false\nsnapshot_after_train: false\n' >>"$solver"
  fi
  echo "$solver"
}

bench_net() {  # bench_net NAME SOLVER ITERS BUDGET_CORTADO BUDGET_CORTADO_EAGER BUDGET_PYTORCH_EAGER BUDGET_PYTORCH_GRAPH
  local name=$1 iters=$3 solver run log secs
  solver=$(cortado_solver "$2" "$iters")
  ((DRY_RUN)) && note "$solver: $2 with max_iter $iters, no tests, no snapshots, solver_mode GPU"
  local budgets=("$4" "$5" "$6" "$7") i=0
  # cortado: steps replayed as CUDA graphs (the default); cortado-eager: --cuda_graph=false
  for run in cortado cortado-eager; do
    local flags=("${cortado_flags[@]}")
    [[ $run == cortado-eager ]] && flags+=(--cuda_graph=false)
    log="$out/${run}_$name.log"
    run_cmd "$log" "${budgets[i++]}" "$b/bin/trainer" train --solver="$solver" "${flags[@]}"
    ((!DRY_RUN)) || continue
    secs=$(log_span "$log" '\] Solving ' 'Optimization Done')
    record "$name.$run" "$(status_of "$RC")" "${secs:--}" "$MIB"
  done
  for run in pytorch-eager pytorch-graph; do
    log="$out/${run}_$name.log"
    run_cmd "$log" "${budgets[i++]}" "$PYTHON" scripts/bench/pytorch_reference.py --net "$name" \
      --mode "${run#pytorch-}" --iters "$iters"
    ((!DRY_RUN)) || continue
    secs=$(value_of "$log" train_s)
    record "$name.$run" "$(status_of "$RC")" "${secs:--}" "$MIB"
  done
}

stage_small() {
  section "2. LeNet ($LENET_ITERS iterations) and cifar10_quick ($CIFAR_ITERS): Cortado graphs/eager, PyTorch eager/graph"
  bench_net lenet models/mnist/lenet_solver.prototxt "$LENET_ITERS" "${T_LENET[@]}"
  bench_net cifar10_quick models/cifar10/cifar10_quick_solver.prototxt "$CIFAR_ITERS" "${T_CIFAR[@]}"
  section_end
}

# ---- 3. ResNet-50 training throughput -----------------------------------------------------------
# resnet_solver BATCH: generates the net and its solver into $out/resnet/ (make_train_bench.sh) and
# sets `solver` to the solver's path.
resnet_solver() {
  solver="$out/resnet/resnet50_train_b${1}_solver.prototxt"
  note "models/resnet/make_train_bench.sh $1 $out/resnet $RESNET_ITERS  (writes ${solver##*/} and its net)"
  ((DRY_RUN)) || bash models/resnet/make_train_bench.sh "$1" "$out/resnet" "$RESNET_ITERS" >/dev/null ||
    note "make_train_bench.sh failed: the runs of batch $1 will fail"
}

stage_resnet() {
  section "3. ResNet-50 training images/s: Cortado ($RESNET_ITERS iterations, display 10) and PyTorch eager (10 + 30), batch 128 and 64, TF32 and FP32"
  local batch precision id solver log rate
  for batch in 128 64; do
    resnet_solver "$batch"
    for precision in tf32 fp32; do
      id="resnet50_b${batch}_$precision"
      local flags=("${cortado_flags[@]}")
      [[ $precision == fp32 ]] && flags+=(--strict_fp32)
      log="$out/cortado_$id.log"
      run_cmd "$log" "$T_RESNET" "$b/bin/trainer" train --solver="$solver" "${flags[@]}"
      if ((!DRY_RUN)); then
        rate=$(cortado_rate "$log" "$batch")
        record "$id.cortado" "$(status_of "$RC")" "${rate:--}" "$MIB" \
          "$({ grep -m1 -oE 'CUDA graphs (on|off)[^;]*' "$log" || true; } | cut -c1-100)"
      fi
      log="$out/pytorch_$id.log"
      run_cmd "$log" "$T_RESNET" "$PYTHON" scripts/bench/pytorch_reference.py --net resnet50 --batch "$batch" \
        --precision "$precision" --warmup 10 --iters 30
      ((!DRY_RUN)) || continue
      record "$id.pytorch" "$(status_of "$RC")" "$(value_of "$log" img_per_s)" "$MIB"
    done
  done
  section_end
}

stage_layers() {  # not in the default stages: trainer time's per-layer table (forward, backward) at batch 32
  section "ResNet-50 per-layer times, batch 32 (trainer time)"
  local solver net
  resnet_solver 32
  net="${solver%_solver.prototxt}.prototxt"
  run_cmd "$out/resnet50_time.log" "$T_LAYERS" "$b/bin/trainer" time --model="$net" --gpu=0 --iterations=20
  section_end
  ((!DRY_RUN)) || return 0
  grep -E "Average (Forward|Backward|Forward-Backward)|Total Time" "$out/resnet50_time.log" | sed 's/^.*\] /   /' || true
}

# ---- 3b. memory-bound steps against the copy bandwidth ------------------------------------------
BANDWIDTH_OPS=(relu scale batchnorm sgd_update)
stage_bandwidth() {
  section "3b. memory-bound steps over 256 MiB against a device-to-device copy"
  local log="$out/bandwidth.log" op
  run_cmd "$log" "$T_BANDWIDTH" "$b/bin/cortado_tests" --gtest_also_run_disabled_tests \
    --gtest_filter='DISABLED_BandwidthBench.*'
  section_end
  ((!DRY_RUN)) || return 0
  for op in copy "${BANDWIDTH_OPS[@]}"; do
    local line gbps status
    line=$({ grep -m1 "^RESULT op=$op " "$log" || true; })
    gbps=$(sed -nE 's/.* gbps=([^ ]+).*/\1/p' <<<"$line")
    # A measured step is a result even when the benchmark failed (a ratio below its target).
    if [[ -n $gbps ]]; then status=ok; else status=$(status_of "$RC"); fi
    record "bw.$op" "$status" "${gbps:--}" "$MIB"
    [[ -z $line ]] || echo "   ${line#RESULT }"
  done
}

# ---- the table ----------------------------------------------------------------------------------
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

summary() {
  local verdicts=() v c p names notes
  line() { printf '%-38s %14s %10s %9s %7s %7s  %-24s %s\n' "$@"; }
  row() { line "$@"; [[ $8 == - ]] || verdicts+=("$8"); }  # a row with a target: PASS or FAIL counts
  {
    names=$(field tests 5)
    if [[ -n $names ]]; then
      echo "GPU tests failing (logs: gpu_tests.log):"
      tr ';' '\n' <<<"$names" | sed 's/^/  /'
    fi
    notes=$([[ ! -f $results ]] || awk -F'\t' '$1 != "tests" && $5 != "" { print "  " $1 ": " $5 }' "$results")
    [[ -z $notes ]] || printf 'Notes:\n%s\n' "$notes"
    echo
    echo "Cortado on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1) (logs: $out/)." \
         "speed-up: Cortado over PyTorch, above 1 = Cortado faster. MiB: peak GPU memory of the process."
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
    local net iters mode limit
    for net in lenet cifar10_quick; do
      [[ -n $(field "$net.cortado" 2) ]] || continue
      iters=$([[ $net == lenet ]] && echo "$LENET_ITERS" || echo "$CIFAR_ITERS")
      for mode in graph eager; do
        if [[ $mode == graph ]]; then c=$(cell "$net.cortado"); else c=$(cell "$net.cortado-eager"); fi
        p=$(cell "$net.pytorch-$mode")
        v=- limit=''
        if [[ $mode == graph && $net == lenet && $iters == 10000 ]]; then limit=2.0; fi
        if [[ $mode == graph && $net == cifar10_quick && $iters == 5000 ]]; then limit=2.5; fi
        if [[ -n $limit ]]; then
          v=FAIL
          is_number "$c" && awk -v c="$c" -v l="$limit" 'BEGIN { exit !(c <= l) }' && v=PASS
        fi
        row "$net $iters it, $([[ $mode == graph ]] && echo 'CUDA graphs' || echo eager) (s)" "$c" "$p" "$(ratio "$p" "$c")" \
          "$(field "$net.cortado$([[ $mode == eager ]] && echo -eager)" 4)" "$(field "$net.pytorch-$mode" 4)" \
          "${limit:+Cortado <= $limit s}" "$v"
      done
    done
    local batch precision id
    for batch in 128 64; do
      for precision in tf32 fp32; do
        id="resnet50_b${batch}_$precision"
        [[ -n $(field "$id.cortado" 2) ]] || continue
        c=$(cell "$id.cortado")
        p=$(cell "$id.pytorch")
        v=-
        if [[ $id == resnet50_b128_tf32 ]]; then
          v=FAIL
          is_number "$c" && is_number "$p" && awk -v c="$c" -v p="$p" 'BEGIN { exit !(c >= p && c >= 1800) }' && v=PASS
        fi
        row "ResNet-50 b$batch ${precision^^} (img/s)" "$c" "$p" "$(ratio "$c" "$p")" "$(field "$id.cortado" 4)" \
          "$(field "$id.pytorch" 4)" "$([[ $id == resnet50_b128_tf32 ]] && echo '>= PyTorch and >= 1800')" "$v"
      done
    done
    local op copy_gbps
    copy_gbps=$(cell bw.copy)
    for op in "${BANDWIDTH_OPS[@]}"; do
      [[ -n $(field "bw.$op" 2) ]] || continue
      c=$(cell "bw.$op")
      v=FAIL
      is_number "$c" && is_number "$copy_gbps" && awk -v c="$c" -v r="$copy_gbps" 'BEGIN { exit !(c >= 0.8 * r) }' &&
        v=PASS
      row "$op, 256 MiB (GB/s; copy $copy_gbps)" "$c" - "$(ratio "$c" "$copy_gbps")" "$(field "bw.$op" 4)" - \
        ">= 0.80 of the copy" "$v"
    done
    local fails=0
    for v in "${verdicts[@]}"; do [[ $v == PASS ]] || fails=$((fails + 1)); done
    line "targets" "" "" "" "" "" "$((${#verdicts[@]} - fails)) of ${#verdicts[@]} met" \
      "$([[ $fails == 0 ]] && echo PASS || echo FAIL)"
  } | tee "$out/summary.txt"
  [[ $(tail -n 1 "$out/summary.txt") == *PASS ]]
}

# ---- main ---------------------------------------------------------------------------------------
if ((DRY_RUN)); then
  echo "gpu.sh --dry-run: what runs on the GPU machine, stage by stage; [budget] command > log."
  echo "Every command runs under timeout with its budget; a deadline of ${DEADLINE_S} s from the start caps them all."
fi
setup
for stage in "${stages[@]}"; do
  "stage_$stage"
done
if ((DRY_RUN)); then
  printf '\nSum of the budgets: %d s; the deadline (DEADLINE_S) stops it at %d s. Then the table (%s/summary.txt):\n' \
    "$total_budget" "$DEADLINE_S" "$out"
  note "targets: GPU tests all pass; compute-sanitizer no errors; LeNet, Cortado with graphs <= 2.0 s;"
  note "cifar10_quick <= 2.5 s; ResNet-50 TF32 batch 128 >= PyTorch's img/s and >= 1800 img/s;"
  note "ReLU, Scale, BatchNorm and the SGD update over 256 MiB >= 0.80 of the copy's GB/s"
  exit 0
fi
echo
summary || exit 1
