#!/bin/sh
# tests/devices/test_lazy_weft_plugins.sh — `weft plugins` and `weft
# devices` load every in-tree plugin yet open none of the libraries the
# device and transport plugins open on first use (oneDNN, OpenBLAS, the
# CUDA runtime, cuBLAS, cuDNN, Open MPI): the dynamic loader's own record
# of the files it opened (LD_DEBUG=files) names none of them, while it does
# name the plugins. And an Open MPI that cannot be opened fails the join
# of `weft worker` naming the library, the plugin and the file.
set -eu
: "${top_builddir:=.}"
weft="$top_builddir/tools/weft"
fail() { echo "FAIL: $*" >&2; exit 1; }
heavy='lib(dnnl|openblas|cudart|cublas|cublasLt|cudnn[a-z_]*|mpi|open-pal|open-rte)\.so'

for cmd in plugins devices; do
  log=$(LD_DEBUG=files "$weft" "$cmd" 2>&1 >/dev/null) ||
    fail "weft $cmd failed: $log"
  echo "$log" | grep -q 'file=.*device_cpu\.so' ||
    fail "weft $cmd did not load device_cpu.so (LD_DEBUG=files says nothing of it)"
  opened=$(echo "$log" | grep -E "file=[^ ]*$heavy" | sed 's/^ *[0-9]*: *//' |
    sort -u || true)
  [ -z "$opened" ] || fail "weft $cmd opened libraries it does not use:
$opened"
done
echo "weft plugins and weft devices open none of the heavy libraries"

if "$weft" plugins | grep -q "^transport-mpi "; then
  bad=/nonexistent/libmpi.so.40
  if out=$(WEFT_MPI_LIBRARY=$bad "$weft" worker 2>&1); then
    fail "weft worker with WEFT_MPI_LIBRARY=$bad succeeded: $out"
  fi
  for want in "Open MPI" "transport-mpi" "$bad" "WEFT_MPI_LIBRARY"; do
    case $out in
      *"$want"*) ;;
      *) fail "weft worker with WEFT_MPI_LIBRARY=$bad does not say '$want': $out" ;;
    esac
  done
  echo "an unopenable Open MPI fails the join: $out"
fi
