#!/usr/bin/env bash
# get_fashion_mnist.sh — Fashion-MNIST (Zalando; MNIST's format and sizes) into
# data/fashion_mnist/fashion_{train,test}_lmdb. The IDX files come from the Debian package
# dataset-fashion-mnist (/usr/share/datasets/fashion-mnist/*.gz), installed when missing; they are
# unpacked here and converted with convert_mnist_data from $CORTADO_BUILD_DIR (default build/), which
# must be built. Safe to run again: files and LMDBs already present are kept.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

package=dataset-fashion-mnist
src=/usr/share/datasets/fashion-mnist
dest="$REPO_ROOT/data/fashion_mnist"

if ! dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null | grep -qx installed; then
  log "installing $package"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$package" ||
    { as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$package"; }
fi

mkdir -p "$dest"
convert="$BUILD_DIR/tools/convert_mnist_data"
for split in train test; do
  prefix=train
  [[ "$split" == test ]] && prefix=t10k
  for kind in images-idx3 labels-idx1; do
    file="$dest/$prefix-$kind-ubyte"
    [[ -f "$file" ]] && continue
    [[ -f "$src/$prefix-$kind-ubyte.gz" ]] || die "$package has no $src/$prefix-$kind-ubyte.gz"
    gunzip -c "$src/$prefix-$kind-ubyte.gz" >"$file.tmp" && mv "$file.tmp" "$file"
  done
  db="$dest/fashion_${split}_lmdb"
  [[ -f "$db/data.mdb" ]] && continue
  [[ -x "$convert" ]] || die "$convert is not built (cmake --build ${BUILD_DIR#"$REPO_ROOT"/} --target convert_mnist_data)"
  log "converting Fashion-MNIST $split set to $db"
  rm -rf "$db" "$db.partial"  # written under a temporary name: an interrupted run leaves none behind
  "$convert" "$dest/$prefix-images-idx3-ubyte" "$dest/$prefix-labels-idx1-ubyte" "$db.partial" --backend=lmdb
  mv "$db.partial" "$db"
done
log "Fashion-MNIST is in $dest"
