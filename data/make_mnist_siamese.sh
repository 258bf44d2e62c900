#!/usr/bin/env bash
# make_mnist_siamese.sh — the pair databases of Caffe's siamese example (create_mnist_siamese.sh):
# data/mnist_siamese/mnist_siamese_{train,test}_leveldb, written by convert_mnist_siamese_data from
# data/mnist's IDX files (fetched with data/get_mnist.sh when missing) — the paths of models/siamese/.
# Deterministic (the tool's default --seed). Safe to run again: a database that exists is kept; each is
# written under a temporary name and renamed when complete.
#
# Usage: data/make_mnist_siamese.sh
# Environment: CORTADO_TOOLS, the folder with convert_mnist_siamese_data (default build/tools).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mnist="$here/mnist"
dest="$here/mnist_siamese"
tools="${CORTADO_TOOLS:-$here/../build/tools}"
convert="$tools/convert_mnist_siamese_data"

bash "$here/get_mnist.sh"  # keeps files already there
[[ -x "$convert" ]] || { echo "make_mnist_siamese.sh: $convert is not built" >&2; exit 1; }
mkdir -p "$dest"
for split in train test; do
  prefix=train
  [[ "$split" == test ]] && prefix=t10k
  db="$dest/mnist_siamese_${split}_leveldb"
  if [[ -f "$db/CURRENT" ]]; then
    echo "$db is already there"
    continue
  fi
  rm -rf "$db" "$db.partial"
  "$convert" "$mnist/$prefix-images-idx3-ubyte" "$mnist/$prefix-labels-idx1-ubyte" "$db.partial" \
    --backend=leveldb
  mv "$db.partial" "$db"
done
echo "MNIST siamese pairs are in $dest"
