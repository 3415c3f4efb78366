#!/bin/sh
# tests/gpu/run.sh — builds weft with CUDA on a machine with an NVIDIA GPU
# and checks the CUDA device plugin there: `weft devices`, the host-side
# test (tests/devices/test_cuda_host) and every CUDA kernel against the
# CPU's (tests/gpu/test_cuda_kernels, which must pass, not skip, here).
# `make check` never needs a GPU; this script is for a GPU machine only.
#
# Usage: tests/gpu/run.sh [--full] [weft-VERSION.tar.gz]
#
#   The sources come from the tarball when one is given (made with
#   `make dist` elsewhere: then no autotools are needed here), else from the
#   tree this script sits in (autoreconf needed). They are built in
#   $WEFT_GPU_BUILD (default: a new directory under ${TMPDIR:-/tmp}),
#   configured --without-dnnl --without-openblas to keep it short, with
#   --with-cuda=$CUDA_HOME (default /usr/local/cuda).
#   --full also runs the whole `make check` with the GPU visible.
#   Logs are copied to $OUT when it is set.
#
# Needs: the NVIDIA driver, the CUDA toolkit with cuBLAS and cuDNN 9, and
# the Debian packages of the README (libltdl-dev, libinih-dev,
# libjansson-dev, libhwloc-dev, zlib1g-dev, libprotobuf-c-dev,
# protobuf-c-compiler, libcmocka-dev, pkg-config).
#
# Exit status: 0 when every check passed, 1 otherwise, 2 on bad usage.
set -u

full=0
tarball=
for arg in "$@"; do
  case $arg in
    --full) full=1 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $arg (see --help)" >&2; exit 2 ;;
    *) tarball=$arg ;;
  esac
done

here=$(cd "$(dirname "$0")/../.." && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
jobs=$(nproc 2>/dev/null || echo 4)
build=${WEFT_GPU_BUILD:-$(mktemp -d "${TMPDIR:-/tmp}/weft-gpu.XXXXXX")}
logs=$build/gpu-logs
mkdir -p "$logs" || exit 1
failed=0

say() { printf '== %s\n' "$*"; }
# Runs a named step, its output to $logs/NAME.log; a failure is counted.
step() {
  name=$1; shift
  say "$name: $*"
  "$@" >"$logs/$name.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    tail -n 3 "$logs/$name.log"
    return 0
  fi
  tail -n 40 "$logs/$name.log"
  say "$name FAILED (exit $rc)"
  failed=1
  return $rc
}
finish() {
  if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT" && cp -r "$logs" "$OUT/" 2>/dev/null
  fi
  if [ $failed -eq 0 ]; then say "all CUDA checks passed"; else say "CUDA checks FAILED (logs: $logs)"; fi
  exit $failed
}

say "GPU"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv,noheader
else
  echo "nvidia-smi not found: is the NVIDIA driver installed?"
fi
if [ ! -x "$cuda/bin/nvcc" ]; then
  echo "run.sh: no nvcc under $cuda: set CUDA_HOME to the CUDA toolkit" >&2
  exit 1
fi

# Sources.
src=$build/src
if [ -n "$tarball" ]; then
  mkdir -p "$src" && tar -xzf "$tarball" -C "$src" --strip-components=1 || {
    echo "run.sh: cannot unpack $tarball" >&2; exit 1; }
else
  mkdir -p "$src"
  (cd "$here" && tar -cf - --exclude=.git --exclude='*.o' --exclude='*.lo' \
     --exclude='*.la' --exclude=.libs --exclude=.deps --exclude=Makefile \
     --exclude=config.status --exclude=config.log --exclude=libtool .) |
    (cd "$src" && tar -xf -) || exit 1
  step autoreconf sh -c "cd '$src' && autoreconf -fi" || finish
fi

# Configure and build what the checks load.
obj=$build/obj
mkdir -p "$obj"
step configure sh -c "cd '$obj' && '$src/configure' --without-dnnl \
  --without-openblas --with-cuda='$cuda'" || finish
grep -Eq '^ *CUDA \.+ yes' "$logs/configure.log" || {
  grep 'CUDA' "$logs/configure.log"
  echo "run.sh: configure did not enable CUDA" >&2; failed=1; finish; }
start=$(date +%s)
step build sh -c "make -C '$obj' -j$jobs all && make -C '$obj' -j$jobs \
  tests/devices/test_cuda_host tests/gpu/test_cuda_kernels" || finish
say "build took $(( $(date +%s) - start )) s"

# The checks.
step devices env WEFT_PLUGIN_PATH="$obj/plugins/devices/cuda/.libs" \
  "$obj/tools/weft" devices
grep -q '^cuda:0 ' "$logs/devices.log" || {
  say "weft devices lists no usable cuda:0"; failed=1; }
step host_test "$obj/tests/devices/test_cuda_host"
say "kernels: tests/gpu/test_cuda_kernels"
"$obj/tests/gpu/test_cuda_kernels" >"$logs/kernels.log" 2>&1
rc=$?
tail -n 30 "$logs/kernels.log"
case $rc in
  0) say "kernels passed" ;;
  77) say "kernels SKIPPED on a GPU machine: cuda:0 is not usable"; failed=1 ;;
  *) say "kernels FAILED (exit $rc)"; failed=1 ;;
esac
if [ $full -eq 1 ]; then
  step check make -C "$obj" -j"$jobs" check
fi
finish
