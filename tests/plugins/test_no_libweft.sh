#!/bin/sh
# tests/plugins/test_no_libweft.sh — no plugin module links libweft: every
# built plugin (in-tree under plugins/, and the test plugins) is checked
# with `readelf -d`; a NEEDED entry naming libweft fails the test.
top_builddir=${top_builddir:-.}

if ! command -v readelf >/dev/null 2>&1; then
  echo "readelf not found (Debian package binutils): skipping"
  exit 77
fi

list=$(mktemp) || exit 99
trap 'rm -f "$list"' EXIT
find "$top_builddir/plugins" "$top_builddir/tests/plugins" \
  -path '*/.libs/*.so' -type f 2>/dev/null | sort >"$list"

# The test plugins are built before any test runs: finding none means this
# check would prove nothing.
if ! grep -q '/tests/plugins/.libs/good.so$' "$list"; then
  echo "FAIL: no built test plugins under $top_builddir/tests/plugins/.libs"
  exit 1
fi

status=0
checked=0
while IFS= read -r so; do
  if ! needed=$(readelf -d "$so" 2>&1); then
    echo "FAIL: readelf -d $so: $needed"
    status=1
    continue
  fi
  checked=$((checked + 1))
  if printf '%s\n' "$needed" | grep 'NEEDED' | grep -q 'libweft'; then
    echo "FAIL: $so needs libweft:"
    printf '%s\n' "$needed" | grep 'NEEDED' | grep 'libweft'
    status=1
  fi
done <"$list"
echo "checked $checked plugin modules"
exit $status
