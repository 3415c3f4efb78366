#!/bin/sh
# tests/tools/test_graph_cli.sh — `weft graph` on a training graph file
# (written by test_graph_cli_fixture): info (text and JSON), dump, --dot,
# --dot-passes, a config that lacks a plugin, damaged files and usage
# errors.
set -eu
: "${top_builddir:=.}"
weft="$top_builddir/tools/weft"
fixture="$top_builddir/tests/tools/test_graph_cli_fixture"
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$fixture" "$tmp/g.wfg" > "$tmp/names" || fail "the fixture could not write a graph"
name() { sed -n "s/^$1=//p" "$tmp/names"; }
loss=$(name loss)
train=$(name train)
[ -n "$loss" ] && [ -n "$train" ] || fail "fixture names missing: $(cat "$tmp/names")"

"$weft" graph --help | grep -q "usage: weft graph" || fail "weft graph --help"
"$weft" --help | grep -q "graph" || fail "weft --help does not list graph"

# info: header, op histogram with plugins, devices, variables.
info=$("$weft" graph info "$tmp/g.wfg") || fail "weft graph info exited $?"
echo "$info" | grep -q "^format version:  1 " || fail "info lacks the format version:
$info"
echo "$info" | grep -q "^producer:        weft " || fail "info lacks the producer"
echo "$info" | grep -Eq "^ +[0-9]+ +MatMul +ops-math$" || fail "info lacks MatMul from ops-math:
$info"
echo "$info" | grep -Eq "^ +[0-9]+ +cpu:0$" || fail "info lacks the cpu:0 request"
echo "$info" | grep -Eq "^  dense/kernel +float32 +\(12, 16\)" || fail "info lacks variable dense/kernel (12, 16):
$info"
nodes=$(echo "$info" | sed -n 's/^nodes: *//p')

# info --json agrees with the text and with dump.
"$weft" graph info "$tmp/g.wfg" --json > "$tmp/info.json" || fail "info --json"
python3 - "$tmp/info.json" "$nodes" <<'PY' || fail "info --json is wrong"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["format_version"] == 1 and j["min_reader_version"] == 1, j
assert j["nodes"] == int(sys.argv[2]), (j["nodes"], sys.argv[2])
assert sum(j["ops"].values()) == j["nodes"]
assert j["ops"]["MatMul"] >= 2 and j["devices"]["cpu:0"] >= 1
kernel = [v for v in j["variables"] if v["name"] == "dense/kernel"]
assert kernel and kernel[0]["shape"] == [12, 16] and kernel[0]["dtype"] == "float32"
PY

# dump: one block per node with its inputs, device and attributes.
"$weft" graph dump "$tmp/g.wfg" > "$tmp/dump" || fail "weft graph dump"
blocks=$(grep -Ec '^[^ #].* = [A-Za-z_]+$' "$tmp/dump" || true)
[ "$blocks" -eq "$nodes" ] || fail "dump has $blocks node blocks, info says $nodes nodes"
grep -q "^x = Placeholder$" "$tmp/dump" || fail "dump lacks x"
grep -q "^  attr shape = (8, 12)$" "$tmp/dump" || fail "dump lacks x's shape"
grep -q "^  inputs: x:0, " "$tmp/dump" || fail "dump lacks a node reading x"
grep -q "^  device: cpu:0$" "$tmp/dump" || fail "dump lacks the device request"
grep -q "^  control inputs: " "$tmp/dump" || fail "dump lacks control inputs"
grep -q "^  outputs: float32 (8, 16)$" "$tmp/dump" || fail "dump lacks inferred shapes"

# --dot, into a file and on stdout.
"$weft" graph --dot "$tmp/g.wfg" -o "$tmp/g.dot" || fail "weft graph --dot -o"
head -1 "$tmp/g.dot" | grep -q "^digraph weft" || fail "--dot -o wrote no graph"
"$weft" graph --dot "$tmp/g.wfg" | head -1 | grep -q "^digraph weft" ||
  fail "--dot wrote no graph on stdout"
[ "$(grep -c '\[label=' "$tmp/g.dot")" -ge "$nodes" ] || fail "--dot lacks nodes"

# --dot-passes: before and after the passes of one signature.
out=$("$weft" graph --dot-passes "$tmp/passes" "$tmp/g.wfg" --fetch "$loss" \
      --feed x --feed labels --target "$train") || fail "--dot-passes exited $?"
[ -s "$tmp/passes/00-graph.dot" ] || fail "--dot-passes wrote no 00-graph.dot"
[ -s "$tmp/passes/99-partitioned.dot" ] || fail "--dot-passes wrote no 99-partitioned.dot"
grep -q "subgraph cluster_" "$tmp/passes/99-partitioned.dot" ||
  fail "the partitioned graph has no device cluster"
echo "$out" | grep -q "99-partitioned.dot" || fail "--dot-passes does not list its files"
set +e
msg=$("$weft" graph --dot-passes "$tmp/p2" "$tmp/g.wfg" --fetch nosuch:0 2>&1)
[ $? -eq 1 ] || fail "--fetch of a missing node should exit 1"
set -e
echo "$msg" | grep -q "nosuch" || fail "a missing fetch is not named: $msg"

# A runtime without the plugin of some ops: the file, a node, its op and
# the plugin are named, and info still says what the file is.
printf '[plugins]\ndeny = ops-nn\n' > "$tmp/deny.conf"
set +e
msg=$("$weft" --config "$tmp/deny.conf" graph info "$tmp/g.wfg" 2>&1)
rc=$?
set -e
[ $rc -eq 1 ] || fail "a graph with unregistered ops gave exit $rc"
echo "$msg" | grep -q "graph file '$tmp/g.wfg': node '.*' (op '.*')" ||
  fail "the missing op's node is not named: $msg"
echo "$msg" | grep -q "plugin 'ops-nn'" || fail "the missing plugin is not named: $msg"
echo "$msg" | grep -q "format version 1" || fail "info says nothing of the file: $msg"
# --config after the command works too.
"$weft" graph dump "$tmp/g.wfg" --config "$tmp/deny.conf" >/dev/null 2>&1 &&
  fail "--config after the command was ignored"

# Damaged files: truncated, not a graph, missing.
size=$(wc -c < "$tmp/g.wfg")
head -c $((size - 7)) "$tmp/g.wfg" > "$tmp/cut.wfg"
printf 'weft? no, just some text that is not a graph file\n' > "$tmp/text.wfg"
for f in cut text missing; do
  set +e
  msg=$("$weft" graph dump "$tmp/$f.wfg" 2>&1 >/dev/null)
  rc=$?
  set -e
  [ $rc -eq 1 ] || fail "dump of $f.wfg gave exit $rc"
  echo "$msg" | grep -q "graph file '$tmp/$f.wfg'" || fail "$f.wfg is not named: $msg"
done
"$weft" graph info "$tmp/cut.wfg" 2>&1 | grep -q "byte [0-9]" ||
  fail "a truncated file does not say where"

# Usage errors exit 2.
for args in "" "frob $tmp/g.wfg" "info" "info $tmp/g.wfg extra" \
            "info $tmp/g.wfg -o x.dot" "dump $tmp/g.wfg --json" \
            "--dot-passes $tmp/p3 $tmp/g.wfg" "--dot $tmp/g.wfg --fetch x" \
            "info $tmp/g.wfg --bogus"; do
  set +e
  # shellcheck disable=SC2086
  "$weft" graph $args >/dev/null 2>&1
  rc=$?
  set -e
  [ $rc -eq 2 ] || fail "weft graph $args: exit $rc, not 2"
done
echo "test_graph_cli: all passed"
