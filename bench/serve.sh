#!/bin/sh
# bench/serve.sh — `weft serve` under load on loopback: wrk POSTs one
# Fashion-MNIST image to the cnn saved model's predict endpoint at 1, 16
# and 64 concurrent connections, with dynamic batching off and on, and
# bench/serve_inproc runs the same image through a prepared callable
# in-process for comparison. One JSON line per result; nothing is judged.
#
#   bench/serve.sh [MODEL_DIR [SAMPLE.npy]]   (from the build directory)
# Without a model, trains the cnn for one short epoch and exports it
# (examples/train_fashion). Needs wrk (Debian package wrk) and python3.
# SERVE_SECONDS (default 10) sets each run's length. Both the server and
# the in-process run use the runtime config $SERVE_CONFIG; by default one
# with [threads] intra_op = 1, so the kernels' OpenMP teams do not compete
# with the connection threads for the cores (a team that loses a core to
# them stalls at its barrier for milliseconds).
set -eu
top=${top_builddir:-.}
weft="$top/tools/weft"
secs=${SERVE_SECONDS:-10}
command -v wrk >/dev/null || { echo "bench/serve.sh: needs wrk" >&2; exit 1; }
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
if [ -z "${SERVE_CONFIG:-}" ]; then
  SERVE_CONFIG="$tmp/weft.conf"
  printf '[threads]\nintra_op = 1\n' > "$SERVE_CONFIG"
fi
model=${1:-}
sample=${2:-}
if [ -z "$model" ]; then
  model="$tmp/cnn" sample="$tmp/sample.npy"
  "$top/examples/train_fashion" --model cnn --epochs 1 --limit 6000 --quiet \
    --export "$model" --sample "$sample" >/dev/null
fi
# The request: the sample's first image as one instance.
python3 - "$sample" > "$tmp/body.json" <<'PY'
import ast, json, struct, sys
raw = open(sys.argv[1], "rb").read()
hlen = struct.unpack("<H", raw[8:10])[0]
head = ast.literal_eval(raw[10:10 + hlen].decode())
assert head["descr"] == "<f4", head
shape = head["shape"]
n = 1
for d in shape[1:]:
    n *= d
vals = struct.unpack("<%df" % n, raw[10 + hlen:10 + hlen + 4 * n])
rows = [list(vals[i * shape[2]:(i + 1) * shape[2]]) for i in range(shape[1])]
json.dump({"signature_name": "serve", "instances": [rows]}, sys.stdout)
PY
cat > "$tmp/post.lua" <<LUA
local f = io.open("$tmp/body.json", "rb")
wrk.method = "POST"
wrk.body = f:read("*a")
wrk.headers["Content-Type"] = "application/json"
f:close()
LUA

for b in 1 -64; do
  WEFT_CONFIG="$SERVE_CONFIG" "$top/bench/serve_inproc" "$model" serve image \
    "$sample" "$b" 2000
done

# wrk's latency lines ("50%  1.23ms") in microseconds.
us() { awk -v p="$1" '$1 == p { v = $2; u = 1;
  if (v ~ /us$/) u = 1; else if (v ~ /ms$/) u = 1000; else if (v ~ /s$/) u = 1000000;
  sub(/[a-z]+$/, "", v); printf "%.1f", v * u }'; }

for batching in off on; do
  if [ $batching = on ]; then
    opts="--max-batch-size 64 --batch-timeout-micros ${BATCH_TIMEOUT_US:-2000} --num-batch-threads 1"
  else
    opts=
  fi
  # shellcheck disable=SC2086
  "$weft" --config "$SERVE_CONFIG" serve --port 0 --log-level warn --model "cnn=$model" $opts \
    > "$tmp/server.out" 2> "$tmp/server.log" &
  pid=$!
  for _ in $(seq 100); do
    grep -q "listening on" "$tmp/server.out" 2>/dev/null && break
    sleep 0.1
  done
  url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$tmp/server.out")
  [ -n "$url" ] || { cat "$tmp/server.log" >&2; exit 1; }
  for c in 1 16 64; do
    t=$c; [ "$t" -gt 2 ] && t=2
    wrk -t "$t" -c "$c" -d "${secs}s" --latency -s "$tmp/post.lua" \
      "$url/v1/models/cnn:predict" > "$tmp/wrk.out"
    rps=$(awk '/^Requests\/sec:/ { print $2 }' "$tmp/wrk.out")
    p50=$(us 50% < "$tmp/wrk.out")
    p99=$(us 99% < "$tmp/wrk.out")
    errs=$(awk '/Non-2xx|Socket errors/ { printf "%s ", $0 }' "$tmp/wrk.out")
    printf '{"bench":"serve","batching":"%s","clients":%d,"req_per_s":%s,"p50_us":%s,"p99_us":%s,"errors":"%s"}\n' \
      "$batching" "$c" "$rps" "$p50" "$p99" "$errs"
  done
  kill "$pid"; wait "$pid" || true; pid=
done
