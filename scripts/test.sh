#!/usr/bin/env bash
# test.sh — installs what is missing, builds build/ (Release; the GPU path too when nvcc is found) and
# runs the whole GoogleTest suite through CTest (after fetching MNIST into data/mnist, which the
# OpenCV interop test uses). Exits non-zero on any failure; the last line is
# "test.sh: N passed, N failed, N skipped".
#
# Environment: CORTADO_BUILD_DIR (default build/), CMAKE_BUILD_TYPE, CORTADO_USE_CUDA=ON|OFF,
# CMAKE_CUDA_ARCHITECTURES (default 90), CORTADO_CMAKE_ARGS (extra cmake arguments),
# CTEST_ARGS (extra ctest arguments, e.g. "-R Relu"), CORTADO_CPU_ENGINE (the suite's CPU engine:
# default onednn in a build with oneDNN, so no process spends its time timing convolution shapes and
# every run computes alike; the tests of the timing ask for auto themselves; im2col runs the suite
# without oneDNN), OMP_WAIT_POLICY (default passive: parallel test processes share the cores).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$REPO_ROOT"

stage=dependencies
start=$SECONDS
report_failure() {
  local rc=$?
  if ((rc != 0)); then
    printf 'test.sh: failed in %s after %ds (exit %d)\n' "$stage" $((SECONDS - start)) "$rc" >&2
  fi
}
trap report_failure EXIT

"$REPO_ROOT/scripts/install_deps.sh"

stage=configure
cortado_configure

stage=build
cortado_build  # every target
build_s=$((SECONDS - start))

if [[ -z "${CORTADO_CPU_ENGINE:-}" ]] && grep -q '^CORTADO_USE_ONEDNN:BOOL=ON' "$BUILD_DIR/CMakeCache.txt"; then
  export CORTADO_CPU_ENGINE=onednn
fi
log "CPU engine of the suite: ${CORTADO_CPU_ENGINE:-auto}"
# CTest runs $JOBS test processes at once, each with OpenMP threads for every core: threads that spin
# while they wait take the cores the other process needs (the full suite ran about 13 % slower).
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"

stage=data
cortado_prepare_mnist  # tests/compat/opencv_dnn_test.cpp trains and scores LeNet on MNIST
# tests/compat/mixed_precision_training_test.cpp trains a BatchNorm net on it in float, bf16 and fp16
bash "$REPO_ROOT/data/get_fashion_mnist.sh"

stage=tests
ctest_log="$BUILD_DIR/ctest.log"
read -r -a ctest_extra <<<"${CTEST_ARGS:-}"
set +e
ctest --test-dir "$BUILD_DIR" --output-on-failure --no-tests=error -j"$JOBS" "${ctest_extra[@]}" 2>&1 |
  tee "$ctest_log"
ctest_rc=${PIPESTATUS[0]}
set -e

# CTest's summary: "97% tests passed, 1 tests failed out of 40"; skipped tests are listed
# under "The following tests did not run:" and counted as passed in that line.
total=0 failed=0 skipped=0
if summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$ctest_log" | tail -n 1); then
  read -r failed total < <(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1 \2/' <<<"$summary")
fi
skipped=$(grep -cE '^[[:space:]]+[0-9]+ - .* \((Skipped|Disabled)\)$' "$ctest_log" || true)
passed=$((total - failed - skipped))

printf 'test.sh: build %ds, tests %ds, log %s\n' "$build_s" $((SECONDS - start - build_s)) "$ctest_log"
trap - EXIT
if ((ctest_rc != 0 && failed == 0)); then
  failed=1  # ctest failed without a summary (no tests found, a crash in discovery, ...)
fi
printf 'test.sh: %d passed, %d failed, %d skipped\n' "$passed" "$failed" "$skipped"
((ctest_rc == 0)) || exit "$ctest_rc"
