#!/bin/sh
# tests/gpu/run.sh — the CUDA checks, on a machine with an NVIDIA GPU. The
# one entry point for them: `make check` never needs a GPU.
#
# Usage: tests/gpu/run.sh --bundle DIR [--data DIR] [--budget SECONDS]
#        tests/gpu/run.sh [--full] [--data DIR] [--budget SECONDS]
#                         [weft-VERSION.tar.gz]
#
#   --bundle DIR  runs the programs of a bundle made by tests/gpu/bundle.sh
#                 on a machine without weft's Debian dependencies (the
#                 bundle's run-here.sh calls this). The machine needs the
#                 NVIDIA driver and the CUDA libraries named in the bundle's
#                 MANIFEST (found in $CUDA_HOME/lib64, /usr/local/cuda*, the
#                 system's library path or Python's nvidia-* packages).
#   Without --bundle it builds weft first, as `make check` would need:
#                 the sources come from the tarball when one is given (made
#                 with `make dist`: no autotools needed), else from the tree
#                 this script sits in (autoreconf needed); they are built in
#                 $WEFT_GPU_BUILD (default: a new directory under
#                 ${TMPDIR:-/tmp}), configured --without-dnnl
#                 --without-openblas --with-cuda=$CUDA_HOME (default
#                 /usr/local/cuda). That needs the Debian packages of the
#                 README (libltdl-dev, libinih-dev, libjansson-dev,
#                 libhwloc-dev, zlib1g-dev, libprotobuf-c-dev,
#                 protobuf-c-compiler, libcmocka-dev, pkg-config).
#                 --full also runs the whole `make check` with the GPU.
#   --data DIR    Fashion-MNIST's training files (default: the bundle's,
#                 else /usr/share/datasets/fashion-mnist).
#   --budget S    seconds for the checks after the build (default 450);
#                 the cnn epoch is cut to a subset, said so, when a first
#                 short run shows that the whole epoch would not fit.
#
# The checks, each logged to its own file:
#   devices  `weft devices` lists a usable cuda:0 (else the GPU steps are
#            skipped, and that is a failure here)
#   host     tests/devices/test_cuda_host
#   kernels  tests/gpu/test_cuda_kernels: every CUDA kernel against the
#            CPU's; must pass, not skip
#   graph    tests/gpu/test_cuda_graph: graphs split over cpu:0 and cuda:0,
#            training with the variables on cuda:0; must pass, not skip
#   train    bench/train --model cnn, one epoch, `[devices] order = cuda,
#            cpu`: samples/s
#   torch    the same cnn in PyTorch on the same GPU
#            (bench/compare/torch_gpu_bench.py) and weft/PyTorch; skipped,
#            not failed, where python3 cannot import torch
#   gemm     bench/gemm_cuda: MatMul through a graph on cuda:0 against
#            cublasSgemm, N = 1024, 2048, 4096
# Logs and summary.txt go to $OUT/gpu-logs when OUT is set, else to a
# directory named at the end.
#
# Exit status: 0 when every check passed, 1 otherwise, 2 on bad usage.
set -u

full=0
tarball=
bundle=
data=
budget=450
while [ $# -gt 0 ]; do
  case $1 in
    --full) full=1 ;;
    --bundle) bundle=${2:?--bundle needs a directory}; shift ;;
    --data) data=${2:?--data needs a directory}; shift ;;
    --budget) budget=${2:?--budget needs seconds}; shift ;;
    -h|--help) sed -n '2,51p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) tarball=$1 ;;
  esac
  shift
done
if [ -n "$bundle" ] && { [ -n "$tarball" ] || [ $full -eq 1 ]; }; then
  echo "run.sh: --bundle takes neither a tarball nor --full" >&2
  exit 2
fi

cuda=${CUDA_HOME:-/usr/local/cuda}
failed=0

say() { printf '== %s\n' "$*"; }
if [ -z "$bundle" ]; then
  build=${WEFT_GPU_BUILD:-$(mktemp -d "${TMPDIR:-/tmp}/weft-gpu.XXXXXX")}
fi
if [ -n "${OUT:-}" ]; then
  logs=$OUT/gpu-logs
elif [ -n "$bundle" ]; then
  logs=$(mktemp -d "${TMPDIR:-/tmp}/weft-gpu-logs.XXXXXX")
else
  logs=$build/gpu-logs
fi
mkdir -p "$logs" || exit 1
logs=$(cd "$logs" && pwd)
: >"$logs/summary.txt"

# One line per check in summary.txt: NAME RESULT detail.
note() {
  printf '%-8s %-6s %s\n' "$1" "$2" "$3" >>"$logs/summary.txt"
  [ "$2" = FAIL ] && failed=1
  return 0
}
finish() {
  say "summary (logs: $logs)"
  cat "$logs/summary.txt"
  if [ $failed -eq 0 ]; then say "all CUDA checks passed"; else say "CUDA checks FAILED"; fi
  exit $failed
}

if command -v timeout >/dev/null 2>&1; then have_timeout=1; else have_timeout=0; fi
# Runs a command for at most $1 seconds (0: no limit).
limited() {
  t=$1; shift
  if [ "$have_timeout" -eq 1 ] && [ "$t" -gt 0 ]; then
    timeout -k 10 "$t" "$@"
  else
    "$@"
  fi
}

# ---- the programs: from a bundle, or built here --------------------------------
if [ -n "$bundle" ]; then
  [ -f "$bundle/MANIFEST" ] || { echo "run.sh: $bundle has no MANIFEST: not a bundle of tests/gpu/bundle.sh" >&2; exit 2; }
  B=$(cd "$bundle" && pwd)
  manifest() { sed -n "s/^$1=//p" "$B/MANIFEST"; }
  bin=$B/bin
  weft=$bin/weft host_test=$bin/test_cuda_host kernels=$bin/test_cuda_kernels
  graph=$bin/test_cuda_graph train=$bin/train gemm=$bin/gemm_cuda
  compare=$B/compare
  plugin_root=$B/tree
  [ -n "$data" ] || data=$B/data/fashion-mnist
  say "bundle $B: $(manifest source), made $(manifest made)"

  # glibc: the bundle was built against some version; older ones fail to
  # load it with "version GLIBC_x.y not found".
  need=$(manifest glibc_min)
  have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }')
  if [ -n "$need" ] && [ -n "$have" ] &&
     [ "$(printf '%s\n%s\n' "$need" "$have" | sort -t. -k1,1n -k2,2n | head -n 1)" != "$need" ]; then
    say "glibc $have here, the bundle needs $need or newer"
    note setup FAIL "glibc $have older than the bundle's $need"
    finish
  fi

  # The tests look for plugins under the build tree they were compiled in;
  # point that path at the bundle's copy when it is free.
  tb=$(manifest test_builddir)
  if [ -n "$tb" ]; then
    if [ -L "$tb" ] || [ ! -e "$tb" ]; then
      mkdir -p "$(dirname "$tb")" && ln -sfn "$plugin_root" "$tb" ||
        say "cannot link $tb to the bundle: the tests use WEFT_GPU_PLUGIN_DIRS only"
    else
      say "$tb exists and is not a link: the tests use WEFT_GPU_PLUGIN_DIRS only"
    fi
  fi

  # The libraries: the bundle's, then where this machine keeps CUDA's.
  libpath=$B/lib
  objects=$(ls "$bin"/* "$B"/lib/* 2>/dev/null; find "$plugin_root" -name '*.so')
  # Libraries the plugins open on first use are in no ldd list: each must
  # be in a directory of the path or known to the system's loader.
  lazy_libs=$(manifest opened_on_first_use)
  missing_libs() {
    {
      for f in $objects; do
        LD_LIBRARY_PATH=$libpath ldd "$f" 2>/dev/null | awk '/not found/ { print $1 }'
      done
      for l in $lazy_libs; do
        found=
        for d in $(echo "$libpath" | tr ':' ' '); do
          [ -e "$d/$l" ] && found=1
        done
        [ -n "$found" ] || ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$l " || echo "$l"
      done
    } | sort -u
  }
  candidates() {
    for d in "$cuda/lib64" "$cuda/targets/x86_64-linux/lib" /usr/local/cuda/lib64 \
             /usr/local/cuda-*/lib64 /usr/local/cuda-*/targets/x86_64-linux/lib \
             /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/lib; do
      [ -d "$d" ] && echo "$d"
    done
    python3 - 2>/dev/null <<'EOF'
import glob, os, sys
for base in sys.path:
    for d in sorted(glob.glob(os.path.join(base, "nvidia", "*", "lib"))):
        print(d)
    if os.path.isdir(os.path.join(base, "torch", "lib")):
        print(os.path.join(base, "torch", "lib"))
EOF
  }
  for lib in $(missing_libs); do
    for d in $(candidates); do
      if [ -e "$d/$lib" ]; then
        case ":$libpath:" in *":$d:"*) ;; *) libpath=$libpath:$d ;; esac
        break
      fi
    done
  done
  still=$(missing_libs | tr '\n' ' ')
  say "library path: $libpath"
  if [ -n "$still" ]; then
    say "libraries not found on this machine: $still"
    say "(the bundle needs: $(manifest needs_from_machine); built with CUDA $(manifest cuda_toolkit))"
    note setup FAIL "missing libraries: $still"
  fi
  wrun() { LD_LIBRARY_PATH=$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"; }
else
  jobs=$(nproc 2>/dev/null || echo 4)
  here=$(cd "$(dirname "$0")/../.." && pwd)
  if [ ! -x "$cuda/bin/nvcc" ]; then
    echo "run.sh: no nvcc under $cuda: set CUDA_HOME to the CUDA toolkit" >&2
    exit 1
  fi
  src=$build/src
  if [ -n "$tarball" ]; then
    mkdir -p "$src" && tar -xzf "$tarball" -C "$src" --strip-components=1 || {
      echo "run.sh: cannot unpack $tarball" >&2; exit 1; }
  else
    mkdir -p "$src"
    (cd "$here" && tar -cf - --exclude=.git --exclude='*.o' --exclude='*.lo' \
       --exclude='*.la' --exclude=.libs --exclude=.deps --exclude=Makefile \
       --exclude=config.status --exclude=config.log --exclude=libtool \
       --exclude=config.h --exclude=stamp-h1 --exclude=gpu-bundle .) |
      (cd "$src" && tar -xf -) || exit 1
    say "autoreconf"
    (cd "$src" && autoreconf -fi) >"$logs/autoreconf.log" 2>&1 || {
      tail -n 40 "$logs/autoreconf.log"; note build FAIL "autoreconf"; finish; }
  fi
  obj=$build/obj
  mkdir -p "$obj"
  say "configure"
  (cd "$obj" && "$src/configure" --without-dnnl --without-openblas \
     --with-cuda="$cuda") >"$logs/configure.log" 2>&1 || {
    tail -n 40 "$logs/configure.log"; note build FAIL "configure"; finish; }
  grep -Eq '^ *CUDA \.+ yes' "$logs/configure.log" || {
    grep 'CUDA' "$logs/configure.log"; note build FAIL "configure did not enable CUDA"; finish; }
  say "build"
  start=$(date +%s)
  (make -C "$obj" -j"$jobs" all && make -C "$obj" -j"$jobs" \
     tests/devices/test_cuda_host tests/gpu/test_cuda_kernels \
     tests/gpu/test_cuda_graph bench/train bench/gemm_cuda) \
    >"$logs/build.log" 2>&1 || {
    tail -n 40 "$logs/build.log"; note build FAIL "make"; finish; }
  note build PASS "$(( $(date +%s) - start )) s"
  weft=$obj/tools/weft host_test=$obj/tests/devices/test_cuda_host
  kernels=$obj/tests/gpu/test_cuda_kernels graph=$obj/tests/gpu/test_cuda_graph
  train=$obj/bench/train gemm=$obj/bench/gemm_cuda
  compare=$src/bench/compare
  plugin_root=$obj
  [ -n "$data" ] || data=/usr/share/datasets/fashion-mnist
  wrun() { "$@"; }
fi

t0=$(date +%s)
left() { echo $(( budget - ($(date +%s) - t0) )); }
# The smaller of $1 and the time left, at least 1.
cap() { l=$(left); [ "$l" -lt "$1" ] && echo $(( l > 1 ? l : 1 )) || echo "$1"; }

# Every plugin directory, for the programs (WEFT_PLUGIN_PATH, colon-
# separated) and the tests (WEFT_GPU_PLUGIN_DIRS, comma-separated).
dirs=$(find "$plugin_root"/plugins -name '*.so' -path '*/.libs/*' 2>/dev/null |
  xargs -n 1 dirname | sort -u)
WEFT_PLUGIN_PATH=$(echo $dirs | tr ' ' ':')
WEFT_GPU_PLUGIN_DIRS=$(echo $dirs | sed 's/ /, /g')
export WEFT_PLUGIN_PATH WEFT_GPU_PLUGIN_DIRS
# cuda first: what a user of the GPU writes in weft.conf.
cat >"$logs/weft.conf" <<EOF
; written by tests/gpu/run.sh
[plugins]
use_default_dir = false

[devices]
order = cuda, cpu
EOF
WEFT_CONFIG=$logs/weft.conf
export WEFT_CONFIG

say "GPU"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id \
    --format=csv,noheader 2>&1 | tee "$logs/nvidia-smi.log"
else
  echo "nvidia-smi not found: is the NVIDIA driver installed?"
fi

# ---- devices, host test ------------------------------------------------------
say "devices: weft devices"
wrun limited "$(cap 60)" "$weft" devices >"$logs/devices.log" 2>&1
rc=$?
cat "$logs/devices.log"
gpu=0
if [ $rc -ne 0 ]; then
  note devices FAIL "weft devices exited $rc"
elif grep -q '^cuda:0 ' "$logs/devices.log"; then
  gpu=1
  note devices PASS "$(grep -A 1 '^cuda:0 ' "$logs/devices.log" | sed -n '2s/^ *//p')"
else
  note devices FAIL "no usable cuda:0: $(grep '^cuda:0' "$logs/devices.log" | head -n 1)"
fi

say "host: test_cuda_host"
wrun limited "$(cap 120)" "$host_test" >"$logs/host.log" 2>&1
rc=$?
tail -n 5 "$logs/host.log"
[ $rc -eq 0 ] && note host PASS "" || note host FAIL "exit $rc (log host.log)"

# ---- tests that need the GPU ---------------------------------------------------
# They exit 77 without a usable cuda:0: a failure where there should be
# one, a skip where weft devices found none (then already a failure).
gpu_test() { # NAME PROGRAM LIMIT
  say "$1: $(basename "$2")"
  wrun limited "$(cap "$3")" "$2" >"$logs/$1.log" 2>&1
  rc=$?
  tail -n 30 "$logs/$1.log"
  why=$(grep -m 1 '^SKIP' "$logs/$1.log")
  case $rc in
    0) note "$1" PASS "" ;;
    77) if [ $gpu -eq 1 ]; then note "$1" FAIL "skipped on a GPU machine: $why"
        else note "$1" SKIP "$why"; fi ;;
    124|137) note "$1" FAIL "did not finish in time" ;;
    *) note "$1" FAIL "exit $rc (log $1.log)" ;;
  esac
}
gpu_test kernels "$kernels" 180
gpu_test graph "$graph" 120
if [ $gpu -eq 0 ]; then
  say "gemm: gemm_cuda"
  wrun limited "$(cap 60)" "$gemm" >"$logs/gemm.log" 2>&1
  cat "$logs/gemm.log"
  for s in train torch; do
    note "$s" SKIP "no usable cuda:0"
  done
  note gemm SKIP "$(sed -n 's/.*"skipped":"\([^"]*\)".*/\1/p' "$logs/gemm.log")"
  say "no usable cuda:0: the training and MatMul benchmarks are skipped"
  finish
fi

# ---- cnn training: weft, then PyTorch ----------------------------------------------
# "exit N" or, for timeout's codes, that it ran out of time.
why_exit() { case $1 in 124|137) echo "did not finish in time" ;; *) echo "exit $1" ;; esac; }
json_num() { sed -n "s/.*\"$1\":\([-0-9.e]*\).*/\1/p" "$2" | head -n 1; }
limit=
if [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
  note train FAIL "no Fashion-MNIST in $data (--data DIR)"
  note torch SKIP "no data"
else
  # A short run first: if the whole epoch (plus its warm-up epoch, which
  # fills the pipeline's cache) would not leave time for torch and gemm,
  # time a subset instead.
  say "train: bench/train --model cnn --limit 3000 (to size the epoch)"
  wrun limited "$(cap 120)" "$train" --model cnn --limit 3000 --warm 1 \
    --data "$data" >"$logs/train-probe.log" 2>&1
  rc=$?
  cat "$logs/train-probe.log"
  rate=$(json_num samples_per_s "$logs/train-probe.log")
  if [ $rc -ne 0 ] || [ -z "$rate" ]; then
    note train FAIL "the short run failed ($(why_exit $rc), log train-probe.log)"
  else
    avail=$(( $(left) - 150 ))
    # Two epochs (warm-up and timed) at the short run's rate, with a
    # fifth more for safety.
    need=$(awk -v r="$rate" 'BEGIN { printf "%d", 2.4 * 60000 / r + 15 }')
    if [ "$need" -gt "$avail" ]; then
      # bench/train keeps every (60000/limit)-th sample: a limit that
      # divides 60000 is what it trains on.
      limit=$(awk -v r="$rate" -v a="$avail" 'BEGIN {
        n = r * (a - 15) / 2.4; k = int(60000 / n); if (k * n < 60000) k++;
        if (k > 20) k = 20; print int(60000 / k) }')
      say "train: one epoch would take about $need s, $avail s left: timing $limit samples"
    fi
    say "train: bench/train --model cnn${limit:+ --limit $limit} --warm 1"
    wrun limited "$(cap $(( avail > 60 ? avail : 60 )))" "$train" --model cnn \
      ${limit:+--limit "$limit"} --warm 1 --data "$data" >"$logs/train.log" 2>&1
    rc=$?
    cat "$logs/train.log"
    sps=$(json_num samples_per_s "$logs/train.log")
    if [ $rc -eq 0 ] && [ -n "$sps" ]; then
      note train PASS "cnn $sps samples/s${limit:+ (a subset of $limit samples: the epoch would not fit)}"
    else
      note train FAIL "$(why_exit $rc) (log train.log)"
    fi
  fi

  if ! python3 -c 'import torch' >/dev/null 2>&1; then
    note torch SKIP "python3 cannot import torch"
  else
    say "torch: torch_gpu_bench.py${limit:+ --limit $limit}"
    limited "$(cap 180)" python3 "$compare/torch_gpu_bench.py" --data "$data" \
      ${limit:+--limit "$limit"} --weft "$logs/train.log" >"$logs/torch.log" 2>&1
    rc=$?
    cat "$logs/torch.log"
    tsps=$(json_num samples_per_s "$logs/torch.log")
    ratio=$(json_num weft_vs_torch "$logs/torch.log")
    if [ $rc -eq 0 ] && [ -n "$tsps" ]; then
      note torch PASS "cnn $tsps samples/s; weft/PyTorch ${ratio:-n/a}"
    else
      note torch FAIL "$(why_exit $rc) (log torch.log)"
    fi
  fi
fi

# ---- MatMul ---------------------------------------------------------------------
say "gemm: gemm_cuda"
wrun limited "$(cap 150)" "$gemm" >"$logs/gemm.log" 2>&1
rc=$?
cat "$logs/gemm.log"
if [ $rc -ne 0 ]; then
  note gemm FAIL "$(why_exit $rc) (log gemm.log)"
elif grep -q '"skipped"' "$logs/gemm.log"; then
  note gemm FAIL "$(sed -n 's/.*"skipped":"\([^"]*\)".*/\1/p' "$logs/gemm.log")"
else
  note gemm PASS "N=4096: graph $(grep '"n":4096' "$logs/gemm.log" | sed -n 's/.*"graph_gflops":\([0-9.]*\).*/\1/p') GFLOP/s, cuBLAS $(grep '"n":4096' "$logs/gemm.log" | sed -n 's/.*"direct_cublas_gflops":\([0-9.]*\).*/\1/p') GFLOP/s"
fi

if [ $full -eq 1 ]; then
  say "make check"
  make -C "$obj" -j"$jobs" check >"$logs/check.log" 2>&1 &&
    note check PASS "" || note check FAIL "make check (log check.log)"
fi
finish
