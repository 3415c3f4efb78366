#!/usr/bin/env python3
"""tests/serve/test_serve.py — `weft serve` as its clients see it, over
loopback HTTP with Python's standard library (and curl where installed):
every endpoint of TensorFlow Serving's REST API and of KServe v2, row and
columnar formats, b64 bytes, NaN/Infinity, the error cases with their codes,
slow and vanishing clients, /metrics, a version swap under concurrent load
with no failed request, a version that fails to load, batching on and off
giving identical answers, a full batch queue answering 429, and a clean
shutdown on SIGTERM with the requests in flight answered.

usage: test_serve.py WEFT MAKE_MODEL"""
import base64
import http.client
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

WEFT, MAKE_MODEL = sys.argv[1], sys.argv[2]
TMP = tempfile.mkdtemp(prefix="weft-serve-test.")
FAILURES = []

W = [[1, 0, -1], [0.5, 2, 0], [-1, 1, 3], [0.25, -0.5, 1]]
B = [0.1, -0.2, 0.3]


def fail(msg):
    FAILURES.append(msg)
    print("FAIL:", msg, flush=True)


def check(cond, msg):
    if not cond:
        fail(msg)
    return cond


def expect_y(x, scale):
    return [sum(x[i] * W[i][j] * scale for i in range(4)) + B[j]
            for j in range(3)]


def close(a, b, tol=1e-4):
    return all(abs(p - q) <= tol * (1 + abs(q)) for p, q in zip(a, b))


def make_model(dirname, scale):
    subprocess.run([MAKE_MODEL, dirname, str(scale)], check=True)


class Server:
    def __init__(self, args, name):
        self.log = open(os.path.join(TMP, name + ".log"), "w+")
        self.proc = subprocess.Popen(
            [WEFT, "serve", "--port", "0"] + args, stdout=subprocess.PIPE,
            stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        if "listening on http://127.0.0.1:" not in line:
            self.proc.kill()
            self.log.seek(0)
            raise SystemExit("server did not start: %r\n%s" %
                             (line, self.log.read()))
        self.port = int(line.rsplit(":", 1)[1])

    def request(self, method, path, body=None, headers=None, raw=False):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        if raw:
            return resp.status, data
        try:
            return resp.status, json.loads(data) if data else None
        except ValueError:
            return resp.status, data.decode()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=60)
        self.log.seek(0)
        return rc, self.log.read()


def error_case(srv, method, path, body, code, words, what):
    status, ans = srv.request(method, path, body)
    ok = check(status == code, "%s: HTTP %d, want %d (%s)" %
               (what, status, code, ans))
    if ok and words:
        msg = ans.get("error", "") if isinstance(ans, dict) else ""
        check(words in msg, "%s: error %r lacks %r" % (what, msg, words))


def test_tf_api(srv):
    s, ans = srv.request("GET", "/v1/models/m")
    check(s == 200 and ans["model_version_status"][0]["version"] == "1" and
          ans["model_version_status"][0]["state"] == "AVAILABLE",
          "model status: %s %s" % (s, ans))
    s, ans = srv.request("GET", "/v1/models/m/versions/1")
    check(s == 200, "version status %s" % s)
    s, ans = srv.request("GET", "/v1/models/m/metadata")
    sd = ans["metadata"]["signature_def"]["signature_def"]
    x = sd["serving_default"]["inputs"]["x"]
    check(x["dtype"] == "DT_FLOAT" and
          [d["size"] for d in x["tensor_shape"]["dim"]] == ["-1", "4"],
          "metadata of x: %s" % x)
    check(sd["add"]["outputs"]["pos"]["dtype"] == "DT_BOOL", "pos dtype")
    check(ans["model_spec"]["version"] == "1", "metadata version")

    xs = [[1, 2, 3, 4], [0, -1, 0.5, 2]]
    s, ans = srv.request("POST", "/v1/models/m:predict", {"instances": xs})
    if check(s == 200, "row predict: %s %s" % (s, ans)):
        for x, p in zip(xs, ans["predictions"]):
            want = expect_y(x, 1)
            check(close(p["y"], want), "row y %s != %s" % (p["y"], want))
            check(p["cls"] == want.index(max(want)), "row cls %s" % p)
    s, ans = srv.request("POST", "/v1/models/m/versions/1:predict",
                         {"signature_name": "serving_default",
                          "inputs": {"x": xs}})
    if check(s == 200, "columnar predict: %s %s" % (s, ans)):
        check(close(ans["outputs"]["y"][1], expect_y(xs[1], 1)), "columnar y")
        check(len(ans["outputs"]["cls"]) == 2, "columnar cls")
    s, ans = srv.request("POST", "/v1/models/m:predict", {"inputs": xs})
    check(s == 200 and "y" in ans["outputs"], "bare columnar: %s" % ans)
    s, ans = srv.request("POST", "/v1/models/s:predict",
                         {"signature_name": "add",
                          "instances": [{"a": [1, 0], "b": [2, 3]},
                                        {"a": [0.5, -1], "b": [0, 0]}]})
    check(s == 200 and ans["predictions"] ==
          [{"sum": [3, 3], "pos": [True, False]},
           {"sum": [0.5, -1], "pos": [True, True]}],
          "named row inputs: %s %s" % (s, ans))
    s, ans = srv.request("POST", "/v1/models/s:predict",
                         {"signature_name": "add",
                          "inputs": {"a": [[1, 2]], "b": [[3, 4.25]]}})
    check(s == 200 and ans["outputs"]["sum"] == [[4, 6.25]],
          "named columnar: %s" % ans)
    # Bytes: one b64 object per row, or a list of them.
    b1 = base64.b64encode(bytes([1, 2, 3])).decode()
    b2 = base64.b64encode(bytes([200, 100, 0])).decode()
    s, ans = srv.request("POST", "/v1/models/m:predict",
                         {"signature_name": "bytes",
                          "instances": [{"b64": b1}, {"b64": b2}]})
    check(s == 200 and ans["predictions"] == [6, 300], "b64 rows: %s" % ans)
    s, ans = srv.request("POST", "/v1/models/m:predict",
                         {"signature_name": "bytes",
                          "inputs": {"u": [{"b64": b1}]}})
    check(s == 200 and ans["outputs"] == [6], "b64 columnar: %s" % ans)
    # NaN and Infinity, in and out.
    s, data = srv.request("POST", "/v1/models/m:predict",
                          '{"instances": [[NaN, 0, 0, 0], [Infinity, 0, 0, '
                          '-Infinity]]}', raw=True)
    text = data.decode()
    ans = json.loads(text)
    check(s == 200 and "NaN" in text and math.isnan(ans["predictions"][0]
                                                    ["y"][0]),
          "NaN: %s" % text)
    check(ans["predictions"][1]["y"][2] == -math.inf and "-Infinity" in text,
          "Infinity: %s" % text)
    # A signature without a batch dimension.
    s, ans = srv.request("POST", "/v1/models/m:predict",
                         {"signature_name": "fixed", "inputs": [1, 2, 3]})
    check(s == 200 and ans["outputs"] == [2, 4, 6], "fixed: %s" % ans)


def test_errors(srv):
    P = "/v1/models/m:predict"
    error_case(srv, "POST", P, '{"instances": [[1, 2, 3, 4]', 400,
               "malformed JSON", "truncated JSON")
    error_case(srv, "POST", P, 'nonsense', 400, "malformed JSON",
               "not JSON")
    error_case(srv, "POST", P, '[1]', 400, "JSON object", "not an object")
    error_case(srv, "POST", P, {"signature_name": "serving_default"}, 400,
               "missing 'instances' or 'inputs'", "no inputs")
    error_case(srv, "POST", P, {"instances": [[1, 2, 3]]}, 400,
               "the signature wants (?, 4)", "wrong shape")
    error_case(srv, "POST", P, {"instances": [[1, 2, 3, 4], [1, 2]]}, 400,
               "instances[1]", "ragged rows")
    error_case(srv, "POST", P, {"instances": [["a", 2, 3, 4]]}, 400,
               "expected a number for float32, got a string",
               "wrong dtype")
    error_case(srv, "POST", P, {"instances": []}, 400, "empty",
               "no instances")
    error_case(srv, "POST", P, {"instances": [[1, 2, 3, 4]], "inputs": []},
               400, "not both", "both formats")
    error_case(srv, "POST", P,
               {"signature_name": "add", "instances": [{"a": [1, 2]}]},
               400, "lacks input 'b'", "missing input")
    error_case(srv, "POST", P,
               {"signature_name": "add",
                "instances": [{"a": [1, 2], "b": [1, 2], "c": 1}]},
               400, "'c'", "unknown input")
    error_case(srv, "POST", P,
               {"signature_name": "fixed", "inputs": [1, 2, 10000000000]},
               400, "out of range for int32", "int range")
    error_case(srv, "POST", P,
               {"signature_name": "fixed", "inputs": [1, 2, 3.5]},
               400, "expected an integer", "float for int")
    error_case(srv, "POST", P,
               {"signature_name": "bytes", "instances": [{"b64": "!!"}]},
               400, "base64", "bad base64")
    error_case(srv, "POST", P, {"signature_name": "nope", "instances": [1]},
               404, "has no signature 'nope'", "unknown signature")
    error_case(srv, "POST", "/v1/models/zz:predict", {"instances": [1]}, 404,
               "'zz' is not served", "unknown model")
    error_case(srv, "POST", "/v1/models/m/versions/9:predict",
               {"instances": [[1, 2, 3, 4]]}, 404, "version 9",
               "unknown version")
    error_case(srv, "GET", "/v1/models/m/versions/9", None, 404,
               "no version 9", "status of an unknown version")
    error_case(srv, "GET", "/v1/models/m/versions/x1", None, 400, "number",
               "bad version")
    error_case(srv, "GET", P, None, 405, "GET", "GET on predict")
    error_case(srv, "POST", "/v1/models/m:classify", {"examples": []}, 501,
               "classify", "classify")
    error_case(srv, "GET", "/nowhere", None, 404, "/nowhere", "unknown path")
    # Oversized bodies: declared, and (chunked) discovered while reading.
    big = '{"instances": [' + ",".join(["[1,2,3,4]"] * 20000) + "]}"
    error_case(srv, "POST", P, big, 413, "limit", "oversized body")
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    conn.request("POST", P, body=iter([big[i:i + 4096].encode()
                                       for i in range(0, len(big), 4096)]),
                 encode_chunked=True,
                 headers={"Transfer-Encoding": "chunked"})
    resp = conn.getresponse()
    check(resp.status == 413, "chunked oversized body: %d" % resp.status)
    resp.read()
    conn.close()


def test_kserve(srv):
    s, ans = srv.request("GET", "/v2/health/live")
    check(s == 200, "live %s" % s)
    s, ans = srv.request("GET", "/v2/health/ready")
    check(s == 200 and ans["ready"] is True, "ready %s %s" % (s, ans))
    s, ans = srv.request("GET", "/v2")
    check(s == 200 and ans["name"] == "weft", "server metadata %s" % ans)
    s, ans = srv.request("GET", "/v2/models/m")
    check(s == 200 and ans["inputs"] == [{"name": "x", "datatype": "FP32",
                                          "shape": [-1, 4]}] and
          ans["versions"] == ["1"],
          "v2 model metadata %s" % ans)
    s, ans = srv.request("GET", "/v2/models/m/versions/1/ready")
    check(s == 200 and ans["ready"] is True, "v2 ready %s" % ans)
    xs = [1, 2, 3, 4, 0, -1, 0.5, 2]
    req = {"id": "r1", "inputs": [{"name": "x", "shape": [2, 4],
                                   "datatype": "FP32", "data": xs}]}
    s, ans = srv.request("POST", "/v2/models/m/infer", req)
    if check(s == 200, "v2 infer %s %s" % (s, ans)):
        out = {o["name"]: o for o in ans["outputs"]}
        check(ans["id"] == "r1" and ans["model_name"] == "m" and
              ans["model_version"] == "1", "v2 infer header %s" % ans)
        check(out["y"]["shape"] == [2, 3] and out["y"]["datatype"] == "FP32"
              and close(out["y"]["data"][3:], expect_y(xs[4:], 1)),
              "v2 y %s" % out["y"])
        check(out["cls"]["datatype"] == "INT64" and out["cls"]["shape"] == [2],
              "v2 cls %s" % out["cls"])
    req["inputs"][0]["data"] = [xs[:4], xs[4:]]
    req["outputs"] = [{"name": "cls"}]
    s, ans = srv.request("POST", "/v2/models/m/versions/1/infer", req)
    check(s == 200 and [o["name"] for o in ans["outputs"]] == ["cls"],
          "v2 nested data and output filter: %s" % ans)
    error_case(srv, "POST", "/v2/models/m/infer",
               {"inputs": [{"name": "x", "shape": [2, 4], "datatype": "FP64",
                            "data": xs}]}, 400, "datatype 'FP64'",
               "v2 wrong datatype")
    error_case(srv, "POST", "/v2/models/m/infer",
               {"inputs": [{"name": "x", "shape": [2, 4], "datatype": "FP32",
                            "data": xs[:7]}]}, 400, "7 values",
               "v2 too few values")
    error_case(srv, "POST", "/v2/models/m/infer", {"inputs": []}, 400,
               "lacks input 'x'", "v2 missing input")
    error_case(srv, "POST", "/v2/models/m/infer", {"outputs": []}, 400,
               "'inputs' list", "v2 no inputs")
    error_case(srv, "GET", "/v2/models/nope", None, 404, "'nope'",
               "v2 unknown model")
    error_case(srv, "GET", "/v2/models/m/versions/5/ready", None, 503, None,
               "v2 unknown version ready")


def test_curl(srv):
    if not shutil.which("curl"):
        print("test_serve: curl is not installed; its checks are skipped")
        return
    out = subprocess.run(
        ["curl", "-sS", "-d", '{"instances": [[1, 2, 3, 4]]}',
         "http://127.0.0.1:%d/v1/models/m:predict" % srv.port],
        capture_output=True, text=True, timeout=30)
    check(out.returncode == 0 and
          close(json.loads(out.stdout)["predictions"][0]["y"],
                expect_y([1, 2, 3, 4], 1)), "curl predict: %s" % out)
    out = subprocess.run(
        ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
         "http://127.0.0.1:%d/v1/models/nope" % srv.port],
        capture_output=True, text=True, timeout=30)
    check(out.stdout == "404", "curl 404: %s" % out)


def test_bad_clients(srv, timeout):
    # A client that stops mid-headers is dropped after the timeout, while
    # everyone else is served.
    slow = socket.create_connection(("127.0.0.1", srv.port))
    slow.sendall(b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\n")
    # One that vanishes mid-body.
    gone = socket.create_connection(("127.0.0.1", srv.port))
    gone.sendall(b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\n"
                 b"Content-Length: 1000\r\n\r\n{\"instances\": [[1,")
    gone.close()
    s, _ = srv.request("GET", "/v1/models/m")
    check(s == 200, "served while a client is slow: %d" % s)
    slow.settimeout(timeout + 10)
    t0 = time.time()
    try:
        data = slow.recv(4096)
    except OSError:
        data = b""
    check(time.time() - t0 < timeout + 8,
          "the slow client was not dropped after the timeout")
    check(b" 200 " not in data, "the slow client got an answer: %r" % data)
    slow.close()
    s, _ = srv.request("POST", "/v1/models/m:predict",
                       {"instances": [[1, 2, 3, 4]]})
    check(s == 200, "served after bad clients: %d" % s)


def test_metrics(srv):
    s, text = srv.request("GET", "/metrics", raw=True)
    text = text.decode()
    for want in [
            'weft_serve_requests_total{model="m",version="1",api="predict",'
            'code="200"}',
            'weft_serve_requests_total{model="m",version="1",api="predict",'
            'code="400"}',
            'weft_serve_requests_total{model="",version="",api="predict",'
            'code="404"}',
            'weft_serve_request_duration_seconds_bucket{model="m",'
            'version="1",le="+Inf"}',
            'weft_serve_batch_size_count{model="m",version="1",'
            'signature="serving_default"}',
            'weft_serve_queue_depth_requests{model="m",version="1",'
            'signature="serving_default"} 0',
            'weft_serve_model_version_available{model="m",version="1"} 1']:
        check(want in text, "metrics lack %s" % want)


def hammer(srv, stop, results, body, path="/v1/models/m:predict"):
    # Back to back with a 1 ms pause, so the suite's other tests (which run
    # beside this one under make -j) keep some of the machine.
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    while not stop.is_set():
        time.sleep(0.001)
        try:
            conn.request("POST", path, body=body)
            resp = conn.getresponse()
            results.append((resp.status, resp.read()))
        except Exception as e:  # a failed request is a failure
            results.append((-1, repr(e).encode()))
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", srv.port,
                                              timeout=30)
    conn.close()


def test_version_swap(srv, base):
    x = [1, 2, 3, 4]
    body = json.dumps({"instances": [x]})
    stop, results = threading.Event(), []
    threads = [threading.Thread(target=hammer,
                                args=(srv, stop, results, body))
               for _ in range(6)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    make_model(os.path.join(TMP, "v2.tmp"), 2)
    os.rename(os.path.join(TMP, "v2.tmp"), os.path.join(base, "2"))
    deadline = time.time() + 60
    while time.time() < deadline:
        s, ans = srv.request("GET", "/v1/models/m")
        if ans["model_version_status"][0]["version"] == "2" and \
                ans["model_version_status"][0]["state"] == "AVAILABLE":
            break
        time.sleep(0.1)
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join()
    bad = [r for r in results if r[0] != 200]
    check(not bad, "%d of %d requests failed during the swap: %s" %
          (len(bad), len(results), bad[:3]))
    ys = [json.loads(r[1])["predictions"][0]["y"] for r in results
          if r[0] == 200]
    v1 = sum(close(y, expect_y(x, 1)) for y in ys)
    v2 = sum(close(y, expect_y(x, 2)) for y in ys)
    check(v1 + v2 == len(ys) and v1 > 0 and v2 > 0,
          "answers during the swap: %d of version 1, %d of version 2, %d "
          "neither" % (v1, v2, len(ys) - v1 - v2))
    print("test_serve: version swap under load: %d requests, none failed "
          "(%d answered by version 1, %d by version 2)" %
          (len(results), v1, v2), flush=True)
    s, ans = srv.request("GET", "/v1/models/m")
    states = {v["version"]: v["state"] for v in ans["model_version_status"]}
    check(states == {"2": "AVAILABLE", "1": "END"}, "states %s" % states)
    # A version that fails to load is reported; version 2 keeps serving.
    os.makedirs(os.path.join(base, "3"))
    with open(os.path.join(base, "3", "model.json"), "w") as f:
        f.write("{ not a model")
    deadline = time.time() + 30
    v3 = None
    while time.time() < deadline and not v3:
        s, ans = srv.request("GET", "/v1/models/m")
        v3 = [v for v in ans["model_version_status"]
              if v["version"] == "3" and v["state"] == "END"]
        time.sleep(0.1)
    check(v3 and v3[0]["status"]["error_code"] != "OK" and
          "model.json" in v3[0]["status"]["error_message"],
          "failed version 3 is not reported: %s" % ans)
    s, ans = srv.request("POST", "/v1/models/m:predict", body)
    check(s == 200 and close(ans["predictions"][0]["y"], expect_y(x, 2)),
          "version 2 does not serve after version 3 failed: %s" % ans)
    s, ans = srv.request("GET", "/v1/models/m/versions/3")
    check(s == 200 and ans["model_version_status"][0]["state"] == "END",
          "status of version 3: %s" % ans)


def concurrent_answers(srv, bodies):
    """Sends every body at once (a barrier lines the threads up)."""
    out = [None] * len(bodies)
    barrier = threading.Barrier(len(bodies))

    def one(i):
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        conn.connect()
        barrier.wait()
        conn.request("POST", "/v1/models/m:predict", body=bodies[i])
        resp = conn.getresponse()
        out[i] = (resp.status, resp.read().decode())
        conn.close()

    threads = [threading.Thread(target=one, args=(i,))
               for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_batching(plain, batched):
    bodies = []
    for i in range(32):
        rows = [[i, i * 0.5 - 3, 1.25, -i] for _ in range(1 + i % 3)]
        if i % 4 == 3:
            bodies.append(json.dumps({"signature_name": "bytes",
                                      "instances": [list(range(i % 5 + 1))]}))
        else:
            bodies.append(json.dumps({"instances": rows}))
    a = concurrent_answers(plain, bodies)
    b = concurrent_answers(batched, bodies)
    check(all(r[0] == 200 for r in a + b), "batching answers: %s" %
          [r for r in a + b if r[0] != 200][:3])
    check(a == b, "batching on and off answer differently")
    s, text = batched.request("GET", "/metrics", raw=True)
    text = text.decode()
    counts = [l for l in text.splitlines() if l.startswith(
        'weft_serve_batch_requests_count{model="m",version="1",'
        'signature="serving_default"}')]
    runs = int(counts[0].split()[-1]) if counts else 0
    check(0 < runs < 24, "24 requests made %d batch runs" % runs)
    print("test_serve: batching: 32 concurrent requests, identical answers; "
          "24 of them ran as %d batches" % runs, flush=True)


def test_queue_full(srv):
    # max 4 rows per batch, 1 batch queued, 2 s timeout: 3 rows wait; 3 more
    # do not fit and are refused at once.
    first = []
    t = threading.Thread(target=lambda: first.append(srv.request(
        "POST", "/v1/models/m:predict", {"instances": [[1, 2, 3, 4]] * 3})))
    t.start()
    time.sleep(0.5)
    t0 = time.time()
    s, ans = srv.request("POST", "/v1/models/m:predict",
                         {"instances": [[1, 2, 3, 4]] * 3})
    took = time.time() - t0
    check(s == 429 and "full" in ans["error"], "full queue: %s %s" % (s, ans))
    check(took < 1.0, "the 429 took %.2f s" % took)
    t.join()
    check(first and first[0][0] == 200, "the queued request: %s" % first)


def test_shutdown(srv):
    body = json.dumps({"instances": [[1, 2, 3, 4]] * 8})
    stop, results = threading.Event(), []
    threads = [threading.Thread(target=hammer, args=(srv, stop, results,
                                                     body))
               for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    rc, log = srv.stop()
    stop.set()
    for t in threads:
        t.join()
    check(rc == 0, "weft serve exited %d on SIGTERM:\n%s" % (rc, log[-3000:]))
    check("SIGTERM received" in log and "stopped" in log,
          "no shutdown in the log")
    answered = [r for r in results if r[0] > 0]
    check(all(r[0] == 200 for r in answered),
          "a request got a bad answer during shutdown: %s" %
          [r for r in answered if r[0] != 200][:3])
    check(len(answered) > 0, "no request was answered before the shutdown")
    return log


def test_library_missing(model):
    """libmicrohttpd is opened when the server starts: a missing one is an
    error naming the library, the file and the variable, not a crash."""
    env = dict(os.environ, WEFT_MICROHTTPD_LIBRARY="/nonexistent/libmhd.so.12")
    p = subprocess.run([WEFT, "serve", "--port", "0", "--model",
                        "m=" + model], env=env, capture_output=True,
                       text=True, timeout=60)
    check(p.returncode != 0, "serve started without libmicrohttpd")
    for part in ("cannot use libmicrohttpd", "/nonexistent/libmhd.so.12",
                 "WEFT_MICROHTTPD_LIBRARY"):
        check(part in p.stderr, "missing library: %r not in %r"
              % (part, p.stderr))


def main():
    base = os.path.join(TMP, "m")
    os.makedirs(base)
    make_model(os.path.join(base, "1"), 1)
    single = os.path.join(TMP, "s")
    make_model(single, 1)
    test_library_missing(single)
    srv = Server(["--model", "m=" + base, "--model", "s=" + single,
                  "--poll-ms", "100", "--timeout", "2",
                  "--max-body-bytes", "100000"], "plain")
    try:
        test_tf_api(srv)
        test_errors(srv)
        test_kserve(srv)
        test_curl(srv)
        test_bad_clients(srv, 2)
        test_metrics(srv)
        # Batching on (from a model config file) against off.
        conf = os.path.join(TMP, "serve.conf")
        with open(conf, "w") as f:
            f.write("[serve]\nmax-batch-size = 16\nbatch-timeout-micros = "
                    "100000\nnum-batch-threads = 2\nlog-level = warn\n"
                    "[model m]\npath = %s\n" % os.path.join(base, "1"))
        batched = Server(["--model-config", conf], "batched")
        test_batching(srv, batched)
        rc, _ = batched.stop()
        check(rc == 0, "batched server exited %d" % rc)
        tiny = Server(["--model", "m=" + single, "--max-batch-size", "4",
                       "--max-enqueued-batches", "1",
                       "--batch-timeout-micros", "2000000",
                       "--num-batch-threads", "1"], "tiny")
        test_queue_full(tiny)
        rc, _ = tiny.stop()
        check(rc == 0, "tiny-queue server exited %d" % rc)
        test_version_swap(srv, base)
        log = test_shutdown(srv)
        check('"POST /v1/models/m:predict" 200' in log and
              '"GET /nowhere" 404' in log, "request lines missing from the log")
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
        shutil.rmtree(TMP, ignore_errors=True)
    if FAILURES:
        print("test_serve: %d failures" % len(FAILURES))
        sys.exit(1)
    print("test_serve: all passed")


if __name__ == "__main__":
    main()
