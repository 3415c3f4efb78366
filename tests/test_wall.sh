#!/bin/sh
# tests/test_wall.sh — the wall between the core and the plugins, checked
# on the sources under plugins/: no plugin compiles a core source or
# includes a core header (no core/ path and no -I of core/ in a plugin's
# build rules, no #include of a header that only core/ has), and no plugin
# name uses the core's internal prefix `wf__` (a plugin's internals carry
# its own short prefix: cpu_, tfr_, csv_, ...). And the wall between the
# device plugins and the op plugins: no device plugin (plugins/devices/*)
# links a library of plugins/ops, compiles one of its sources, puts one of
# its directories on the include path, or includes one of its headers;
# what both sides must compute alike is plugins/numerics, which neither
# owns. Fails naming each breach.
top_srcdir=${top_srcdir:-.}
plugins=$top_srcdir/plugins
core=$top_srcdir/core
[ -d "$plugins" ] && [ -d "$core" ] || {
  echo "FAIL: no $plugins or $core"
  exit 99
}

status=0
breach() {
  echo "FAIL: $*"
  status=1
}

sources=$(mktemp) || exit 99
trap 'rm -f "$sources"' EXIT
find "$plugins" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \
  -o -name '*.cuh' -o -name '*.mk' -o -name '*.am' \) \
  ! -name '*.pb-c.[ch]' | sort >"$sources"
[ -s "$sources" ] || {
  echo "FAIL: no plugin sources under $plugins"
  exit 1
}

# 1. The core's internal prefix.
while IFS= read -r f; do
  grep -n 'wf__' "$f" /dev/null | head -n 5 | while IFS= read -r hit; do
    echo "FAIL: ${hit#$top_srcdir/}: the core's internal prefix wf__ in a plugin"
  done
  grep -q 'wf__' "$f" && status=1
done <"$sources"

# 2. Build rules that reach into core/: its sources or its headers.
while IFS= read -r f; do
  case $f in *.mk | *.am) ;; *) continue ;; esac
  if grep -nE '(^|[ 	=/(])core/|top_(src|build)dir\)/core' "$f" >/dev/null; then
    grep -nE '(^|[ 	=/(])core/|top_(src|build)dir\)/core' "$f" | while IFS= read -r hit; do
      echo "FAIL: ${f#$top_srcdir/}:$hit: a plugin's build rule reaches into core/"
    done
    status=1
  fi
done <"$sources"

# 3. #include "X" of a header that exists in core/ but not beside the
# including file, under plugins/ or in the SDK.
core_headers=$(find "$core" -name '*.h' -exec basename {} \; | sort -u)
while IFS= read -r f; do
  case $f in *.c | *.h | *.cu | *.cuh) ;; *) continue ;; esac
  grep -n '^[ 	]*#[ 	]*include[ 	]*"' "$f" | while IFS= read -r line; do
    inc=$(printf '%s\n' "$line" | sed 's/.*include[ 	]*"\([^"]*\)".*/\1/')
    base=$(basename "$inc")
    case $inc in
    *core/*)
      echo "FAIL: ${f#$top_srcdir/}:${line%%:*}: includes $inc from core/"
      echo x >>"$sources.bad"
      continue
      ;;
    esac
    printf '%s\n' "$core_headers" | grep -qx "$base" || continue
    [ -f "$(dirname "$f")/$inc" ] && continue
    [ -f "$top_srcdir/sdk/include/$inc" ] && continue
    [ -n "$(find "$plugins" -name "$base" | head -n 1)" ] && continue
    echo "FAIL: ${f#$top_srcdir/}:${line%%:*}: includes $inc, a core header"
    echo x >>"$sources.bad"
  done
done <"$sources"
if [ -f "$sources.bad" ]; then
  rm -f "$sources.bad"
  status=1
fi

# 4. Device plugins and the op plugins. Build rules (comments aside) that
# name anything under plugins/ops or an op plugin's make variables
# (OPS_*_HELPERS, plugins_ops_*); includes of a path through ops/ or of a
# header that only plugins/ops has (not beside the including file, not in
# plugins/numerics, not in the SDK).
ops=$plugins/ops
devices=$plugins/devices
if [ -d "$ops" ] && [ -d "$devices" ]; then
  ops_headers=$(find "$ops" -name '*.h' -exec basename {} \; | sort -u)
  ndev=0
  for f in $(find "$devices" -type f \( -name '*.mk' -o -name '*.am' \) |
    sort); do
    ndev=$((ndev + 1))
    hits=$(sed 's/#.*//' "$f" |
      grep -nE '(^|[^A-Za-z0-9_])(plugins/)?ops/|\$[({]OPS_|plugins_ops_')
    [ -z "$hits" ] && continue
    printf '%s\n' "$hits" | while IFS= read -r hit; do
      echo "FAIL: ${f#$top_srcdir/}:$hit: a device plugin's build rule uses plugins/ops"
    done
    status=1
  done
  for f in $(find "$devices" -type f \( -name '*.c' -o -name '*.h' \
    -o -name '*.cu' -o -name '*.cuh' \) | sort); do
    ndev=$((ndev + 1))
    grep -n '^[ 	]*#[ 	]*include[ 	]*["<]' "$f" | while IFS= read -r line; do
      inc=$(printf '%s\n' "$line" | sed 's/.*include[ 	]*["<]\([^">]*\)[">].*/\1/')
      base=$(basename "$inc")
      case $inc in
      ops/* | */ops/*)
        echo "FAIL: ${f#$top_srcdir/}:${line%%:*}: a device plugin includes $inc from plugins/ops"
        echo x >>"$sources.bad"
        continue
        ;;
      esac
      printf '%s\n' "$ops_headers" | grep -qx "$base" || continue
      [ -f "$(dirname "$f")/$inc" ] && continue
      [ -f "$plugins/numerics/$inc" ] && continue
      [ -f "$top_srcdir/sdk/include/$inc" ] && continue
      echo "FAIL: ${f#$top_srcdir/}:${line%%:*}: a device plugin includes $inc, a header of plugins/ops"
      echo x >>"$sources.bad"
    done
  done
  if [ -f "$sources.bad" ]; then
    rm -f "$sources.bad"
    status=1
  fi
  [ $status -eq 0 ] &&
    echo "device plugins apart from the op plugins: $ndev files checked"
fi

[ $status -eq 0 ] &&
  echo "the wall holds: $(wc -l <"$sources") plugin sources, none reaching into core/"
exit $status
