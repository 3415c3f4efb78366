#!/bin/sh
# tests/python/test_python.sh — the Python package against this build:
# installs python/ with pip into a temporary virtual environment (pip's
# PEP 517 build, libweft found by pkg-config through sdk/weft-uninstalled.pc,
# no network: setuptools, NumPy and pytest come from Debian's packages
# through --system-site-packages) and runs the pytest suite of python/tests
# with that environment's interpreter. Fails when pytest fails or collects
# nothing. In a sanitizer build the extension is built with the same
# flags and the ASan runtime is preloaded into Python.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
top_srcdir=$(cd "$top_srcdir" && pwd)
top_builddir=$(cd "$top_builddir" && pwd)
# Debian's interpreter, whatever else is on PATH (pyenv, /usr/local).
PY=${WEFT_TEST_PYTHON:-/usr/bin/python3}

if ! "$PY" -c 'import numpy, pytest, venv, setuptools, wheel' 2>/dev/null
then
  echo "test_python: $PY lacks numpy, pytest, venv, setuptools or wheel" \
       "(Debian: python3-numpy python3-pytest python3-venv" \
       "python3-setuptools python3-wheel; bash .ci/setup installs them)" >&2
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-python.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

# The compiler flags of this build (a sanitizer build's included).
if [ -f "$top_builddir/tests/sdk/build-env.sh" ]; then
  . "$top_builddir/tests/sdk/build-env.sh"
  WEFT_PY_CFLAGS="${CFLAGS:-}"
  WEFT_PY_LDFLAGS="${LDFLAGS:-}"
  export WEFT_PY_CFLAGS WEFT_PY_LDFLAGS
fi
unset CFLAGS LDFLAGS CPPFLAGS

# A copy of the sources: pip builds in place, and srcdir may be read-only.
mkdir "$tmp/src" && cp -R "$top_srcdir/python/." "$tmp/src/" &&
  chmod -R u+w "$tmp/src" && rm -rf "$tmp/src/build" "$tmp/src"/*.egg-info ||
  exit 99

"$PY" -m venv --system-site-packages "$tmp/venv" || exit 99
PKG_CONFIG_PATH="$top_builddir/sdk${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" \
  "$tmp/venv/bin/python" -m pip install -q --no-build-isolation --no-index \
  --no-deps "$tmp/src" >"$tmp/pip.log" 2>&1 || {
    cat "$tmp/pip.log" >&2
    echo "test_python: pip install of python/ failed" >&2
    exit 1
  }

# libweft built with ASan: the runtime has to come first in the process.
if ldd "$top_builddir/core/.libs/libweft.so" 2>/dev/null | grep -q libasan
then
  asan=$(ldd "$top_builddir/core/.libs/libweft.so" |
         awk '/libasan/ { print $3; exit }')
  LD_PRELOAD="$asan${LD_PRELOAD:+:$LD_PRELOAD}"
  # CPython keeps much of its memory until exit: no leak report for it
  # (last, so that it wins over a detect_leaks=1 from the caller).
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  export LD_PRELOAD ASAN_OPTIONS
  echo "test_python: ASan build, preloading $asan"
fi

cd "$tmp" || exit 99
export top_srcdir
"$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider \
  "$top_srcdir/python/tests"
rc=$?
case $rc in
  0) exit 0 ;;
  5) echo "test_python: pytest collected no tests" >&2; exit 1 ;;
  *) exit 1 ;;
esac
