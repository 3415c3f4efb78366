#!/bin/sh
# tests/tools/test_train.sh — end to end: the mlp of DESIGN.md trained for
# one epoch on 6,000 Fashion-MNIST samples reaches test accuracy >= 0.75.
set -eu
: "${top_builddir:=.}"
fail() { echo "FAIL: $*" >&2; exit 1; }
data=/usr/share/datasets/fashion-mnist
if [ ! -r "$data/train-images-idx3-ubyte.gz" ]; then
  echo "SKIP: $data is missing (Debian package dataset-fashion-mnist)"
  exit 77
fi
out=$("$top_builddir/examples/train_fashion" --model mlp --epochs 1 \
      --limit 6000 --quiet) || fail "train_fashion exited $?: $out"
echo "$out"
acc=$(echo "$out" | sed -n 's/^test accuracy \([0-9.]*\).*/\1/p')
[ -n "$acc" ] || fail "no accuracy in the output"
awk -v a="$acc" 'BEGIN { exit !(a >= 0.75) }' || fail "accuracy $acc < 0.75"
echo "test_train: accuracy $acc >= 0.75"
