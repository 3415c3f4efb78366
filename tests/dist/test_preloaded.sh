#!/bin/sh
# tests/dist/test_preloaded.sh — a build with --enable-static-plugins, as
# `weft plugins --json` shows it: the plugins linked into libweft load with
# no plugin file anywhere, listed as "(preloaded)"; the config's deny and
# load lists apply to them; plugin files are still searched for other
# plugins; a file of a preloaded plugin's name is shadowed by it.
#
# tests/dist/preloaded.list (made by tests/dist/local.mk) names the module
# of each plugin linked into libweft, one a line. Not run by other builds.
set -eu
: "${top_builddir:=.}"
weft="$top_builddir/tools/weft"
list="$top_builddir/tests/dist/preloaded.list"

fail() {
  echo "FAIL: $*"
  exit 1
}

[ -f "$list" ] || {
  echo "FAIL: $list is missing (made by 'make check' from the Makefile)"
  exit 99
}
command -v python3 >/dev/null 2>&1 || {
  echo "python3 not found: skipping"
  exit 77
}
# The plugins' names: module ops_math is plugin ops-math.
names=$(sed 's|.*/||; s|\.la$||; s|_|-|g' "$list")
[ -n "$names" ] || {
  echo "no plugin is linked into libweft in this configuration: skipping"
  exit 77
}
first=$(echo "$names" | head -n 1)
first_la=$(head -n 1 "$list")
first_so=$top_builddir/$(dirname "$first_la")/.libs/$(basename "$first_la" .la).so
good_so=$top_builddir/tests/plugins/.libs/good.so

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-preloaded.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
unset WEFT_PLUGIN_PATH WEFT_CONFIG

# conf NAME LINES...: a config that searches no directory unless told.
conf() {
  f=$tmp/$1.conf
  shift
  {
    printf '[plugins]\nuse_default_dir = false\nuse_env_path = false\n'
    for line in "$@"; do printf '%s\n' "$line"; done
  } >"$f"
  echo "$f"
}

# check CONFIG WHAT EXPECT: runs `weft --config CONFIG plugins --json` and
# the Python expression EXPECT over `by` (the plugins by name: lists of
# entries) and `names` (the plugins expected preloaded).
check() {
  out=$tmp/plugins.json
  "$weft" --config "$1" plugins --json >"$out" 2>"$tmp/stderr" ||
    fail "$2: weft plugins exited $?: $(cat "$tmp/stderr")"
  NAMES="$names" python3 - "$out" "$2" "$3" <<'EOF' || exit 1
import json, os, sys
path, what, expect = sys.argv[1:]
plugins = json.load(open(path))
by = {}
for p in plugins:
    by.setdefault(p["name"], []).append(p)
names = os.environ["NAMES"].split()
def pre(name, state):
    return any(p["path"] == "(preloaded)" and p["state"] == state
               for p in by.get(name, []))
if not eval("(" + expect + ")"):
    print("FAIL: %s: %s is false in:" % (what, expect))
    for p in plugins:
        print("  %s  %s  %s  %s" % (p["name"], p["path"], p["state"],
                                    p["reason"] or ""))
    sys.exit(1)
EOF
  [ -s "$tmp/stderr" ] && fail "$2: weft warned: $(cat "$tmp/stderr")"
  echo "ok: $2"
}

check "$(conf none 'strict = true')" "no plugin file searched" \
  'all(pre(n, "loaded") for n in names) and
   all(p["path"] in ("(built in)", "(preloaded)") for p in plugins)'

check "$(conf deny "deny = $first")" "deny list" \
  'pre(names[0], "denied") and all(pre(n, "loaded") for n in names[1:])'

check "$(conf load "load = $first")" "load list" \
  'pre(names[0], "loaded") and
   all(pre(n, "denied") and "load list" in by[n][0]["reason"]
       for n in names[1:])'

# Plugin files are still found: a test plugin from a config path.
[ -f "$good_so" ] || fail "$good_so was not built"
check "$(conf extra "paths = $good_so")" "a plugin file beside them" \
  'all(pre(n, "loaded") for n in names) and
   any(p["state"] == "loaded" and p["path"].endswith("/good.so")
       for p in by.get("test-good", []))'

# The module of a preloaded plugin (built for make check) is shadowed, and
# says so on stderr: only that is expected there.
[ -f "$first_so" ] || fail "$first_so was not built"
out=$tmp/plugins.json
"$weft" --config "$(conf shadow "paths = $first_so")" plugins --json \
  >"$out" 2>"$tmp/stderr" || fail "shadowed: weft plugins exited $?"
grep -q "shadowed by (preloaded)" "$tmp/stderr" ||
  fail "shadowed: no warning naming the preloaded plugin: $(cat "$tmp/stderr")"
NAMES="$names" python3 - "$out" "$first" <<'EOF' || exit 1
import json, os, sys
plugins = json.load(open(sys.argv[1]))
mine = [p for p in plugins if p["name"] == sys.argv[2]]
ok = (len(mine) == 2 and
      any(p["path"] == "(preloaded)" and p["state"] == "loaded"
          for p in mine) and
      any(p["path"].endswith(".so") and p["state"] == "refused" and
          "shadowed by (preloaded)" in p["reason"] for p in mine))
if not ok:
    print("FAIL: shadowed: %s is listed as %s" % (sys.argv[2], json.dumps(mine)))
    sys.exit(1)
EOF
echo "ok: a file of a preloaded plugin's name is shadowed"
echo "test_preloaded: all passed"
