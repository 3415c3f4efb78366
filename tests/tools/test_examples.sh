#!/bin/sh
# tests/tools/test_examples.sh — the example programs run from the build
# tree and print the values worked out by hand in their comments.
set -eu
: "${top_builddir:=.}"
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$top_builddir/examples/hello_graph") || fail "hello_graph exited $?"
# x = [[1,2,3],[-1,0,1]], W = [[1,-1],[0.5,2],[-2,0.25]], b = [0.5,-1]:
# x W + b = [[-3.5, 2.75], [-2.5, 0.25]], relu -> [[0, 2.75], [0, 0.25]].
expected='y = relu(x W + b), x (2, 3), W (3, 2), b (2,):
  [ 0.0000  2.7500]
  [ 0.0000  0.2500]'
[ "$out" = "$expected" ] || fail "hello_graph printed:
$out"
echo "test_examples: all passed"
