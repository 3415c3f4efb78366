#!/bin/sh
# tests/dist/check_static_dist.sh — a custom distribution from end to end:
# a subset of the plugins, linked into libweft (sdk/DISTRIBUTING.md).
# In a temporary directory it
#  1. configures the sources with --enable-static-plugins --enable-static
#     --enable-plugins=$WF_SUBSET (the plugins the mlp needs) and
#     --without-cuda (the CUDA plugin would be a module beside them), builds,
#     and installs into a prefix there;
#  2. checks that the installed plugin directory holds no plugin and that the
#     installed `weft plugins` (WEFT_PLUGIN_PATH and WEFT_CONFIG unset) lists
#     exactly the subset, each "(preloaded)" and loaded;
#  3. trains the mlp with examples/train_fashion_static (libweft and its
#     plugins linked in with -static), copied out of the build tree, on
#     Fashion-MNIST for one epoch of 6000 images, and wants a test accuracy
#     of at least 0.75;
#  4. runs `make distcheck` of that configuration (the plugin options carry
#     over by themselves: Makefile.am; --without-cuda is passed on).
# It is minutes long, so `make check` does not run it.
#
#   tests/dist/check_static_dist.sh [SRCDIR]
#
# SRCDIR (default: the tree holding this script) is a git checkout (its
# files are copied and autogen.sh is run: automake builds no other
# directory from a source tree configured in place) or an unpacked release,
# unconfigured (built from a directory beside it). Environment: JOBS (make
# -j, default 2), TMPDIR, FASHION_MNIST (default
# /usr/share/datasets/fashion-mnist; without it step 3 is skipped, said so).
# Exit status 0 when all passed, 1 when a check failed (the directory is
# kept and named), 99 when it could not run.
set -eu

WF_SUBSET=ops/math,ops/array,ops/nn,ops/state,ops/random,ops/train,devices/cpu,readers/idx
jobs=${JOBS:-2}
data=${FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
srcdir=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
srcdir=$(cd "$srcdir" && pwd) || exit 99

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-static-dist.XXXXXX") || exit 99
passed=0
cleanup() {
  if [ $passed = 1 ]; then
    chmod -R u+w "$work" 2>/dev/null
    rm -rf "$work"
  else
    echo "check_static_dist: the work directory is kept: $work"
  fi
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*"
  exit 1
}

start=$(date +%s)
# step WHAT: says what comes next and how long the script has run.
step() {
  echo "check_static_dist: [$(($(date +%s) - start)) s] $*"
}

# run LOG COMMAND...: the command's output goes to $work/LOG, its end is
# shown when it fails.
run() {
  log=$work/$1
  shift
  if ! "$@" >"$log" 2>&1; then
    tail -n 60 "$log"
    fail "$* (the end of $log above)"
  fi
}

# The nested makes must not inherit a calling make's jobserver or variables.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES WEFT_PLUGIN_PATH WEFT_CONFIG

# ---- 1. configure, build, install ------------------------------------------
if git -C "$srcdir" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  step "copying the sources of $srcdir"
  mkdir "$work/src"
  (cd "$srcdir" && git ls-files -z --cached --others --exclude-standard |
    xargs -0 cp --parents -t "$work/src") || fail "cannot copy $srcdir"
  run autogen.log sh -c 'cd "$1" && ./autogen.sh' sh "$work/src"
  src=$work/src
elif [ -x "$srcdir/configure" ] && [ ! -f "$srcdir/config.status" ]; then
  src=$srcdir
else
  echo "$srcdir is neither a git checkout nor an unconfigured release" >&2
  exit 99
fi

mkdir "$work/build"
step "configuring --enable-static-plugins --enable-static --enable-plugins=$WF_SUBSET --without-cuda"
run configure.log sh -c 'cd "$1" && "$2/configure" --prefix="$3" \
  --enable-static-plugins --enable-static --enable-plugins="$4" \
  --without-cuda' sh "$work/build" "$src" "$work/prefix" "$WF_SUBSET"
step "building (make -j$jobs)"
run build.log make -C "$work/build" -j"$jobs"
run install.log make -C "$work/build" install

# ---- 2. the installed tree --------------------------------------------------
step "checking the installed tree"
plugindir=$work/prefix/lib/weft/plugins
if [ -d "$plugindir" ] && [ -n "$(ls -A "$plugindir")" ]; then
  fail "the installed plugin directory is not empty: $(ls "$plugindir")"
fi
LD_LIBRARY_PATH=$work/prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
  "$work/prefix/bin/weft" plugins --json >"$work/plugins.json" \
  2>"$work/plugins.err" || fail "installed weft plugins exited $?: $(cat "$work/plugins.err")"
python3 - "$work/plugins.json" "$WF_SUBSET" <<'EOF' || exit 1
import json, sys
plugins = json.load(open(sys.argv[1]))
# Directory ops/math holds plugin ops-math, devices/cpu device-cpu, ...
kinds = {"ops": "ops", "devices": "device", "readers": "reader"}
want = sorted(kinds[d.split("/")[0]] + "-" + d.split("/")[1]
              for d in sys.argv[2].split(","))
got = sorted(p["name"] for p in plugins
             if p["path"] == "(preloaded)" and p["state"] == "loaded")
other = [p for p in plugins if p["path"] not in ("(built in)", "(preloaded)")
         or p["state"] != "loaded"]
if got != want or other:
    print("FAIL: the installed weft plugins lists preloaded %s (wanted %s)"
          % (got, want))
    for p in other:
        print("  and %s %s %s %s" % (p["name"], p["path"], p["state"],
                                     p["reason"] or ""))
    sys.exit(1)
print("check_static_dist: installed weft lists %d preloaded plugins: %s"
      % (len(got), " ".join(got)))
EOF

# ---- 3. the statically linked mlp --------------------------------------------
if [ -f "$data/train-images-idx3-ubyte.gz" ]; then
  step "training the mlp with the statically linked example"
  mkdir "$work/run"
  cp "$work/build/examples/train_fashion_static" "$work/run/" ||
    fail "examples/train_fashion_static was not built"
  if ldd "$work/run/train_fashion_static" | grep -q libweft; then
    fail "train_fashion_static needs libweft.so: $(ldd "$work/run/train_fashion_static" | grep libweft)"
  fi
  out=$(cd "$work/run" && ./train_fashion_static --model mlp --epochs 1 \
    --limit 6000 --quiet --data "$data" 2>&1) ||
    fail "train_fashion_static exited $?: $out"
  echo "check_static_dist: $out"
  acc=$(echo "$out" | sed -n 's/^test accuracy \([0-9.]*\) .*/\1/p')
  [ -n "$acc" ] || fail "no test accuracy in: $out"
  awk -v a="$acc" 'BEGIN { exit !(a >= 0.75) }' ||
    fail "test accuracy $acc is below 0.75"
else
  echo "check_static_dist: no Fashion-MNIST under $data (Debian package dataset-fashion-mnist): the training run is skipped"
fi

# ---- 4. make distcheck of this configuration ---------------------------------
step "make distcheck"
run distcheck.log make -C "$work/build" -j"$jobs" distcheck \
  DISTCHECK_CONFIGURE_FLAGS=--without-cuda
grep -q "archives ready for distribution" "$work/distcheck.log" ||
  fail "make distcheck did not say its archives are ready"
grep -q "plugins are linked \.\.\. into libweft" "$work/distcheck.log" ||
  fail "make distcheck did not configure the plugins linked into libweft"

step "all passed"
passed=1
