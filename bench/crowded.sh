#!/bin/sh
# bench/crowded.sh — training on cores that other work shares, with the
# CPU plugin's [threads] adapt off (the default) and on: bench/train alone,
# two of it side by side, one beside a busy loop pinned to one CPU, and one
# beside bursts on one CPU (bench/burst: busy 2 ms of every 10, the way a
# host takes a virtual machine's core now and then).
# One JSON line per run (samples/s of each process); nothing is judged.
#
#   bench/crowded.sh [MODEL ...]   (from the build directory; default: mlp
#                                   cnn)
# CROWDED_SECONDS (default 4) sets each run's length. Needs taskset
# (util-linux) for the busy loop.
set -eu
top=${top_builddir:-.}
train="$top/bench/train"
secs=${CROWDED_SECONDS:-4}
[ $# -gt 0 ] || set -- mlp cnn
tmp=$(mktemp -d)
hog=
cleanup() { [ -n "$hog" ] && kill "$hog" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
printf '[threads]\nadapt = false\n' > "$tmp/off.conf"
printf '[threads]\nadapt = true\n' > "$tmp/on.conf"

# The samples/s of one bench/train run of model $1 under config $2.
rate() {
  WEFT_CONFIG="$2" "$train" --model "$1" --min-seconds "$secs" 2>/dev/null |
    sed -n 's/.*"samples_per_s":\([0-9.]*\).*/\1/p' | tail -1
}

# One line for model $model under config $conf ($adapt) with the command
# $2... running beside it (killed after), case named $1.
beside() {
  name=$1
  shift
  "$@" > /dev/null &
  hog=$!
  b=$(rate "$model" "$conf")
  kill "$hog"
  wait "$hog" 2>/dev/null || true
  hog=
  echo "{\"bench\":\"crowded\",\"model\":\"$model\",\"adapt\":\"$adapt\",\"case\":\"$name\",\"samples_per_s\":[${b:-null}]}"
}

for model in "$@"; do
  for adapt in off on; do
    conf="$tmp/$adapt.conf"
    a=$(rate "$model" "$conf")
    echo "{\"bench\":\"crowded\",\"model\":\"$model\",\"adapt\":\"$adapt\",\"case\":\"alone\",\"samples_per_s\":[${a:-null}]}"
    rate "$model" "$conf" > "$tmp/r1" &
    p1=$!
    rate "$model" "$conf" > "$tmp/r2"
    wait "$p1"
    echo "{\"bench\":\"crowded\",\"model\":\"$model\",\"adapt\":\"$adapt\",\"case\":\"side by side\",\"samples_per_s\":[$(cat "$tmp/r1"),$(cat "$tmp/r2")]}"
    beside "beside a busy loop on one CPU" \
      taskset -c "$(taskset -pc $$ | sed 's/.*: *//; s/[,-].*//')" \
      sh -c 'while :; do :; done'
    beside "beside bursts on one CPU (2 ms of 10)" \
      "$top/bench/burst" --busy 2 --period 10
  done
done
