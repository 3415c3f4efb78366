#!/bin/sh
# tests/tools/test_ckpt.sh — `weft ckpt` on checkpoints that
# tests/core/ckpt_fixture writes: ls lists each checkpoint and which one is
# corrupt, verify lists every problem and exits 1, diff reports each kind
# of difference and exits 0 only for identical files, --json output parses,
# bad usage exits 2. When Python's safetensors package is installed, the
# files weft writes load there (every dtype) and the files it writes verify
# here; without it that part is skipped.
set -eu
: "${top_builddir:=.}"
weft="$top_builddir/tools/weft"
fixture="$top_builddir/tests/core/ckpt_fixture"
fail() { echo "FAIL: $*" >&2; exit 1; }
json_ok() { python3 -c 'import json,sys; json.load(sys.stdin)' || fail "$1: output is not JSON"; }
# Flips the last byte of a file (the last tensor's data).
flip_last() {
  size=$(wc -c < "$1")
  printf '\377' | dd of="$1" bs=1 seek=$((size - 1)) conv=notrunc 2>/dev/null
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
d="$tmp/ckpts"
mkdir "$d"
"$fixture" "$d/ckpt-0000000010.safetensors" -m weft.global_step=10 \
  w:float32:2x3:1.5 b:int64:3:7
"$fixture" "$d/ckpt-0000000020.safetensors" -m weft.global_step=20 \
  w:float32:2x3:2 b:int64:3:8 c:float16:2:15360
# Step 30: two tensors corrupt (z is written last, a first).
"$fixture" "$d/ckpt-0000000030.safetensors" a:int32:4:1 z:float64:2:1
flip_last "$d/ckpt-0000000030.safetensors"
size=$(wc -c < "$d/ckpt-0000000030.safetensors")
printf '\377' | dd of="$d/ckpt-0000000030.safetensors" bs=1 \
  seek=$((size - 17)) conv=notrunc 2>/dev/null
echo "not a checkpoint" > "$d/notes.txt"

# ---- ls ----
out=$("$weft" ckpt ls "$d") || fail "ckpt ls exited $?"
echo "$out" | grep -Eq "^ckpt-0000000010.safetensors +10 +[0-9]+ +2  OK$" ||
  fail "ckpt ls: step 10 not listed as OK:
$out"
echo "$out" | grep -Eq "^ckpt-0000000020.safetensors +20 +[0-9]+ +3  OK$" ||
  fail "ckpt ls: step 20 not listed as OK:
$out"
echo "$out" | grep "ckpt-0000000030" | grep -q "corrupt: 2 problems: tensor 'a': checksum mismatch" ||
  fail "ckpt ls: step 30 not listed as corrupt:
$out"
echo "$out" | grep -q notes.txt && fail "ckpt ls lists a file that is not a checkpoint"
"$weft" ckpt ls "$d" --json | json_ok "ckpt ls --json"
[ "$("$weft" ckpt ls "$d" --json | python3 -c 'import json,sys; print([e["ok"] for e in json.load(sys.stdin)])')" = "[True, True, False]" ] ||
  fail "ckpt ls --json: wrong ok flags"
msg=$("$weft" ckpt ls "$tmp/absent" 2>&1) && fail "ckpt ls of a missing directory succeeded"
echo "$msg" | grep -q "$tmp/absent" || fail "ckpt ls: error does not name the directory: $msg"

# ---- verify ----
"$weft" ckpt verify "$d/ckpt-0000000010.safetensors" |
  grep -q "ckpt-0000000010.safetensors: OK (2 tensors, every checksum matches)" ||
  fail "ckpt verify of a good file"
set +e
out=$("$weft" ckpt verify "$d/ckpt-0000000030.safetensors")
rc=$?
set -e
[ $rc -eq 1 ] || fail "ckpt verify of a corrupt file exited $rc"
echo "$out" | grep -q "tensor 'z': checksum mismatch" || fail "ckpt verify misses z: $out"
echo "$out" | grep -q "tensor 'a': checksum mismatch" || fail "ckpt verify misses a: $out"
echo "$out" | grep -q ": 2 problems$" || fail "ckpt verify does not count the problems: $out"
"$weft" ckpt verify --json "$d/ckpt-0000000030.safetensors" | json_ok "ckpt verify --json"
# A truncated file and one that is not safetensors at all.
head -c 40 "$d/ckpt-0000000010.safetensors" > "$tmp/cut.safetensors"
out=$("$weft" ckpt verify "$tmp/cut.safetensors") && fail "ckpt verify accepted a cut file"
echo "$out" | grep -q "cut.safetensors: the header length [0-9]* runs past the end" ||
  fail "ckpt verify of a cut file: $out"
out=$("$weft" ckpt verify "$d/notes.txt") && fail "ckpt verify accepted a text file"
echo "$out" | grep -q "notes.txt:" || fail "ckpt verify of a text file: $out"

# ---- diff ----
a="$d/ckpt-0000000010.safetensors"
b="$d/ckpt-0000000020.safetensors"
[ "$("$weft" ckpt diff "$a" "$a")" = "identical" ] || fail "ckpt diff of a file with itself"
set +e
out=$("$weft" ckpt diff "$a" "$b")
rc=$?
set -e
[ $rc -eq 1 ] || fail "ckpt diff of different files exited $rc"
for want in "only in B: c (float16 (2))" \
  "values differ: w: max abs difference 0.5" \
  "values differ: b: 3 of 3 elements differ" \
  "metadata differs: weft.global_step: '10' in A, '20' in B"; do
  echo "$out" | grep -qF "$want" || fail "ckpt diff lacks \"$want\":
$out"
done
"$fixture" "$tmp/x.safetensors" w:float64:2x3:1 s:int32:2:1 gone:uint8:1:1
"$fixture" "$tmp/y.safetensors" w:float32:2x3:1 s:int32:3:1 new:bool:2:1
set +e
out=$("$weft" ckpt diff "$tmp/x.safetensors" "$tmp/y.safetensors")
rc=$?
set -e
[ $rc -eq 1 ] || fail "ckpt diff exited $rc"
for want in "dtype differs: w: float64 in A, float32 in B" \
  "shape differs: s: (2) in A, (3) in B" "only in A: gone (uint8 (1))" \
  "only in B: new (bool (2))"; do
  echo "$out" | grep -qF "$want" || fail "ckpt diff lacks \"$want\":
$out"
done
"$weft" ckpt diff --json "$a" "$b" | json_ok "ckpt diff --json"
msg=$("$weft" ckpt diff "$a" "$tmp/absent.safetensors" 2>&1) && fail "ckpt diff with a missing file succeeded"
echo "$msg" | grep -q "absent.safetensors" || fail "ckpt diff: error does not name the file: $msg"
msg=$("$weft" ckpt diff "$a" "$d/ckpt-0000000030.safetensors" 2>&1) &&
  fail "ckpt diff with a corrupt file succeeded"

# ---- usage ----
"$weft" ckpt --help | grep -q "usage: weft ckpt ls DIR" || fail "ckpt --help"
set +e
"$weft" ckpt frobnicate x 2>/dev/null
[ $? -eq 2 ] || fail "ckpt with an unknown action should exit 2"
"$weft" ckpt verify 2>/dev/null
[ $? -eq 2 ] || fail "ckpt verify without a file should exit 2"
"$weft" ckpt ls "$d" --bogus 2>/dev/null
[ $? -eq 2 ] || fail "ckpt with an unknown option should exit 2"
set -e

# ---- other programs ----
if python3 -c 'import safetensors.numpy' 2>/dev/null; then
  "$fixture" "$tmp/all.safetensors" f32:float32:2x3:1.5 f64:float64:2:-2.25 \
    f16:float16:2:15360 bf16:bfloat16:2:16256 i8:int8:3:-3 u8:uint8:2:200 \
    i32:int32:2x2:-70000 i64:int64::1099511627776 flag:bool:2:1 \
    empty:float32:0x4:0 -m note=hello
  python3 - "$tmp/all.safetensors" "$tmp/py.safetensors" <<'EOF' || fail "python safetensors cannot read what weft wrote"
import sys
import numpy as np
import safetensors
import safetensors.numpy as sn
from safetensors import safe_open

path, out = sys.argv[1], sys.argv[2]
# bfloat16 has no numpy dtype: check every tensor's raw bytes.
raw = {name: info for name, info in safetensors.deserialize(open(path, "rb").read())}
want = {
    "f32": ("F32", [2, 3], np.full((2, 3), 1.5, np.float32)),
    "f64": ("F64", [2], np.full(2, -2.25, np.float64)),
    "f16": ("F16", [2], np.full(2, 1.0, np.float16)),
    "bf16": ("BF16", [2], np.full(2, 0x3F80, np.uint16)),
    "i8": ("I8", [3], np.full(3, -3, np.int8)),
    "u8": ("U8", [2], np.full(2, 200, np.uint8)),
    "i32": ("I32", [2, 2], np.full((2, 2), -70000, np.int32)),
    "i64": ("I64", [], np.array(1 << 40, np.int64)),
    "flag": ("BOOL", [2], np.full(2, True)),
    "empty": ("F32", [0, 4], np.zeros((0, 4), np.float32)),
}
assert sorted(raw) == sorted(want), sorted(raw)
for name, (dtype, shape, values) in want.items():
    info = raw[name]
    assert info["dtype"] == dtype, (name, info["dtype"])
    assert list(info["shape"]) == shape, (name, info["shape"])
    assert bytes(info["data"]) == values.astype(values.dtype.newbyteorder("<")).tobytes(), name
with safe_open(path, "numpy") as f:
    meta = f.metadata()
    assert (f.get_tensor("f32") == 1.5).all()
    assert f.get_tensor("i64") == 1 << 40
assert meta["note"] == "hello" and meta["weft.format"] == "1", meta
sn.save_file({"x": np.arange(6, dtype=np.float32).reshape(2, 3),
              "n": np.array([1, 2], np.int64)}, out, metadata={"format": "np"})
EOF
  "$weft" ckpt verify "$tmp/py.safetensors" | grep -q "OK (2 tensors; no checksums" ||
    fail "ckpt verify of a file written by python safetensors"
else
  echo "python safetensors is not installed: skipping the checks against it"
fi
echo "test_ckpt: all passed"
