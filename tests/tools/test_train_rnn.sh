#!/bin/sh
# tests/tools/test_train_rnn.sh — end to end: the GRU of train_fashion --model rnn
# trained for one epoch on 6,000 Fashion-MNIST samples reaches test accuracy
# >= 0.65 (about 0.72 measured; chance is 0.10). The full run's target,
# >= 0.85 after 3 epochs on all 60,000, takes too long for `make check`.
set -eu
: "${top_builddir:=.}"
fail() { echo "FAIL: $*" >&2; exit 1; }
data=/usr/share/datasets/fashion-mnist
if [ ! -r "$data/train-images-idx3-ubyte.gz" ]; then
  echo "SKIP: $data is missing (Debian package dataset-fashion-mnist)"
  exit 77
fi
out=$("$top_builddir/examples/train_fashion" --model rnn --epochs 1 \
      --limit 6000 --quiet) || fail "train_fashion --model rnn exited $?: $out"
echo "$out"
acc=$(echo "$out" | sed -n 's/^test accuracy \([0-9.]*\).*/\1/p')
[ -n "$acc" ] || fail "no accuracy in the output"
awk -v a="$acc" 'BEGIN { exit !(a >= 0.65) }' || fail "accuracy $acc < 0.65"
echo "test_train_rnn: accuracy $acc >= 0.65"
