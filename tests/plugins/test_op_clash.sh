#!/bin/sh
# tests/plugins/test_op_clash.sh — op names a third party cannot break: a
# plugin that defines MatMul differently from ops-math (test-clash, from
# tests/plugins/clash_matmul.c) is the one refused, whether it is found
# through $WEFT_PLUGIN_PATH or through the config's paths (both searched
# before the built-in plugins); the refusal names both plugins, `weft
# plugins` repeats it on stderr after the list, and with [plugins] strict it
# exits non-zero. Ops under a vendor domain (testvendor.Scale) load beside
# the built-in ones.
set -u
: "${top_builddir:=.}"
weft="$top_builddir/tools/weft"
fail() { echo "FAIL: $*" >&2; exit 1; }
# Absolute: the config's paths are relative to the config file.
libs=$(cd "$top_builddir/tests/plugins/.libs" 2>/dev/null && pwd) ||
  fail "no $top_builddir/tests/plugins/.libs: the test plugins are not built"
[ -f "$libs/clash_matmul.so" ] || fail "test plugin $libs/clash_matmul.so is not built"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-clash.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
unset WEFT_CONFIG
export WEFT_LOG_LEVEL=error

# state PLUGIN FILE: the "state:" line of PLUGIN in `weft plugins` output.
state() { awk -v p="$1" '/^[^ ]/ { in_p = ($1 == p) } in_p && $1 == "state:"' "$2"; }

check_refused() { # HOW: the clash plugin was found HOW; outputs in $tmp
  grep -q "state:    loaded" <<EOF2 || fail "$1: ops-math is not loaded:
$(cat "$tmp/out")"
$(state ops-math "$tmp/out")
EOF2
  s=$(state test-clash "$tmp/out")
  case $s in
  *refused*MatMul*ops-math*test-clash*) ;;
  *) fail "$1: test-clash is not refused naming MatMul, ops-math and itself: $s" ;;
  esac
  grep -q "WARNING: plugins were refused" "$tmp/err" &&
    grep -q "^  test-clash (.*clash_matmul.so).*MatMul" "$tmp/err" ||
    fail "$1: weft plugins does not repeat the refusal on stderr:
$(cat "$tmp/err")"
}

printf '[plugins]\n' >"$tmp/plain.conf"
WEFT_PLUGIN_PATH="$libs/clash_matmul.so" "$weft" --config "$tmp/plain.conf" \
  plugins >"$tmp/out" 2>"$tmp/err" || fail "weft plugins failed: $(cat "$tmp/err")"
check_refused "WEFT_PLUGIN_PATH"

# Found first of all, through the config's paths.
printf '[plugins]\npaths = %s\n' "$libs/clash_matmul.so" >"$tmp/paths.conf"
"$weft" --config "$tmp/paths.conf" plugins >"$tmp/out" 2>"$tmp/err" ||
  fail "weft plugins failed: $(cat "$tmp/err")"
check_refused "config paths"

# MatMul is still ops-math's: two inputs.
"$weft" --config "$tmp/paths.conf" ops MatMul >"$tmp/ops" 2>&1 ||
  fail "weft ops MatMul: $(cat "$tmp/ops")"
grep -q "ops-math" "$tmp/ops" && grep -q "^  *b " "$tmp/ops" ||
  fail "MatMul is not ops-math's two-input op:
$(cat "$tmp/ops")"

# strict: the refusal is an error naming both plugins.
printf '[plugins]\nstrict = true\npaths = %s\n' "$libs/clash_matmul.so" \
  >"$tmp/strict.conf"
if "$weft" --config "$tmp/strict.conf" plugins >"$tmp/out" 2>"$tmp/err"; then
  fail "weft plugins exits 0 under strict with a refused plugin"
fi
grep -q "ops-math" "$tmp/err" && grep -q "test-clash" "$tmp/err" ||
  fail "the strict error does not name both plugins: $(cat "$tmp/err")"

# A vendor domain avoids the clash: the ops load beside the built-in ones.
WEFT_PLUGIN_PATH="$libs/vendor_op.so" "$weft" --config "$tmp/plain.conf" \
  ops testvendor.Scale >"$tmp/ops" 2>&1 || fail "weft ops testvendor.Scale: $(cat "$tmp/ops")"
grep -q "test-vendor" "$tmp/ops" || fail "testvendor.Scale is not test-vendor's: $(cat "$tmp/ops")"
echo "test-clash refused in favour of ops-math; testvendor.Scale loads"
exit 0
