#!/bin/sh
# tests/abi/check_symbols.sh — the symbols libweft and every installed
# plugin export (nm -D --defined-only: functions and data, sorted) against
# the lists in tests/abi/symbols/ (libweft.txt, MODULE.txt per plugin), so
# that no export appears or disappears unnoticed. A difference fails with a
# diff naming the library.
#
#   check_symbols.sh            compare (what `make check` runs)
#   check_symbols.sh --update   rewrite the lists from the built libraries
#                               (what `make update-abi-symbols` runs)
#
# The installed plugins are those tests/abi/plugins.list names (made by
# tests/abi/local.mk from the Makefile). Names the toolchain adds by itself
# (_init, _end, sanitizer and coverage runtimes) are not part of the ABI and
# are left out.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
symdir=$top_srcdir/tests/abi/symbols
plugins=$top_builddir/tests/abi/plugins.list

update=0
case $1 in
--update) update=1 ;;
'') ;;
*)
  echo "usage: $0 [--update]" >&2
  exit 99
  ;;
esac

if ! command -v nm >/dev/null 2>&1; then
  echo "nm not found (Debian package binutils): skipping"
  exit 77
fi
if [ ! -f "$plugins" ]; then
  echo "FAIL: $plugins is missing (made by 'make check' from the Makefile)"
  exit 99
fi
libweft=$top_builddir/core/.libs/libweft.so
if [ ! -f "$libweft" ]; then
  echo "no $libweft: libweft was not built as a shared library; skipping"
  exit 77
fi

tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

# exports LIBRARY: "NAME function" or "NAME data" lines, sorted by name.
exports() {
  nm -D --defined-only "$1" >"$tmp/nm" 2>"$tmp/nm.err" || {
    echo "FAIL: nm -D --defined-only $1: $(cat "$tmp/nm.err")" >&2
    return 1
  }
  awk 'NF >= 3 {
         kind = ""
         if ($2 ~ /^[TtWwi]$/) kind = "function"
         else if ($2 ~ /^[DdBbRrVvGgSsu]$/) kind = "data"
         name = $3
         if (kind == "" || name ~ /^(_init|_fini|_edata|_end|__bss_start|_etext|__end__)$/ ||
             name ~ /^__(asan|ubsan|lsan|tsan|msan|sanitizer|gcov|llvm)_/)
           next
         print name, kind
       }' "$tmp/nm" | LC_ALL=C sort -u
}

status=0
checked=0

# check LIBRARY LIST: compares (or with --update, rewrites) one list.
check() {
  lib=$1
  list=$2
  exports "$lib" >"$tmp/got" || {
    status=1
    return
  }
  if [ ! -s "$tmp/got" ]; then
    echo "FAIL: $lib exports nothing (is it a weft library?)"
    status=1
    return
  fi
  if [ $update = 1 ]; then
    if [ -f "$list" ] && cmp -s "$list" "$tmp/got"; then
      echo "unchanged: $list"
    else
      if [ -f "$list" ]; then
        echo "updated: $list"
        diff -u "$list" "$tmp/got" | sed -n '3,$p' | grep '^[-+]'
      else
        echo "new: $list ($(wc -l <"$tmp/got") symbols)"
      fi
      cp "$tmp/got" "$list" || status=1
    fi
    return
  fi
  checked=$((checked + 1))
  if [ ! -f "$list" ]; then
    echo "FAIL: $lib has no symbol list $list"
    echo "  (a new library: create it with 'make update-abi-symbols')"
    status=1
    return
  fi
  if ! diff -u -L "$list (expected)" -L "$lib (built)" "$list" "$tmp/got" \
      >"$tmp/diff"; then
    removed=$(grep -c '^-[^-]' "$tmp/diff")
    added=$(grep -c '^+[^+]' "$tmp/diff")
    echo "FAIL: $lib does not export what $list lists:"
    echo "  $removed removed (-): in the list, gone from the library; removing or"
    echo "    renaming an export breaks what was built against it"
    echo "  $added added (+): new in the library; an intended addition, or a"
    echo "    symbol that lost its 'static' or its hidden visibility"
    sed 's/^/    /' "$tmp/diff"
    echo "  If the change is intended, run 'make update-abi-symbols' and"
    echo "  commit the list (see tests/abi/README.md for the version rules)."
    status=1
  fi
}

check "$libweft" "$symdir/libweft.txt"

# Each installed plugin: plugins/ops/math/ops_math.la is built as
# plugins/ops/math/.libs/ops_math.so and listed as ops_math.txt.
built=""
while IFS= read -r la; do
  [ -n "$la" ] || continue
  mod=$(basename "$la" .la)
  so=$top_builddir/$(dirname "$la")/.libs/$mod.so
  built="$built $mod "
  if [ ! -f "$so" ]; then
    echo "FAIL: the installed plugin $la was not built ($so is missing)"
    status=1
    continue
  fi
  check "$so" "$symdir/$mod.txt"
done <"$plugins"

# Lists of plugins this configuration does not build (an optional backend
# switched off) cannot be checked here; say so rather than pass silently.
for list in "$symdir"/*.txt; do
  [ -f "$list" ] || continue
  mod=$(basename "$list" .txt)
  [ "$mod" = libweft ] && continue
  case $built in
  *" $mod "*) ;;
  *) echo "note: $list: plugin $mod is not built in this configuration (not checked; delete the list if the plugin was removed)" ;;
  esac
done

[ $update = 1 ] || echo "checked the exports of $checked libraries"
exit $status
