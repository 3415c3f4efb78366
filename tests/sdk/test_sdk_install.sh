#!/bin/sh
# tests/sdk/test_sdk_install.sh — the SDK as a plugin author gets it. Installs
# this build tree into a temporary DESTDIR (`make install`), builds the two
# examples of sdk/examples/ against that tree through pkg-config alone
# (PKG_CONFIG_SYSROOT_DIR maps the configured prefix into it), runs their
# tests with LD_LIBRARY_PATH and WEFT_PLUGIN_PATH set, then installs the op
# plugin into the plugin directory and checks that `weft plugins` finds it
# there, and that a third-party plugin there defining ops-math's MatMul is
# refused in favour of ops-math. It writes only under a temporary directory (the source tree may be
# read-only, as in `make distcheck`); the examples are built with this
# build's compiler and flags (tests/sdk/build-env.sh).
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}

env_file=$top_builddir/tests/sdk/build-env.sh
if [ ! -f "$env_file" ]; then
  echo "FAIL: $env_file is missing (made by 'make check' from the Makefile)"
  exit 99
fi
. "$env_file"
if ! command -v pkg-config >/dev/null 2>&1; then
  echo "pkg-config not found (Debian package pkgconf): skipping"
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-sdk.XXXXXX") || exit 99
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
root=$tmp/root

fail() {
  echo "FAIL: $*"
  exit 1
}

# run LOG COMMAND...: runs the command with its output in $tmp/LOG, shown
# (the end of it) when it fails.
run() {
  log=$tmp/$1
  shift
  if ! "$@" >"$log" 2>&1; then
    tail -n 40 "$log"
    fail "$* (output above)"
  fi
}

# The nested makes must not inherit this make's jobserver or command-line
# variables.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

# ---- install into DESTDIR -------------------------------------------------
run install.log sh -c 'cd "$1" && $2 install DESTDIR="$3"' sh \
  "$top_builddir" "$MAKE" "$root"

pc=$(find "$root" -name weft-plugin.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pc" ] && [ -f "$(dirname "$pc")/weft.pc" ] ||
  fail "make install put no weft.pc and weft-plugin.pc under $root"
PKG_CONFIG_PATH=$(dirname "$pc")
PKG_CONFIG_SYSROOT_DIR=$root
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR

# pkgconf puts the sysroot in front of variables too, pkg-config does not.
in_root() {
  case $1 in
  "$root"/*) echo "$1" ;;
  *) echo "$root$1" ;;
  esac
}
libdir=$(in_root "$(pkg-config --variable=libdir weft)")
plugindir=$(in_root "$(pkg-config --variable=plugindir weft-plugin)")
[ -e "$libdir/libweft.so" ] ||
  fail "no libweft.so in $libdir (pkg-config's libdir of weft)"
# The installed plugins: modules in the plugin directory, unless configure
# linked them into libweft (--enable-static-plugins), which installs none.
if ! grep -q '^#define WF_STATIC_PLUGINS 1' "$top_builddir/config.h"; then
  ls "$plugindir"/*.so >/dev/null 2>&1 ||
    fail "no installed plugins in $plugindir (plugindir of weft-plugin)"
fi
# A static link against libweft.a with the plugins in it must name the
# plugin table: weft.pc says so to `pkg-config --static` (only then).
static_libs=$(pkg-config --static --libs weft) ||
  fail "pkg-config --static --libs weft failed"
case " $static_libs " in
*" -Wl,-u,lt_libweft_LTX_preloaded_symbols "*) has_u=yes ;;
*) has_u=no ;;
esac
if grep -q '^#define WF_STATIC_PLUGINS 1' "$top_builddir/config.h"; then
  [ $has_u = yes ] ||
    fail "pkg-config --static --libs weft lacks the plugin table flag: $static_libs"
else
  [ $has_u = no ] ||
    fail "pkg-config --static --libs weft names a plugin table this build lacks: $static_libs"
fi
[ -f "$(in_root "$(pkg-config --variable=includedir weft)")/weft/plugin.h" ] ||
  fail "weft/plugin.h is not installed under pkg-config's includedir"
[ -f "$(in_root "$(pkg-config --variable=includedir weft-plugin)")/weft/plugin_aux.h" ] ||
  fail "weft/plugin_aux.h (the helper layer) is not installed under pkg-config's includedir"
plugin_libs=$(pkg-config --libs weft-plugin) ||
  fail "pkg-config --libs weft-plugin failed"
case $plugin_libs in
*[!\ ]*) fail "weft-plugin.pc gives plugins libraries ($plugin_libs): they link none" ;;
esac
weft=$(find "$root" -type f -name weft -path '*/bin/*' | head -n 1)
[ -n "$weft" ] || fail "make install put no bin/weft under $root"

LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
WEFT_PLUGIN_PATH=$plugindir
export LD_LIBRARY_PATH WEFT_PLUGIN_PATH

# The examples' tests train small models with the installed plugins, which
# a configuration may leave out (configure --enable-plugins).
missing=
for p in ops-math ops-array ops-nn ops-state ops-random ops-train device-cpu; do
  "$weft" plugins 2>/dev/null | grep -A6 "^$p " | grep -q "state:    loaded" ||
    missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "this configuration installs no$missing (configure --enable-plugins): skipping"
  exit 77
fi

# ---- build and test the examples --------------------------------------------
cp -R "$top_srcdir/sdk/examples" "$tmp/examples" &&
  chmod -R u+w "$tmp/examples" ||
  fail "cannot copy $top_srcdir/sdk/examples to $tmp"

# mk EXAMPLE TARGET...: the example's own Makefile with this build's flags.
mk() {
  ex=$1
  shift
  run "$ex.$1.log" $MAKE -C "$tmp/examples/$ex" CC="$CC" CFLAGS="$CFLAGS" \
    CPPFLAGS="$CPPFLAGS" LDFLAGS="$LDFLAGS" ZDEFS="$PLUGIN_ZDEFS" "$@"
}

for ex in op_plugin reader_plugin; do
  mk "$ex" clean
  mk "$ex" all
  if command -v readelf >/dev/null 2>&1; then
    for so in "$tmp/examples/$ex"/*.so; do
      if readelf -d "$so" | grep NEEDED | grep -q libweft; then
        fail "$so links libweft: plugins reach the core only through the host table"
      fi
    done
  fi
  mk "$ex" check
  grep 'checks passed' "$tmp/$ex.check.log"
done

# ---- install the op plugin; `weft plugins` finds it there -----------------------
mk op_plugin install PLUGINDIR="$plugindir"
run plugins.log "$weft" plugins
awk -v dir="$plugindir" '
  /^[^ ]/ { inside = ($1 == "example-swish") }
  inside && $1 == "path:" && $2 == dir "/swish.so" { path = 1 }
  inside && $1 == "state:" && $2 == "loaded" { loaded = 1 }
  END { exit !(path && loaded) }' "$tmp/plugins.log" || {
  cat "$tmp/plugins.log"
  fail "weft plugins does not list example-swish loaded from $plugindir/swish.so"
}
echo "weft plugins: example-swish loaded from the installed plugin directory"

# ---- a third-party MatMul in the plugin directory loses to ops-math -------
# Its file sorts before every plugin of weft's, so it is looked at first;
# weft's own plugins are still registered first and it is the one refused.
clash=$top_builddir/tests/plugins/.libs/clash_matmul.so
if [ -f "$clash" ]; then
  cp "$clash" "$plugindir/aaa_clash.so" || fail "cannot copy $clash"
  chmod 755 "$plugindir/aaa_clash.so"
  run clash.log "$weft" plugins
  awk '
    /^[^ ]/ { name = $1 }
    name == "ops-math" && $1 == "state:" && $2 == "loaded" { math = 1 }
    name == "test-clash" && $1 == "state:" && $2 == "refused:" &&
      /ops-math/ { refused = 1 }
    END { exit !(math && refused) }' "$tmp/clash.log" || {
    cat "$tmp/clash.log"
    fail "a third-party MatMul in $plugindir displaced ops-math"
  }
  rm -f "$plugindir/aaa_clash.so"
  echo "weft plugins: ops-math kept MatMul; aaa_clash.so refused"
fi
exit 0
