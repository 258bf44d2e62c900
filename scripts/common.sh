# common.sh — helpers shared by the scripts in this folder. Source it; don't run it.
#
#   REPO_ROOT      the checkout's root (the scripts cd there: prototxt paths are relative to it)
#   BUILD_DIR      the CMake build folder, $CORTADO_BUILD_DIR or build/
#   PYTHON         /usr/bin/python3: Debian's Python, which has python3-numpy and python3-torch
#                  (the pyenv python3 that may come first on PATH has neither)
#   as_root CMD    runs CMD as root (directly when root, else through sudo)
#   cortado_configure         configures BUILD_DIR (Release; CUDA on when nvcc is found)
#   cortado_build [TARGET...] builds BUILD_DIR with one job per core
#   cortado_prepare_mnist     fetches MNIST (data/get_mnist.sh) and converts it to LMDB, if missing
#   other_load                percent of all cores busy over one second (benchmarks warn when the
#                             machine is not idle: both sides' thread pools spin, so load distorts them)
# shellcheck shell=bash

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${CORTADO_BUILD_DIR:-$REPO_ROOT/build}"
# shellcheck disable=SC2034  # used by the scripts that source this file
PYTHON=/usr/bin/python3
JOBS="$(nproc)"

# The CUDA toolkit is installed under /usr/local/cuda without putting nvcc on PATH; CMake finds the
# CUDA compiler through PATH.
if [[ -x /usr/local/cuda/bin/nvcc && ":$PATH:" != *":/usr/local/cuda/bin:"* ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# For a script whose settings are environment variables: --help prints its header comment (the lines
# up to "set -euo"), and any other argument is refused, naming the settings to set instead.
#   settings_from_environment "NETS, BATCHES" "$@"
settings_from_environment() {
  local settings=$1 script=${BASH_SOURCE[1]}
  shift
  (($#)) || return 0
  if [[ $1 == -h || $1 == --help ]]; then
    sed -n '2,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "$script"
    exit 0
  fi
  die "$(basename "$script") takes no arguments, not '$1': set $settings in the environment (see --help)"
}

as_root() {
  if [[ "$(id -u)" -eq 0 ]]; then
    "$@"
  else
    sudo "$@"
  fi
}

# ---- build ------------------------------------------------------------------------------------

# Release unless CMAKE_BUILD_TYPE is set; CORTADO_USE_CUDA follows whether nvcc exists unless set;
# CUDA architectures: $CMAKE_CUDA_ARCHITECTURES or $CUDAARCHS if set, else what the cache already
# holds, else 90 (H100). Extra CMake arguments can be passed in $CORTADO_CMAKE_ARGS.
cortado_configure() {
  local cuda=OFF
  if command -v nvcc >/dev/null 2>&1; then
    cuda=ON
  fi
  cuda="${CORTADO_USE_CUDA:-$cuda}"
  local args=(-S "$REPO_ROOT" -B "$BUILD_DIR"
              -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}"
              -DCORTADO_USE_CUDA="$cuda")
  if [[ "$cuda" == ON ]]; then
    if [[ -n "${CMAKE_CUDA_ARCHITECTURES:-}" ]]; then
      args+=(-DCMAKE_CUDA_ARCHITECTURES="$CMAKE_CUDA_ARCHITECTURES")
    elif [[ -z "${CUDAARCHS:-}" ]] &&
         ! grep -q '^CMAKE_CUDA_ARCHITECTURES:' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
      args+=(-DCMAKE_CUDA_ARCHITECTURES=90)
    fi
  fi
  if [[ -n "${CORTADO_CMAKE_ARGS:-}" ]]; then
    local extra
    read -r -a extra <<<"$CORTADO_CMAKE_ARGS"
    args+=("${extra[@]}")
  fi
  log "cmake ${args[*]}"
  cmake "${args[@]}"
}

# shellcheck disable=SC2120  # the targets are optional
cortado_build() {
  local targets=()
  if [[ $# -gt 0 ]]; then
    targets=(--target "$@")
  fi
  log "cmake --build $BUILD_DIR -j$JOBS ${targets[*]}"
  cmake --build "$BUILD_DIR" -j"$JOBS" "${targets[@]}"
}

# The trainer a benchmark runs, in $trainer: built in $BUILD_DIR first unless BUILD=0 (configured
# if need be); a warning when that is not a Release build.
bench_trainer() {
  if [[ "${BUILD:-1}" != 0 ]]; then
    if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
      cortado_configure
    fi
    cortado_build trainer
  fi
  trainer="$BUILD_DIR/tools/trainer"
  [[ -x "$trainer" ]] || die "$trainer is not built"
  local build_type
  build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
  [[ "$build_type" == Release ]] || log "warning: $BUILD_DIR is a '$build_type' build, not Release"
}

# ---- data -------------------------------------------------------------------------------------

# data/mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte from data/get_mnist.sh (which keeps files
# already there), then data/mnist/mnist_{train,test}_lmdb with convert_mnist_data (BUILD_DIR/tools
# must be built); an LMDB that exists is kept. Each is written under a temporary name and renamed
# when complete, so an interrupted conversion leaves none behind.
cortado_prepare_mnist() {
  local dir="$REPO_ROOT/data/mnist"
  (cd "$REPO_ROOT" && bash data/get_mnist.sh)  # keeps files already there
  local convert="$BUILD_DIR/tools/convert_mnist_data" split prefix db
  for split in train test; do
    prefix=train
    [[ "$split" == test ]] && prefix=t10k
    db="$dir/mnist_${split}_lmdb"
    if [[ -f "$db/data.mdb" ]]; then
      continue
    fi
    [[ -x "$convert" ]] || die "$convert is not built"
    log "converting MNIST $split set to $db"
    rm -rf "$db" "$db.partial"
    "$convert" "$dir/$prefix-images-idx3-ubyte" "$dir/$prefix-labels-idx1-ubyte" "$db.partial" \
      --backend=lmdb
    mv "$db.partial" "$db"
  done
}

# Benchmarks' load accounting. While the runs go: all cores' busy and total time, and the CPU time of this shell's finished
# children (the runs), in clock ticks. Busy time that is not the runs' is other work.
cpu_sample() {  # -> "BUSY TOTAL CHILDREN"
  local c f stat total=0 i
  read -r -a c < <(grep '^cpu ' /proc/stat)
  for ((i = 1; i < ${#c[@]}; i++)); do
    total=$((total + c[i]))
  done
  stat=$(</proc/$$/stat)
  read -r -a f <<<"${stat##*) }"  # from field 3 (state) on: cutime is field 16, cstime 17
  echo "$((total - c[4] - c[5])) $total $((f[13] + f[14]))"
}
other_share() {  # other_share "SAMPLE_BEFORE" "SAMPLE_AFTER" -> percent of all cores used by other work
  local a b
  read -r -a a <<<"$1"
  read -r -a b <<<"$2"
  local total=$((b[1] - a[1])) other=$(( (b[0] - a[0]) - (b[2] - a[2]) ))
  echo $(( total > 0 && other > 0 ? 100 * other / total : 0 ))
}

other_load() {
  local a b
  read -r -a a < <(grep '^cpu ' /proc/stat)
  sleep 1
  read -r -a b < <(grep '^cpu ' /proc/stat)
  local idle=$(( (b[4] + b[5]) - (a[4] + a[5]) )) total=0 i
  for ((i = 1; i < ${#b[@]}; i++)); do
    total=$((total + b[i] - a[i]))
  done
  echo $(( total > 0 ? 100 * (total - idle) / total : 0 ))
}
