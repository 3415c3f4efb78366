#!/bin/sh
# tests/tools/test_train.sh — end to end: the mlp of DESIGN.md trained for
# one epoch on 6,000 Fashion-MNIST samples reaches test accuracy >= 0.75;
# training resumed from the first epoch's checkpoint ends where an
# uninterrupted two-epoch run does; the exported saved model runs under
# `weft run` (tests/core/test_saved_model checks its numbers).
set -eu
: "${top_builddir:=.}"
fail() { echo "FAIL: $*" >&2; exit 1; }
data=/usr/share/datasets/fashion-mnist
if [ ! -r "$data/train-images-idx3-ubyte.gz" ]; then
  echo "SKIP: $data is missing (Debian package dataset-fashion-mnist)"
  exit 77
fi
train="$top_builddir/examples/train_fashion"
weft="$top_builddir/tools/weft"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

out=$("$train" --model mlp --epochs 1 --limit 6000 --quiet \
      --checkpoints "$tmp/ckpt" --export "$tmp/model" \
      --sample "$tmp/sample.npy" --save-graph "$tmp/train.wfg" \
      2>"$tmp/train.err") ||
  fail "train_fashion exited $?: $out $(cat "$tmp/train.err")"
echo "$out"
cat "$tmp/train.err" >&2
# Every graph pass works on the layers' scoped graphs (a failed pass is
# only a warning, its change discarded).
! grep -q "graph pass .* failed" "$tmp/train.err" ||
  fail "a graph pass failed: $(grep "graph pass" "$tmp/train.err")"
acc=$(echo "$out" | sed -n 's/^test accuracy \([0-9.]*\).*/\1/p')
[ -n "$acc" ] || fail "no accuracy in the output"
awk -v a="$acc" 'BEGIN { exit !(a >= 0.75) }' || fail "accuracy $acc < 0.75"
echo "test_train: accuracy $acc >= 0.75"

# Resuming: one more epoch from the checkpoint against two in one go.
two=$("$train" --model mlp --epochs 2 --limit 6000 --quiet) ||
  fail "train_fashion (2 epochs) exited $?"
resumed=$("$train" --model mlp --epochs 2 --limit 6000 --quiet \
          --checkpoints "$tmp/ckpt" --resume) ||
  fail "train_fashion --resume exited $?: $resumed"
echo "$resumed"
echo "$resumed" | grep -q "^resumed from .*ckpt-0*94.safetensors" ||
  fail "did not resume from the end of the first epoch"
a2=$(echo "$two" | sed -n 's/^test accuracy \([0-9.]*\).*/\1/p')
ar=$(echo "$resumed" | sed -n 's/^test accuracy \([0-9.]*\).*/\1/p')
[ -n "$a2" ] && [ "$a2" = "$ar" ] ||
  fail "resumed run ends at accuracy '$ar', the uninterrupted one at '$a2'"
echo "test_train: resumed and uninterrupted runs both end at $a2"

# The saved model under `weft run`.
run=$("$weft" run "$tmp/model" --input image="$tmp/sample.npy" \
      --output "$tmp/pred") || fail "weft run exited $?: $run"
echo "$run"
for k in logits probabilities class; do
  [ -s "$tmp/pred/$k.npy" ] || fail "weft run wrote no $k.npy"
done
echo "$run" | grep -q "^class: int64 (8) " || fail "class is not 8 int64s"
# The saved model predicts what the session did for the same images.
want=$(echo "$out" | sed -n 's/.*the session predicts: \([0-9 ]*\)$/\1/p')
got=$(echo "$run" | sed -n 's/^class: .*\[\([0-9, ]*\)\]$/\1/p' | tr -d ',')
[ -n "$want" ] && [ "$want" = "$got" ] ||
  fail "weft run predicts '$got', the session predicted '$want'"
# ... and it is the trained model: most of the 8 labels (the sample and the
# training are fixed, so this does not vary between runs).
labels=$(echo "$out" | sed -n 's/.*their labels: \([0-9 ]*\); .*/\1/p')
right=$(awk -v a="$labels" -v b="$got" 'BEGIN { n = split(a, x, " ");
  split(b, y, " "); c = 0; for (i = 1; i <= n; i++) c += x[i] == y[i];
  print c }')
[ "$right" -ge 5 ] ||
  fail "the saved model gets $right of 8 sample labels right ($got vs $labels)"
echo "$run" | grep -q "^probabilities: float32 (8, 10) " ||
  fail "probabilities are not (8, 10) float32"
"$weft" run "$tmp/model" --show | grep -q "input  image" ||
  fail "weft run --show lists no image input"
if "$weft" run "$tmp/model" --input wrong="$tmp/sample.npy" \
     --output "$tmp/pred" 2>"$tmp/err"; then
  fail "weft run accepted an unknown input key"
fi
grep -q "no input 'wrong'" "$tmp/err" || fail "unclear error: $(cat "$tmp/err")"
echo "test_train: weft run on the saved model works"

# The training graph as a file: `weft graph` draws it before and after each
# pass for the training step.
"$weft" graph info "$tmp/train.wfg" | grep -q "IteratorGetNext" ||
  fail "weft graph info shows no IteratorGetNext"
fetch=$(echo "$out" | sed -n 's/^graph written to .* fetch \([^,]*\), target \(.*\))$/\1/p')
target=$(echo "$out" | sed -n 's/^graph written to .* fetch \([^,]*\), target \(.*\))$/\2/p')
"$weft" graph --dot-passes "$tmp/dots" "$tmp/train.wfg" --fetch "$fetch" \
  --target "$target" >/dev/null || fail "weft graph --dot-passes failed"
# Plugin passes are numbered on after the core's, in their order (ops-nn's
# fusion after whatever passes other plugins add before it).
after_fusion=$(ls "$tmp/dots/"*-after-fusion.dot 2>/dev/null | head -1)
[ -n "$after_fusion" ] && [ -s "$after_fusion" ] &&
  [ -s "$tmp/dots/04-after-arithmetic.dot" ] &&
  [ -s "$tmp/dots/99-partitioned.dot" ] ||
  fail "weft graph --dot-passes wrote no pass files"
echo "test_train: weft graph drew the saved training graph"
