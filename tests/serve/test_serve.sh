#!/bin/sh
# tests/serve/test_serve.sh — `weft serve` over loopback HTTP
# (tests/serve/test_serve.py does the work).
set -eu
: "${top_builddir:=.}" "${top_srcdir:=.}"
weft="$top_builddir/tools/weft"
if "$weft" serve 2>&1 | grep -q "built without libmicrohttpd"; then
  echo "SKIP: weft serve is not built (Debian package libmicrohttpd-dev)"
  exit 77
fi
# libmicrohttpd is opened when a server starts (lib/serve/mhd_lazy.h): the
# program does not link it, so no other command maps it and GnuTLS.
prog="$top_builddir/tools/.libs/weft"
[ -x "$prog" ] || prog="$weft"
if command -v readelf >/dev/null &&
  readelf -d "$prog" | grep -q 'NEEDED.*libmicrohttpd'; then
  echo "FAIL: $prog links libmicrohttpd"
  exit 1
fi
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
exec python3 "$top_srcdir/tests/serve/test_serve.py" "$weft" \
  "$top_builddir/tests/serve/make_model"
