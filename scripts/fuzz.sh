#!/usr/bin/env bash
# fuzz.sh — the sanitizer and fuzzing leg (fuzz/README.md). Installs what is missing, builds
# build-fuzz/ with clang, AddressSanitizer, UBSan and libFuzzer's coverage (CPU only), then:
#   1. runs the sanitizer subset of the test suite under ASan and UBSan ($SANITIZER_TESTS, a CTest
#      regex: the tests of everything that reads a user's file, the tools end to end, and the fuzz
#      replays of every seed and regression input);
#   2. fuzzes each harness from its seeds in fuzz/corpus/ and its regressions in fuzz/regressions/,
#      in one of two ways:
#        by runs (the default, what CI runs): each harness makes the runs fuzz/ci_runs.txt gives
#          it (or --runs N) with libFuzzer's random seed fixed (--seed, default 1), without address
#          randomisation, in a PID namespace of its own and with the same arguments and environment
#          everywhere, from the committed inputs alone, in one fixed order, into a corpus made afresh
#          (/tmp/cortado_fuzz/runs/<harness>/): the same code gives the same table in any checkout
#          on any machine;
#        --seconds N (a developer's campaign): N seconds, unseeded, growing build-fuzz/corpus/ from
#          one campaign to the next.
#      New inputs never go into the checkout. A finding is saved as build-fuzz/findings/<harness>/
#      crash-* (or leak-, timeout-, oom-) and fails the run: keep it in fuzz/regressions/ with a fix.
# Ends with a table: per harness, executions, coverage (libFuzzer's cov and ft), corpus size and
# findings; the last line is "fuzz.sh: N harnesses, N findings, sanitizer tests: passed|failed|skipped".
#
# Usage: scripts/fuzz.sh [--runs N] [--seed S] [--seconds N] [--jobs N] [--no-tests] [--make-seeds] [HARNESS...]
#   HARNESS       only these (e.g. lmdb net_prototxt); default every fuzz/*_fuzzer.cpp
#   --runs N      N runs of every harness instead of fuzz/ci_runs.txt's
#   --seed S      libFuzzer's random seed for the runs (default 1)
#   --seconds N   fuzz each harness for N seconds instead (e.g. --seconds 600)
#   --jobs N      harnesses fuzzed at once (default: the number of cores)
#   --no-tests    skip step 1
#   --make-seeds  rewrite the generated seeds in fuzz/corpus/ (fuzz_make_seeds) and stop
# Environment: CORTADO_FUZZ_BUILD_DIR (default build-fuzz/).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$REPO_ROOT"

SANITIZER_TESTS='^(FuzzReplay|Mistakes|BadInput|FaultGuard|FaultGuardDeathTest|ChildProcess|EncodedImage|Lmdb|Leveldb|Prototxt|Upgrade|Hdf5|OnnxTools|Transformer|ConvertMnistData|ConvertImageset|ComputeImageMean|ExtractFeatures|ImageData|DataLayer|Net|Solver|Resume|TrainerCli|FlagMistakes)\.'

runs=0 seed=1 seconds=0 jobs=$JOBS run_tests=1 make_seeds=0 only=()
number() {  # number OPTION VALUE: VALUE if it is a whole number
  [[ "$2" =~ ^[0-9]+$ ]] || die "$1 needs a whole number, not '$2' (see the head of scripts/fuzz.sh)"
  echo "$2"
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs | --seed | --seconds | --jobs)  # then on to the option's own pattern
      (($# >= 2)) || die "$1 needs a value (see the head of scripts/fuzz.sh)" ;;&
    --runs) runs=$(number "$1" "$2"); shift 2 ;;
    --seed) seed=$(number "$1" "$2"); shift 2 ;;
    --seconds) seconds=$(number "$1" "$2"); shift 2 ;;
    --jobs) jobs=$(number "$1" "$2"); shift 2 ;;
    --no-tests) run_tests=0; shift ;;
    --make-seeds) make_seeds=1; shift ;;
    -*) die "unknown option $1 (see the head of scripts/fuzz.sh)" ;;
    *) only+=("$1"); shift ;;
  esac
done
((jobs > 0)) || die "--jobs needs at least 1"
known=(fuzz/*_fuzzer.cpp) && known=("${known[@]#fuzz/}") && known=("${known[@]%_fuzzer.cpp}")
for harness in "${only[@]}"; do
  [[ -f "fuzz/${harness}_fuzzer.cpp" ]] || die "no harness '$harness' (the harnesses: ${known[*]})"
done

"$REPO_ROOT/scripts/install_deps.sh"

# ---- build ------------------------------------------------------------------------------------
FUZZ_DIR="${CORTADO_FUZZ_BUILD_DIR:-$REPO_ROOT/build-fuzz}"
# The fuzzing build is configured, built and run through paths that are the same for every checkout:
# $FIXED_ROOT/src links to this checkout and $FIXED_ROOT/build to build-fuzz/. The compiler writes
# source paths into the executables (the sanitizers' metadata, lambdas' type names); their lengths
# would move every global that follows them, and so the addresses that libFuzzer's comparison
# tracing records, and a checkout in another folder would fuzz differently (fuzz/README.md). One
# fuzz.sh at a time holds $FIXED_ROOT, until it ends.
FIXED_ROOT=/tmp/cortado_fuzz
if ! { mkdir -p "$FIXED_ROOT" "$FUZZ_DIR" && exec 9>"$FIXED_ROOT/.lock"; }; then
  die "cannot write $FIXED_ROOT, where the fuzzing build's fixed paths are (another user's? remove it)"
fi
flock -n 9 || { log "waiting for another scripts/fuzz.sh, which holds $FIXED_ROOT"; flock 9; }
ln -sfn "$REPO_ROOT" "$FIXED_ROOT/src"
ln -sfn "$(cd "$FUZZ_DIR" && pwd -P)" "$FIXED_ROOT/build"
FIXED_BUILD="$FIXED_ROOT/build"
if [[ -f "$FUZZ_DIR/CMakeCache.txt" ]] &&
   ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$FIXED_ROOT/src" "$FUZZ_DIR/CMakeCache.txt"; then
  log "$FUZZ_DIR was configured through other paths: configuring it afresh"
  rm -rf "$FUZZ_DIR/CMakeCache.txt" "$FUZZ_DIR/CMakeFiles"
fi

log "configuring $FUZZ_DIR (clang, ASan, UBSan, libFuzzer) as $FIXED_BUILD"
# Only the test files of the sanitizer subset are built: the layers' numerics and the GPU comparisons
# are the ordinary build's (scripts/test.sh), and CI's time is better spent fuzzing.
CC=clang CXX=clang++ cmake -S "$FIXED_ROOT/src" -B "$FIXED_BUILD" -DCMAKE_BUILD_TYPE=Release -DCORTADO_USE_CUDA=OFF \
  -DCORTADO_USE_MPI=OFF -DCORTADO_USE_PYTHON=OFF -DCORTADO_SANITIZE=ON -DCORTADO_FUZZ=ON \
  -DCORTADO_TEST_FILTER="/tests/(core|data|io|net|solvers|tools)/" >"$FUZZ_DIR/configure.log" 2>&1 ||
  { cat "$FUZZ_DIR/configure.log"; die "configuring $FUZZ_DIR failed"; }
log "cmake --build $FIXED_BUILD -j$JOBS"
cmake --build "$FIXED_BUILD" -j"$JOBS"

if ((make_seeds)); then
  "$FUZZ_DIR/fuzz/fuzz_make_seeds" "$REPO_ROOT"
  exit 0
fi

# Any sanitizer report ends the process with an error; a leak is a finding too. Third-party
# libraries' own leaks at exit are listed in fuzz/lsan.supp. malloc returns null when memory runs out
# (as glibc's does), so a child process reading a file under its memory limit (child_process.hpp) sees
# libhdf5 refuse the file instead of the sanitizer ending it.
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:allow_user_segv_handler=1:handle_segv=1:handle_sigbus=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$REPO_ROOT/fuzz/lsan.supp:print_suppressions=0"

# ---- 1. the sanitizer subset of the test suite -------------------------------------------------
tests_result=skipped
if ((run_tests)); then
  log "sanitizer tests: ctest -R '$SANITIZER_TESTS'"
  if OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}" ctest --test-dir "$FIXED_BUILD" --output-on-failure -j"$JOBS" -R "$SANITIZER_TESTS" 2>&1 |
       tee "$FUZZ_DIR/sanitizer_tests.log" | grep -E '^(\s*[0-9]+/[0-9]+ Test|[0-9]+% tests passed|The following tests)' ; then
    :
  fi
  if grep -qE '^100% tests passed' "$FUZZ_DIR/sanitizer_tests.log"; then
    tests_result=passed
  else
    tests_result=failed
  fi
fi

# ---- 2. fuzzing ---------------------------------------------------------------------------------
harnesses=()
if [[ ${#only[@]} -gt 0 ]]; then
  harnesses=("${only[@]}")
else
  for source in fuzz/*_fuzzer.cpp; do
    name="$(basename "$source" .cpp)"
    harnesses+=("${name%_fuzzer}")
  done
fi

# libFuzzer's memory limits: -rss_limit_mb is watched by a thread of the fuzzing process and
# -malloc_limit_mb by a malloc hook, which a forked child inherits; the children that read files run
# under the product's own, smaller limit (child_process.hpp: 256 MiB plus what the file can hold,
# always under this one for inputs of a fuzzer's sizes), so it is the product's limit that a wild
# allocation in a child meets, and the child refuses the file.
fuzz_one() {  # fuzz_one HARNESS: fuzzes it; its log is build-fuzz/logs/HARNESS.log
  local harness="$1"
  local findings="$FUZZ_DIR/findings/$harness"
  mkdir -p "$findings" "$FUZZ_DIR/logs"
  local committed=("$REPO_ROOT/fuzz/corpus/$harness")
  [[ -d "$REPO_ROOT/fuzz/regressions/$harness" ]] && committed+=("$REPO_ROOT/fuzz/regressions/$harness")
  local limits=(-timeout=25 -rss_limit_mb=2560 -malloc_limit_mb=2560)
  if ((seconds > 0)); then
    local corpus="$FUZZ_DIR/corpus/$harness"
    mkdir -p "$corpus"
    "$FUZZ_DIR/fuzz/${harness}_fuzzer" "${limits[@]}" -artifact_prefix="$findings/" -print_final_stats=1 \
      -max_total_time="$seconds" "$corpus" "${committed[@]}" >"$FUZZ_DIR/logs/$harness.log" 2>&1 || true
    return
  fi
  # By runs: the process gets the same arguments and environment in any checkout on any machine
  # (see FIXED_NAMESPACE below), so everything it is given lies in $RUNS_ROOT/HARNESS/, a folder
  # of the same name everywhere: a copy of the executable (the process reads its own path from
  # /proc/self/exe, where a link would show the checkout's), the committed inputs copied to seeds/
  # under numbers, in one fixed order (a folder's order is the file system's) and listed in
  # seeds.list, a corpus made afresh in corpus/ and the findings in findings/ (moved to
  # build-fuzz/findings/).
  local run_dir="$RUNS_ROOT/$harness"
  rm -rf "$run_dir" && mkdir -p "$run_dir/seeds" "$run_dir/corpus" "$run_dir/findings"
  cp "$FUZZ_DIR/fuzz/${harness}_fuzzer" "$run_dir/${harness}_fuzzer"
  local file seed_path list=()
  while IFS= read -r file; do
    seed_path="$run_dir/seeds/$(printf '%05d' $((${#list[@]} + 1)))"
    cp "$file" "$seed_path"
    list+=("$seed_path")
  done < <(find "${committed[@]}" -type f | LC_ALL=C sort)
  (IFS=,; printf '%s' "${list[*]}") >"$run_dir/seeds.list"
  local harness_runs="$runs"
  if ((harness_runs == 0)); then
    harness_runs=$(awk -v h="$harness" '$1 == h { print $2 }' "$REPO_ROOT/fuzz/ci_runs.txt")
    harness_runs=${harness_runs:-1000}
  fi
  local fixed=()
  # shellcheck disable=SC2206  # the fixed-process commands are plain words
  # In its namespace each harness also gets a /dev/shm of its own: the OpenMP runtime (libomp) registers
  # itself in a shared-memory file named after the process id and the user, and two harnesses started
  # together, each pid 2 with the same addresses, could take each other's file for a second OpenMP
  # runtime in their own process and abort ("OMP: Error #15"; 7 of 20 simultaneous starts without it).
  [[ -n "$FIXED_NAMESPACE" ]] &&
    fixed+=($FIXED_NAMESPACE bash -c 'mount -t tmpfs -o size=16m,mode=1777 shm /dev/shm 2>/dev/null; "$@"; exit $?' "$harness")
  fixed+=(env -i PATH=/usr/local/bin:/usr/bin:/bin "ASAN_OPTIONS=$ASAN_OPTIONS" "UBSAN_OPTIONS=$UBSAN_OPTIONS"
    "LSAN_OPTIONS=suppressions=$RUNS_ROOT/lsan.supp:print_suppressions=0")
  # shellcheck disable=SC2206
  [[ -n "$FIXED_ADDRESSES" ]] && fixed+=($FIXED_ADDRESSES)
  # -reload=0: libFuzzer otherwise rereads its corpus folder every second, which runs inputs at
  # moments that depend on the clock.
  (cd "$run_dir" && "${fixed[@]}" "$run_dir/${harness}_fuzzer" "${limits[@]}" -print_final_stats=1 \
    -artifact_prefix="$run_dir/findings/" -runs="$harness_runs" -seed="$seed" -reload=0 \
    -seed_inputs=@"$run_dir/seeds.list" "$run_dir/corpus" >"$FUZZ_DIR/logs/$harness.log" 2>&1) || true
  find "$run_dir/findings" -type f -exec mv -t "$findings/" {} +
}
# A fixed number of runs gives the same table only if each run of an input covers the same edges and
# libFuzzer records the same comparisons for its mutations. What the process itself is reaches them:
#   addresses: libFuzzer's comparison tracing records pointer values (inline protobuf and std::string
#     code compares them as integers), so the runs are made without address randomisation
#     (setarch -R), and with the same arguments and environment everywhere, since their lengths move
#     the stack and the heap: paths in $RUNS_ROOT, and nothing of the caller's environment (env -i);
#   process ids (a reader's child, compared with what waitpid returns; a snapshot's temporary name):
#     each harness runs in a PID namespace of its own (unshare), where they are the same every time.
#     The harness is not the namespace's init (bash is), which the kernel would spare the signals a
#     finding raises.
RUNS_ROOT="$FIXED_ROOT/runs"
mkdir -p "$RUNS_ROOT"
cp "$REPO_ROOT/fuzz/lsan.supp" "$RUNS_ROOT/lsan.supp"
FIXED_ADDRESSES="" FIXED_NAMESPACE=""
if ((seconds == 0)); then
  if setarch "$(uname -m)" -R true 2>/dev/null; then
    FIXED_ADDRESSES="setarch $(uname -m) -R"
  else
    log "warning: setarch -R is refused here; the fuzzing table may differ from run to run"
  fi
  for namespace in "unshare --pid --fork --mount-proc" "unshare --user --map-root-user --pid --fork --mount-proc"; do
    # shellcheck disable=SC2086  # plain words
    if $namespace true 2>/dev/null; then
      FIXED_NAMESPACE="$namespace"
      break
    fi
  done
  [[ -n "$FIXED_NAMESPACE" ]] ||
    log "warning: unshare --pid is refused here; the fuzzing table may differ from run to run"
fi
export -f fuzz_one
export FUZZ_DIR REPO_ROOT RUNS_ROOT seconds runs seed FIXED_ADDRESSES FIXED_NAMESPACE

if ((seconds > 0)); then
  log "fuzzing ${#harnesses[@]} harnesses for ${seconds}s each, $jobs at a time"
else
  log "fuzzing ${#harnesses[@]} harnesses, $( ((runs > 0)) && echo "$runs runs each" || echo "the runs fuzz/ci_runs.txt gives each") with seed $seed, $jobs at a time"
fi
rm -rf "$FUZZ_DIR/findings"
printf '%s\n' "${harnesses[@]}" | xargs -P "$jobs" -I{} bash -c 'fuzz_one {}'

# ---- summary ------------------------------------------------------------------------------------
printf '\n%-18s %12s %8s %8s %8s %9s\n' harness executions cov ft corpus findings
total_findings=0
for harness in "${harnesses[@]}"; do
  log_file="$FUZZ_DIR/logs/$harness.log"
  runs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log_file" | tail -n 1 | grep -oE '[0-9]+$' || echo "?")
  done_line=$(grep -E '^#[0-9]+\s+(DONE|INITED|pulse|NEW|REDUCE)' "$log_file" | tail -n 1 || true)
  cov=$(grep -oE 'cov: [0-9]+' <<<"$done_line" | grep -oE '[0-9]+' || echo "?")
  ft=$(grep -oE 'ft: [0-9]+' <<<"$done_line" | grep -oE '[0-9]+' || echo "?")
  corp=$(grep -oE 'corp: [0-9]+' <<<"$done_line" | grep -oE '[0-9]+' || echo "?")
  found=$(find "$FUZZ_DIR/findings/$harness" -type f 2>/dev/null | wc -l)
  total_findings=$((total_findings + found))
  printf '%-18s %12s %8s %8s %8s %9s\n' "$harness" "$runs" "$cov" "$ft" "$corp" "$found"
  if ((found > 0)); then
    grep -m1 -E 'ERROR: |==[0-9]+==|Check failed|runtime error' "$log_file" | sed 's/^/    /' || true
    find "$FUZZ_DIR/findings/$harness" -type f | sed 's/^/    saved: /'
  fi
done
printf 'fuzz.sh: %d harnesses, %d findings, sanitizer tests: %s\n' "${#harnesses[@]}" "$total_findings" "$tests_result"
[[ "$tests_result" != failed && $total_findings -eq 0 ]]
