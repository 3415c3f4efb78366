#!/bin/sh
# tests/tools/test_cli.sh — the in-tree `weft` program: every command runs,
# finds the built-in plugins, and its --json output parses; `weft ops
# --device` shows which kernel the config's [kernels] section lets win.
set -eu
: "${top_builddir:=.}"
weft="$top_builddir/tools/weft"
fail() { echo "FAIL: $*" >&2; exit 1; }
json_ok() { python3 -c 'import json,sys; json.load(sys.stdin)' || fail "$1: output is not JSON"; }

"$weft" --help | grep -q "plugins" || fail "weft --help does not list commands"
for c in version plugins ops devices; do
  "$weft" "$c" --help | grep -q "usage: weft $c" || fail "weft $c --help"
  "$weft" "$c" --json | json_ok "weft $c --json"
done
"$weft" version | grep -q "plugin ABI 1\." || fail "weft version"

# The built-in plugins are found in the build tree and loaded.
plugins=$("$weft" plugins)
for p in ops-math ops-array ops-nn device-cpu; do
  echo "$plugins" | grep -A6 "^$p " | grep -q "state:    loaded" ||
    fail "plugin $p is not listed as loaded:
$plugins"
done

# Transports and importers are counted with the rest (when built).
if echo "$plugins" | grep -q "^transport-mpi "; then
  echo "$plugins" | grep -A8 "^transport-mpi " |
    grep -q "registers: .*, 1 transports, 0 importers" ||
    fail "weft plugins does not count the mpi plugin's transport:
$plugins"
  "$weft" plugins --json | python3 -c '
import json, sys
p = [p for p in json.load(sys.stdin) if p["name"] == "transport-mpi"][0]
sys.exit(p["registers"]["transports"] != 1)' ||
    fail "weft plugins --json does not count the mpi plugin's transport"
fi

# Ops show their signature and the devices that have kernels for them.
"$weft" ops MatMul | grep -q "devices:  cpu" || fail "weft ops MatMul lacks cpu kernel"
"$weft" ops --device cpu Add | grep -q "\* reference" || fail "weft ops --device cpu Add"
"$weft" ops NoSuchOp 2>/dev/null && fail "weft ops NoSuchOp succeeded"
"$weft" devices | grep -q "^cpu:0" || fail "weft devices lacks cpu:0"

# Usage errors exit 2 with a message.
set +e
"$weft" frobnicate 2>/dev/null; [ $? -eq 2 ] || fail "unknown command should exit 2"
"$weft" --config /nonexistent/weft.conf plugins 2>&1 | grep -q "/nonexistent/weft.conf" ||
  fail "missing config file is not named"
set -e

# A bad config names file and line.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '[plugins]\nstrict = true\nbogus = 1\n' > "$tmp/bad.conf"
msg=$("$weft" --config "$tmp/bad.conf" plugins 2>&1) && fail "bad config accepted"
echo "$msg" | grep -q "bad.conf:3" || fail "bad config message lacks file:line: $msg"

# A config that denies a plugin: listed as denied, its ops gone.
printf '[plugins]\ndeny = ops-nn\n' > "$tmp/deny.conf"
"$weft" --config "$tmp/deny.conf" plugins | grep -A8 "^ops-nn" | grep -q "state:    denied" ||
  fail "denied plugin not shown as denied"
"$weft" --config "$tmp/deny.conf" ops Conv2D >/dev/null 2>&1 && fail "denied plugin's op still registered"

# [kernels]: `weft ops --device cpu` lists every op's kernels by priority,
# marks the chosen ones with the dtypes they are chosen for, and shows the
# kernels the config denies and why.
section() { awk -v op="$1" '/^[^ ]/ { p = ($1 == op); next } p'; }
all=$("$weft" ops --device cpu)
echo "$all" | section Conv2D | grep -q "^    \* loops/shallow .*; chosen for float32; declines some nodes$" ||
  fail "default Conv2D kernel is not loops/shallow, declining some nodes:
$(echo "$all" | section Conv2D)"
echo "$all" | section Conv2D | grep -q "^      loops/winograd .*; chosen for the nodes loops/shallow declines; declines some nodes$" ||
  fail "loops/winograd's Conv2D is not shown taking what loops/shallow declines:
$(echo "$all" | section Conv2D)"
echo "$all" | section Conv2D | grep -q "^      onednn/winograd .*; chosen for the nodes loops/shallow declines; declines some nodes$" ||
  fail "onednn/winograd's Conv2D is not shown taking what the plugin's loops decline:
$(echo "$all" | section Conv2D)"
echo "$all" | section Conv2D | grep -q "^      onednn .*; chosen for the nodes loops/shallow declines$" ||
  fail "onednn's Conv2D is not shown taking what the selective kernels decline:
$(echo "$all" | section Conv2D)"
echo "$all" | section Conv2D | grep -q "^    \* reference .*; chosen for float64$" ||
  fail "default Conv2D float64 kernel is not the reference"
printf '[kernels]\ndeny = onednn, openblas, winograd, shallow\n' > "$tmp/ref.conf"
all=$("$weft" --config "$tmp/ref.conf" ops --device cpu 2>"$tmp/ref.err")
[ -s "$tmp/ref.err" ] && fail "a config whose items all match warns: $(cat "$tmp/ref.err")"
for op in Conv2D MatMul Relu _FusedConv2D _FusedMatMul; do
  echo "$all" | section "$op" | grep -q "denied by config (\[kernels\] deny = onednn)" ||
    fail "$op's onednn kernel is not shown as denied:
$(echo "$all" | section "$op")"
  echo "$all" | section "$op" | grep -q "^    \* reference .*; chosen for float32" ||
    fail "$op's reference kernel is not shown as chosen"
done
echo "$all" | section Conv2D | grep "onednn" | grep -q "chosen" &&
  fail "a denied kernel is shown as chosen"
"$weft" --config "$tmp/ref.conf" ops Conv2D --device cpu --json | python3 -c '
import json, sys
ks = {k["label"]: k for k in json.load(sys.stdin)[0]["kernels"]}
assert ks["onednn"]["denied"] == "onednn" and ks["onednn"]["chosen_for"] is None, ks
assert ks["loops/winograd"]["denied"] == "winograd", ks
assert ks["loops/shallow"]["denied"] == "shallow", ks
assert ks["reference"]["denied"] is None, ks
assert ks["reference"]["chosen_for"] == "float32,float64", ks
' || fail "weft ops --json does not show the denied and the chosen kernel"
# Which kernels may write their output over their input.
"$weft" ops Relu --device cpu --json | python3 -c '
import json, sys
ks = {k["label"]: k for k in json.load(sys.stdin)[0]["kernels"]}
assert ks["onednn"]["in_place"] is True and ks["reference"]["in_place"] is False, ks
' || fail "weft ops --json does not show which kernels work in place"

# prefer ranks a kernel above higher priorities; OP:* denies all of an op's.
printf '[kernels]\nprefer = Relu:reference\ndeny = Conv2D:*\n' > "$tmp/op.conf"
"$weft" --config "$tmp/op.conf" ops Relu --device cpu |
  grep -q "^    \* reference .*preferred by config (\[kernels\] prefer = Relu:reference); chosen for float32" ||
  fail "preferred Relu kernel is not shown as chosen"
"$weft" --config "$tmp/op.conf" ops Conv2D | grep -q "devices:  cpu (every kernel denied by the config)" ||
  fail "weft ops Conv2D does not say every kernel is denied"
"$weft" --config "$tmp/op.conf" ops Conv2D --device cpu | grep -q "the config denies every kernel here" ||
  fail "weft ops Conv2D --device cpu does not say every kernel is denied"

# Items that match nothing are warned about with file and line; malformed
# ones are refused with file and line.
printf '[kernels]\ndeny = onedn\n' > "$tmp/typo.conf"
"$weft" --config "$tmp/typo.conf" ops MatMul --device cpu 2>&1 >/dev/null |
  grep -q "typo.conf:2: \[kernels\] deny item 'onedn' matches no kernel label" ||
  fail "an unknown kernel label is not reported with file and line"
printf '[kernels]\nprefer = reference\ndeny = Conv2D:\n' > "$tmp/bad.conf"
msg=$("$weft" --config "$tmp/bad.conf" ops 2>&1) && fail "malformed [kernels] item accepted"
echo "$msg" | grep -q "bad.conf:3: bad value 'Conv2D:' for deny in \[kernels\]" ||
  fail "malformed [kernels] item message: $msg"
echo "test_cli: all passed"
