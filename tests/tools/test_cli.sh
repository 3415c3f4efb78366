#!/bin/sh
# tests/tools/test_cli.sh — the in-tree `weft` program: every command runs,
# finds the built-in plugins, and its --json output parses.
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
echo "test_cli: all passed"
