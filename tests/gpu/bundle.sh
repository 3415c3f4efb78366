#!/bin/sh
# tests/gpu/bundle.sh — builds weft with CUDA on a machine that has the
# CUDA toolkit and the Debian packages of the README (a GPU is not needed)
# and stages a bundle for a GPU machine that has only the NVIDIA driver,
# the CUDA toolkit (runtime, cuBLAS, cuDNN 9) and perhaps PyTorch: the
# programs, libweft, the plugins, the shared libraries they need that such
# a machine lacks, the training data of one cnn epoch, and the script that
# runs the checks there (tests/gpu/run.sh, as run-here.sh).
#
# Usage: tests/gpu/bundle.sh [--build DIR] [--out DIR] [--src DIR]
#                            [--no-data] [--strip] [--jobs N]
#
#   --build DIR  where the sources are copied (DIR/src, bootstrapped there
#                with autoreconf) and built (DIR/obj); default
#                /tmp/weft-gpu-bundle. Kept between runs, so a second run
#                only rebuilds what changed. The tests are compiled with
#                DIR/obj as their build tree: run.sh links that path to
#                the bundle on the GPU machine.
#   --out DIR    the bundle; default gpu-bundle/ at the top of the tree
#                (ignored by git). Emptied first.
#   --src DIR    the source tree to copy (a git checkout: its tracked and
#                untracked-but-not-ignored files; else all but build
#                products); default the one this script is in.
#   --no-data    leave Fashion-MNIST out (run-here.sh --data DIR then).
#   --strip      strip debug information from the staged objects.
#   --jobs N     make -jN (default 2).
#
# Configured --without-dnnl --without-openblas --without-mpi
# --with-cuda=$CUDA_HOME (default /usr/local/cuda). Built: libweft,
# tools/weft, every plugin module, tests/devices/test_cuda_host,
# tests/gpu/test_cuda_kernels, tests/gpu/test_cuda_graph, bench/train and
# bench/gemm_cuda.
#
# Bundled libraries: everything `ldd` names for the staged objects except
# glibc's own (libc, libm, libmvec, libpthread, libdl, librt, libutil,
# libresolv, ld-linux), libgcc_s and libstdc++ (only the CUDA libraries
# need them, and a machine with CUDA has them) and the NVIDIA libraries
# (libcuda, libcudart, libcublas*, libcudnn*, libnvrtc*, libnvJitLink*,
# ...), which the GPU machine must provide in the major versions named in
# MANIFEST. Libraries are copied as files under their sonames, no links.
#
# The bundle must stay under 60 MiB; the script fails otherwise and
# prints the size either way. On the GPU machine: DIR/run-here.sh (see
# tests/gpu/run.sh --help).
#
# Exit status: 0 when the bundle is complete, 1 otherwise, 2 on bad usage.
set -u
LC_ALL=C
export LC_ALL

here=$(cd "$(dirname "$0")/../.." && pwd)
src_tree=$here
build=/tmp/weft-gpu-bundle
out=$here/gpu-bundle
data=/usr/share/datasets/fashion-mnist
with_data=1
strip_debug=0
jobs=2
cuda=${CUDA_HOME:-/usr/local/cuda}
max_mib=60

usage() { sed -n '2,46p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=${2:?--build needs a directory}; shift ;;
    --out) out=${2:?--out needs a directory}; shift ;;
    --src) src_tree=${2:?--src needs a directory}; shift ;;
    --no-data) with_data=0 ;;
    --strip) strip_debug=1 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bundle.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

say() { printf '== %s\n' "$*"; }
die() { echo "bundle.sh: $*" >&2; exit 1; }

[ -x "$cuda/bin/nvcc" ] || die "no nvcc under $cuda: set CUDA_HOME"
[ -f "$src_tree/configure.ac" ] || die "$src_tree is not a weft source tree"
src_tree=$(cd "$src_tree" && pwd)
mkdir -p "$build" || exit 1
build=$(cd "$build" && pwd)
case $out in /*) ;; *) out=$(pwd)/$out ;; esac
case $out/ in
  "$build"/*) die "--out must not lie in the build directory" ;;
esac
src=$build/src
obj=$build/obj
logs=$build/logs
mkdir -p "$src" "$obj" "$logs" || exit 1

# ---- sources ----------------------------------------------------------------
# The tracked and untracked-but-not-ignored files of a git checkout;
# otherwise everything but build products and autotools output. A file is
# copied only when its contents differ from the copy's, and then gets the
# time of the copy, so make rebuilds what depends on it whichever tree the
# copy came from last; the Makefile's rebuild rules regenerate the
# autotools output (made once by autoreconf).
say "sources: $src_tree -> $src"
list=$build/sources.list
if [ -d "$src_tree/.git" ] && command -v git >/dev/null 2>&1; then
  (cd "$src_tree" && git ls-files --cached --others --exclude-standard) \
    >"$list" || die "git ls-files failed in $src_tree"
else
  (cd "$src_tree" && find . -type f ! -path './.git/*' ! -path './gpu-bundle/*' \
     ! -name '*.o' ! -name '*.lo' ! -name '*.la' ! -path '*/.libs/*' \
     ! -path '*/.deps/*' ! -path './autom4te.cache/*' ! -path './build-aux/*' \
     ! -path './m4/*.m4' ! -name Makefile ! -name Makefile.in \
     ! -name configure ! -name 'configure~' ! -name aclocal.m4 \
     ! -name 'config.h.in*' ! -name config.status ! -name config.log \
     ! -name libtool ! -name config.h ! -name confdefs.h ! -name stamp-h1 \
     | sed 's|^\./||') >"$list"
fi
(cd "$src_tree" && while IFS= read -r f; do
   [ -f "$f" ] && printf '%s\n' "$f"; done <"$list") | sort -u >"$list.files"
# Files copied last time that have gone from the sources go from the copy.
if [ -f "$list.files.last" ]; then
  comm -23 "$list.files.last" "$list.files" | while IFS= read -r f; do
    rm -f "$src/$f"; done
fi
changed=0
while IFS= read -r f; do
  cmp -s "$src_tree/$f" "$src/$f" && continue
  mkdir -p "$src/$(dirname "$f")" && rm -f "$src/$f" &&
    cp "$src_tree/$f" "$src/$f" || die "copying $f failed"
  changed=$((changed + 1))
done <"$list.files"
cp "$list.files" "$list.files.last"
say "$changed file(s) changed since the last copy"

# ---- configure and build ----------------------------------------------------
if [ ! -x "$src/configure" ]; then
  say "autoreconf (the sources carry no configure)"
  (cd "$src" && autoreconf -fi) >"$logs/autoreconf.log" 2>&1 || {
    tail -n 20 "$logs/autoreconf.log"; die "autoreconf failed"; }
fi
flags="--without-dnnl --without-openblas --without-mpi --with-cuda=$cuda"
if [ ! -f "$obj/config.status" ] ||
   [ "$(cat "$obj/.bundle-flags" 2>/dev/null)" != "$flags" ]; then
  say "configure $flags"
  (cd "$obj" && "$src/configure" $flags) >"$logs/configure.log" 2>&1 || {
    tail -n 30 "$logs/configure.log"; die "configure failed (log: $logs/configure.log)"; }
  echo "$flags" >"$obj/.bundle-flags"
fi

# The Makefile up to date first (automake and config.status rerun when the
# sources changed), then the plugin modules and the generated sources (which only `make all`
# would make first), as the Makefile lists them.
mkvar() {
  printf 'print-var:\n\t@echo $(%s)\n' "$1" |
    make -s -C "$obj" -f Makefile -f - print-var
}
make -C "$obj" Makefile >"$logs/makefile.log" 2>&1 || {
  tail -n 20 "$logs/makefile.log"; die "regenerating the Makefile failed"; }
modules=$(mkvar WF_PLUGIN_MODULES) && built=$(mkvar BUILT_SOURCES) ||
  die "cannot read the Makefile's lists"
case " $modules " in
  *" plugins/devices/cuda/device_cuda.la "*) ;;
  *) die "configure did not enable CUDA (see $logs/configure.log)" ;;
esac
programs="tools/weft tests/devices/test_cuda_host tests/gpu/test_cuda_kernels
  tests/gpu/test_cuda_graph bench/train bench/gemm_cuda"
say "build (make -j$jobs): core/libweft.la, $(echo $modules $programs | wc -w) targets"
start=$(date +%s)
{ make -C "$obj" $built &&
  make -C "$obj" -j"$jobs" core/libweft.la $modules $programs; } \
  >"$logs/build.log" 2>&1 || {
  grep -E 'error|Error' "$logs/build.log" | head -n 30
  tail -n 10 "$logs/build.log"
  die "build failed (log: $logs/build.log)"; }
say "build took $(( $(date +%s) - start )) s"

# ---- staging ----------------------------------------------------------------
case $out in /|"$HOME"|"$src_tree") die "refusing to empty $out" ;; esac
rm -rf "$out" && mkdir -p "$out/bin" "$out/lib" "$out/tree" "$out/compare" ||
  die "cannot create $out"
staged=$build/staged.list
: >"$staged"

# A built program's real binary: libtool's .libs/NAME when it made a
# wrapper script, else the file itself.
real_binary() {
  d=$(dirname "$1"); b=$(basename "$1")
  if [ -f "$obj/$d/.libs/$b" ]; then echo "$obj/$d/.libs/$b"
  elif [ -f "$obj/$d/.libs/lt-$b" ]; then echo "$obj/$d/.libs/lt-$b"
  else echo "$obj/$1"; fi
}
is_elf() { head -c 4 "$1" 2>/dev/null | grep -q 'ELF'; }

for p in $programs; do
  f=$(real_binary "$p")
  is_elf "$f" || die "$p: no ELF binary at $f"
  cp "$f" "$out/bin/$(basename "$p")" || exit 1
  echo "$out/bin/$(basename "$p")" >>"$staged"
done

# libweft under its soname (the name the programs ask for).
libweft=$(ls "$obj"/core/.libs/libweft.so.*.*.* 2>/dev/null | head -n 1)
[ -n "$libweft" ] || die "no libweft.so in $obj/core/.libs"
soname=$(objdump -p "$libweft" | awk '$1 == "SONAME" { print $2 }')
cp "$libweft" "$out/lib/${soname:-libweft.so}" || exit 1
echo "$out/lib/${soname:-libweft.so}" >>"$staged"

# Plugin modules in the build tree's layout (the tests look for them at
# $TEST_BUILDDIR/plugins/.../.libs; run.sh points that path here).
for la in $modules; do
  d=$(dirname "$la"); b=$(basename "$la" .la)
  [ -f "$obj/$d/.libs/$b.so" ] || die "no module $d/.libs/$b.so"
  mkdir -p "$out/tree/$d/.libs" && cp "$obj/$d/.libs/$b.so" "$out/tree/$d/.libs/" ||
    exit 1
  echo "$out/tree/$d/.libs/$b.so" >>"$staged"
done

# What the staged objects need: all of it but glibc, the C++ runtime and
# NVIDIA's libraries (kept by name, for MANIFEST).
glibc_re='^(linux-vdso|linux-gate|ld-linux[^ ]*|libc|libm|libmvec|libpthread|libdl|librt|libutil|libresolv|libanl|libnsl|libBrokenLocale)\.so'
cxx_re='^(libgcc_s|libstdc\+\+)\.so'
nvidia_re='^(libcuda|libcudart|libcublas|libcublasLt|libcudnn[a-z_]*|libnvrtc[a-z-]*|libnvJitLink|libnvidia-[a-z-]*|libcufft|libcurand|libcusparse|libcusolver|libnccl|libnvToolsExt)\.so'
needs=$build/needs.list
: >"$needs"
missing=
while IFS= read -r f; do
  LD_LIBRARY_PATH=$out/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$f" \
    >"$build/ldd.out" 2>&1 || die "ldd $f failed: $(cat "$build/ldd.out")"
  while read -r name arrow path rest; do
    case $arrow in
      "=>") ;;
      *) continue ;;
    esac
    if [ "$path" = "not" ]; then missing="$missing $name"; continue; fi
    echo "$name $path" >>"$needs"
  done <"$build/ldd.out"
done <"$staged"
[ -z "$missing" ] || die "libraries not found here:$(echo $missing | tr ' ' '\n' | sort -u | tr '\n' ' ')"
# Libraries the plugins open on first use (the CUDA plugin's cuBLAS and
# cuDNN: cuda_lazy.c) are in no ldd list: their sonames are read from the
# modules, so that the GPU machine is checked for them too.
opened_on_first_use=$(find "$out/tree" -name '*.so' -exec strings {} + |
  grep -E '^lib(cublas|cudnn)\.so\.[0-9]+$' | sort -u | tr '\n' ' ')
bundled= skipped_cxx= nvidia=$opened_on_first_use
for name in $(cut -d' ' -f1 "$needs" | sort -u); do
  path=$(awk -v n="$name" '$1 == n { print $2; exit }' "$needs")
  if echo "$name" | grep -Eq "$glibc_re"; then continue
  elif echo "$name" | grep -Eq "$cxx_re"; then skipped_cxx="$skipped_cxx $name"
  elif echo "$name" | grep -Eq "$nvidia_re"; then nvidia="$nvidia $name"
  elif [ -f "$out/lib/$name" ]; then :
  else
    cp -L "$path" "$out/lib/$name" || exit 1
    bundled="$bundled $name"
  fi
done
# A bundled library's own needs are in ldd's list of whoever loaded it,
# since ldd lists the whole closure; check that once more from the bundle.
for f in "$out"/lib/*; do
  LD_LIBRARY_PATH=$out/lib ldd "$f" 2>/dev/null | grep 'not found' &&
    die "$f needs a library the bundle lacks"
done

if [ $strip_debug -eq 1 ]; then
  for f in "$out"/bin/* "$out"/lib/* $(find "$out/tree" -name '*.so'); do
    strip --strip-debug "$f" || die "strip $f failed"
  done
fi

# The data of one cnn epoch (bench/train reads only the training split).
if [ $with_data -eq 1 ]; then
  mkdir -p "$out/data/fashion-mnist" || exit 1
  for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz; do
    [ -f "$data/$f" ] || die "no $data/$f (Debian's dataset-fashion-mnist; or --no-data)"
    cp "$data/$f" "$out/data/fashion-mnist/" || exit 1
  done
fi

# The scripts that run there.
cp "$src_tree/tests/gpu/run.sh" "$out/run.sh" &&
  cp "$src_tree/bench/compare/torch_bench.py" \
     "$src_tree/bench/compare/torch_gpu_bench.py" "$out/compare/" || exit 1
cat >"$out/run-here.sh" <<'EOF'
#!/bin/sh
# Runs the CUDA checks on this GPU machine with the programs of this bundle
# (made by tests/gpu/bundle.sh): see ./run.sh --help.
here=$(cd "$(dirname "$0")" && pwd)
exec sh "$here/run.sh" --bundle "$here" "$@"
EOF
chmod +x "$out/run-here.sh" "$out/run.sh"

# MANIFEST: what run.sh needs to know, and what was left to the machine.
glibc_min=$(for f in $(cat "$staged") "$out"/lib/*; do objdump -T "$f"; done 2>/dev/null |
  grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -t. -k1,1n -k2,2n -k3,3n |
  tail -n 1)
{
  echo "# weft GPU bundle (tests/gpu/bundle.sh); read by run.sh"
  echo "made=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "source=$(cd "$src_tree" && git describe --always --dirty 2>/dev/null || echo unknown)"
  echo "configure=$flags"
  echo "test_builddir=$obj"
  echo "glibc_min=$glibc_min"
  echo "cuda_toolkit=$("$cuda/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  echo "needs_from_machine=$(echo $nvidia $skipped_cxx | tr ' ' '\n' | sort -u | tr '\n' ' ')"
  echo "opened_on_first_use=$opened_on_first_use"
  echo "bundled_libraries=$(echo $bundled | tr ' ' '\n' | sort -u | tr '\n' ' ')"
  echo "plugins=$(cd "$out/tree" && find . -name '*.so' | sed 's|^\./||' | sort | tr '\n' ' ')"
  echo "data=$([ $with_data -eq 1 ] && echo data/fashion-mnist || echo none)"
} >"$out/MANIFEST"

# ---- size -------------------------------------------------------------------
bytes=$(du -sb "$out" | cut -f1)
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
say "bundle: $out"
(cd "$out" && du -sh bin lib tree compare $( [ $with_data -eq 1 ] && echo data ) | sed 's/^/   /')
say "bundled libraries:$(echo $bundled | tr ' ' '\n' | sort -u | tr '\n' ' ')"
say "left to the GPU machine: $(echo $nvidia $skipped_cxx | tr ' ' '\n' | sort -u | tr '\n' ' ')(glibc >= $glibc_min)"
say "size: $mib MiB ($bytes bytes; limit $max_mib MiB)"
if [ "$bytes" -gt $((max_mib * 1048576)) ]; then
  die "the bundle is over $max_mib MiB: try --strip or --no-data"
fi
say "on the GPU machine: $(basename "$out")/run-here.sh"
exit 0
