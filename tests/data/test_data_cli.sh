#!/bin/sh
# tests/data/test_data_cli.sh — `weft data head|count|validate` on files of
# the test reader (tests/data/test_reader.c), found through
# WEFT_PLUGIN_PATH: output, JSON, reader options, problems named with file
# and line, exit codes.
set -eu
: "${top_builddir:=.}"
weft="$top_builddir/tools/weft"
WEFT_PLUGIN_PATH="$top_builddir/tests/data/.libs"
export WEFT_PLUGIN_PATH
fail() { echo "FAIL: $*" >&2; exit 1; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '0\n1\n2\n' > "$tmp/a.tst"
printf '3\nbad\n4\nfatal\n5\n' > "$tmp/b.tst"
printf 'corrupt\n7\n' > "$tmp/c.tst"
printf '9\n' > "$tmp/odd.dat"

"$weft" data --help | grep -q "usage: weft data head SOURCE" || fail "weft data --help"
"$weft" --help | grep -q "^  data " || fail "weft --help does not list data"

# head: files, schema, records; a bad record is shown and passed over.
out=$("$weft" data head "$tmp/[ab].tst" -n 5) || fail "head failed: $out"
echo "$out" | grep -q "^2 files:" || fail "head lacks the files: $out"
echo "$out" | grep -q "  pixels  *uint8  *(4)" || fail "head lacks the schema: $out"
echo "$out" | grep -q "^record 0: index=0 label=0 pixels=\[0, 1, 2, 3\]" ||
  fail "head record 0: $out"
echo "$out" | grep -q "^bad record: $tmp/b.tst:2: bad record" ||
  fail "head does not name the bad record: $out"
echo "$out" | grep -q "^record 4: index=4" || fail "head did not go on: $out"
[ "$(echo "$out" | grep -c '^record')" -eq 5 ] || fail "head -n 5: $out"
# Long fields show their first values.
"$weft" data head "$tmp/a.tst" -n 1 --option pixels=20 |
  grep -q "pixels=\[0, 1, 2, 3, 4, 5, 6, 7, ...\] (20 values)" ||
  fail "head of a long field"
n=$("$weft" data head "$tmp/a.tst" --json --option pixels=6 |
  json 'len(d["records"]), d["fields"][2]["shape"], d["records"][2]["index"]')
[ "$n" = "3 [6] 2" ] || fail "head --json: $n"

# count: per file and in all; the reader's options reach it.
out=$("$weft" data count "$tmp/[ab].tst")
echo "$out" | grep -q "^$tmp/a.tst: 3 records" || fail "count a: $out"
echo "$out" | grep -q "^total: 7 records in 2 files" || fail "count total: $out"
n=$("$weft" data count "$tmp/a.tst" --json --option no_count=true | json 'd["records"]')
[ "$n" = 3 ] || fail "count --json by reading: $n"

# validate: every problem with file and line, bad records do not stop it,
# a corrupt file does not stop the others; exit 1.
set +e
out=$("$weft" data validate "$tmp/*.tst")
rc=$?
set -e
[ $rc -eq 1 ] || fail "validate with problems exited $rc"
echo "$out" | grep -q "^$tmp/a.tst: 3 records, ok" || fail "validate a: $out"
echo "$out" | grep -q "^$tmp/b.tst:2: bad record" || fail "validate b:2: $out"
echo "$out" | grep -q "^$tmp/b.tst:4: unreadable record" || fail "validate b:4: $out"
echo "$out" | grep -q "^$tmp/c.tst:1: the file is corrupt" || fail "validate c: $out"
echo "$out" | grep -q "^checked 5 records in 3 files: 3 problems" ||
  fail "validate summary: $out"
"$weft" data validate "$tmp/a.tst" >/dev/null || fail "validate of a good file failed"
set +e
n=$("$weft" data validate "$tmp/b.tst" --json | json 'd["ok"], d["problems"], d["files"][0]["problems"][0]')
set -e
[ "$n" = "False 2 $tmp/b.tst:2: bad record" ] || fail "validate --json: $n"
# The pipeline names the file when the reader does not.
set +e
out=$("$weft" data validate "$tmp/b.tst" --option path_in_errors:bool=false)
set -e
echo "$out" | grep -q "^$tmp/b.tst: line 2: bad record" ||
  fail "validate without the reader naming the file: $out"

# --format: a reader by name for a file its suffix does not select.
"$weft" data head "$tmp/odd.dat" --format tst | grep -q "^record 0: index=9" ||
  fail "head --format tst"
set +e
msg=$("$weft" data count "$tmp/odd.dat" 2>&1)
rc=$?
set -e
[ $rc -eq 1 ] || fail "a file no reader handles: exit $rc"
echo "$msg" | grep -q "odd.dat: no reader handles this file name" ||
  fail "unhandled file message: $msg"
echo "$msg" | grep -q "tst (tst, tst.txt)" || fail "known formats not listed: $msg"
set +e
msg=$("$weft" data head "$tmp/a.tst" --option bogus=1 2>&1)
[ $? -eq 1 ] || fail "an unknown option is not an error"
echo "$msg" | grep -q "'bogus'" || fail "unknown option message: $msg"
"$weft" data count "$tmp/none-*.tst" 2>&1 | grep -q "no such file matches" ||
  fail "missing files message"

# Usage errors exit 2.
"$weft" data frob "$tmp/a.tst" 2>/dev/null; [ $? -eq 2 ] || fail "unknown action"
"$weft" data head 2>/dev/null; [ $? -eq 2 ] || fail "missing SOURCE"
"$weft" ops -n 3 2>/dev/null; [ $? -eq 2 ] || fail "-n outside data"
"$weft" data head "$tmp/a.tst" --option novalue 2>/dev/null; [ $? -eq 1 ] ||
  fail "--option without ="
set -e
echo "test_data_cli: all passed"
