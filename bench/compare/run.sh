#!/bin/sh
# bench/compare/run.sh — builds weft's bench programs, then runs them, the
# same workloads in PyTorch and the cnn inference in ONNX Runtime in one go
# (compare.py) and prints the side-by-side table. Installs nothing: see
# README.md for what the Python side needs.
#
#   bench/compare/run.sh [compare.py options]      (from weft's build tree)
#   PYTHON=/path/to/python bench/compare/run.sh --skip-search
set -eu
export PYTHONDONTWRITEBYTECODE=1
here=$(cd "$(dirname "$0")" && pwd)
top=${WEFT_TOP:-$(cd "$here/../.." && pwd)}

if [ -z "${PYTHON:-}" ]; then
  if [ -x /opt/weft-compare/bin/python ]; then
    PYTHON=/opt/weft-compare/bin/python
  else
    PYTHON=python3
  fi
fi
if ! "$PYTHON" -c 'import torch, onnxruntime, numpy' 2>/dev/null; then
  echo "run.sh: $PYTHON cannot import torch, onnxruntime and numpy;" \
       "see bench/compare/README.md (or set PYTHON)" >&2
  exit 1
fi
if [ ! -f "$top/Makefile" ]; then
  echo "run.sh: $top has no Makefile: run ./configure there first" >&2
  exit 1
fi
make -C "$top" -j2 bench/train bench/cnn_infer bench/gemm bench/dispatch >&2
exec "$PYTHON" "$here/compare.py" --top "$top" --python "$PYTHON" "$@"
