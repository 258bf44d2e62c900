#!/usr/bin/env bash
# gpu.sh — on the GPU machine, in one run: Cortado and PyTorch (pytorch_reference.py, eager and
# whole-step CUDA graph, cudnn.benchmark on, data already on the GPU) training Caffe's LeNet
# (10,000 iterations, batch 64; Cortado reads the MNIST LMDB through its prefetcher) and
# cifar10_quick (5,000 iterations, batch 100, a CIFAR-shaped LMDB of generated images). Prints the
# training time (first iteration to the last, process start and set-up excluded), images/s, the
# peak GPU memory of each process (nvidia-smi, sampled every 50 ms, above the idle level) and the
# ratios; then `trainer time` on ResNet-50 at batch 32 (its per-layer table in resnet50_time.log).
# Cortado runs twice: with its steps replayed as CUDA graphs (the default) and eagerly
# (--cuda_graph=false). Logs go to $OUT (or build-gpu-bench/).
#
# Usage (GPU machine, repository root, .gpu/bundle.tar.gz made by scripts/bench/gpu_bundle.sh):
#   scripts/bench/gpu.sh            Environment: BUNDLE, LENET_ITERS, CIFAR_ITERS, GPU_TESTS=1 (also
#                                   run the GPU test suite, then compute-sanitizer memcheck and
#                                   racecheck over it, first), CORTADO_FLAGS (extra trainer flags)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BUNDLE="${BUNDLE:-.gpu/bundle.tar.gz}"
LENET_ITERS="${LENET_ITERS:-10000}"
CIFAR_ITERS="${CIFAR_ITERS:-5000}"
out="${OUT:-build-gpu-bench}"
mkdir -p "$out"
b=/tmp/cortado_bundle
rm -rf "$b" && mkdir -p "$b" && tar xzf "$BUNDLE" -C "$b"
export LD_LIBRARY_PATH="$b/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
PYTHON="${PYTHON:-python3}"

# ---- data ---------------------------------------------------------------------------------------
mkdir -p data/mnist data/cifar10
for f in "$b"/extra/mnist/*.gz; do
  target="data/mnist/$(basename "$f" .gz)"
  [[ -f "$target" ]] || gunzip -c "$f" >"$target"
done
for split in train t10k; do
  name=$([[ $split == t10k ]] && echo test || echo train)
  [[ -d "data/mnist/mnist_${name}_lmdb" ]] ||
    "$b/bin/convert_mnist_data" "data/mnist/$split-images-idx3-ubyte" "data/mnist/$split-labels-idx1-ubyte" \
      "data/mnist/mnist_${name}_lmdb" 2>>"$out/convert.log"
done
[[ -d data/cifar10/cifar10_train_lmdb ]] || cp -r "$b"/extra/cifar10/. data/cifar10/

if [[ "${GPU_TESTS:-0}" == 1 ]]; then
  # The tests find the repository and the tools here, not where they were built.
  export CORTADO_SOURCE_DIR="$PWD" CORTADO_TOOLS_DIR="$b/bin"
  "$b/bin/cortado_tests" --gtest_filter='*Gpu*:*GPU*' >"$out/gpu_tests.log" 2>&1 || true
  tail -n 5 "$out/gpu_tests.log"
  # compute-sanitizer (memcheck, racecheck of shared memory) over the training and layer GPU tests.
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [[ -x "$sanitizer" ]]; then
    for tool in memcheck racecheck; do
      "$sanitizer" --tool "$tool" --error-exitcode 9 "$b/bin/cortado_tests" \
        --gtest_filter='TrainingGpu*:DenseGpu*:NeuronGpu*:NormGpu*:LossGpu*:ZooGpu*:ConvFamilyGpu*:RecurrentGpu*' \
        >"$out/sanitizer_$tool.log" 2>&1 && echo "compute-sanitizer $tool: clean" ||
        { echo "compute-sanitizer $tool: errors (see sanitizer_$tool.log)"; grep -m 5 -E "^=+ (Invalid|Race|Error)" "$out/sanitizer_$tool.log"; }
    done
  fi
fi

# ---- measuring ----------------------------------------------------------------------------------
idle_mib=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -n 1)
# run_sampled LOG CMD...: runs CMD (stdout+stderr to LOG) while sampling GPU memory; prints the peak
# MiB above the idle level.
run_sampled() {
  local log=$1 samples
  shift
  samples=$(mktemp)
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 50 >"$samples" 2>/dev/null &
  local sampler=$!
  "$@" >"$log" 2>&1 || { kill "$sampler"; tail -n 20 "$log" >&2; echo "failed: $*" >&2; return 1; }
  kill "$sampler"; wait "$sampler" 2>/dev/null || true
  sort -n "$samples" | tail -n 1 | awk -v idle="$idle_mib" '{ print $1 - idle }'
  rm -f "$samples"
}

# Seconds between the glog timestamps of two log lines (the first matching each pattern).
log_span() {  # log_span LOG START_PATTERN END_PATTERN
  local t0 t1
  t0=$(grep -m1 -E "$2" "$1" | awk '{ print $2 }')
  t1=$(grep -m1 -E "$3" "$1" | awk '{ print $2 }')
  awk -v a="$t0" -v b="$t1" 'function s(t, p) { split(t, p, ":"); return p[1] * 3600 + p[2] * 60 + p[3] }
                             BEGIN { d = s(b) - s(a); if (d < 0) d += 86400; printf "%.3f", d }'
}

cortado_solver() {  # cortado_solver SOLVER ITERS -> a copy without tests and snapshots
  local solver
  solver="$out/$(basename "$1" .prototxt)_bench.prototxt"
  sed -e "s/^max_iter:.*/max_iter: $2/" -e 's/^test_interval:.*/test_interval: 100000000/' \
      -e 's/^snapshot:.*/snapshot: 0/' -e 's/^solver_mode:.*/solver_mode: GPU/' "$1" >"$solver"
  printf 'test_initialization: false\nsnapshot_after_train: false\n' >>"$solver"
  echo "$solver"
}

rows=()
bench_net() {  # bench_net NAME SOLVER ITERS BATCH
  local name=$1 iters=$3 batch=$4 solver mem secs
  solver=$(cortado_solver "$2" "$iters")
  # cortado: steps replayed as CUDA graphs (the default); cortado-eager: --cuda_graph=false
  for run in cortado cortado-eager; do
    local flags=${CORTADO_FLAGS:-}
    [[ $run == cortado-eager ]] && flags="$flags --cuda_graph=false"
    # shellcheck disable=SC2086
    mem=$(run_sampled "$out/${run}_$name.log" "$b/bin/trainer" train --solver="$solver" $flags)
    secs=$(log_span "$out/${run}_$name.log" '\] Solving ' 'Optimization Done')
    rows+=("$name $run $secs $(awk -v s="$secs" -v n="$iters" -v b="$batch" 'BEGIN { printf "%.0f", n * b / s }') $mem")
  done
  for mode in eager graph; do
    mem=$(run_sampled "$out/pytorch_${name}_$mode.log" "$PYTHON" scripts/bench/pytorch_reference.py \
            --net "$name" --mode "$mode" --iters "$iters")
    local result
    result=$(grep '^RESULT ' "$out/pytorch_${name}_$mode.log")
    secs=$(sed -E 's/.*train_s=([^ ]+).*/\1/' <<<"$result")
    rows+=("$name pytorch-$mode $secs $(sed -E 's/.*img_per_s=([^ ]+).*/\1/' <<<"$result") $mem")
  done
}

bench_net lenet models/mnist/lenet_solver.prototxt "$LENET_ITERS" 64
bench_net cifar10_quick models/cifar10/cifar10_quick_solver.prototxt "$CIFAR_ITERS" 100

# ResNet-50 (batch 32), trainer time's per-layer table on the GPU (issue: model zoo).
# force_backward: the deploy net has no loss, and a training step's cost includes every backward.
{ echo "force_backward: true"; sed '0,/^input_dim: 1$/s//input_dim: 32/' models/resnet/ResNet-50-deploy.prototxt; } \
  >"$out/resnet50_b32.prototxt"
"$b/bin/trainer" time --model="$out/resnet50_b32.prototxt" --gpu=0 --iterations=20 >"$out/resnet50_time.log" 2>&1 ||
  tail -n 5 "$out/resnet50_time.log"
grep -E "Average (Forward|Backward|Forward-Backward)|Total Time" "$out/resnet50_time.log" | sed 's/^.*\] //' || true

echo
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
printf '%-14s %-16s %10s %10s %12s %22s\n' net run "train s" "img/s" "peak MiB" "PyTorch s / Cortado s"
for row in "${rows[@]}"; do
  read -r net run secs rate mem <<<"$row"
  cortado_secs=$(printf '%s\n' "${rows[@]}" | awk -v n="$net" '$1 == n && $2 == "cortado" { print $3 }')
  printf '%-14s %-16s %10.3f %10s %12s %22s\n' "$net" "$run" "$secs" "$rate" "$mem" \
    "$(awk -v p="$secs" -v c="$cortado_secs" 'BEGIN { printf "%.2fx", p / c }')"
done | tee "$out/summary.txt"
