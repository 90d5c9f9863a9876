#!/usr/bin/env python3
"""server_protocol_cases.py BASE - protocol edges of a live `coli serve` (issue 20),
spoken over raw sockets where HTTP clients would normalise the request:

 - error messages that quote request text stay valid UTF-8 and 4xx
   (/%ff, /v1/models/%ff%fe, a model name of 300 'é'), and an Anthropic
   stream with such a model name still starts with message_start;
 - %00 in a path is not a string end (/health%00/../x is no /health);
 - an unsupported Transfer-Encoding or two different Content-Length
   headers get a prompt JSON 400 instead of waiting for the idle timeout;
 - request heads libmicrohttpd would answer with an HTML page or not at
   all (garbage, NUL, bad versions, bad header syntax, oversized target,
   headers or fields) get the JSON error with the right status at once,
   and the server keeps serving; the largest head allowed is served;
 - logit_bias is applied (greedy and sampled), and refused with 400 when
   malformed;
 - a non-streamed request whose client leaves is cancelled while tokens
   keep coming (it used to run to its end), on every generation route,
   and counted in coli_requests_cancelled_total.
Exit 1 with a line per failure."""
import json
import re
import socket
import sys
import time
import urllib.parse
import urllib.request

BASE = sys.argv[1]
U = urllib.parse.urlparse(BASE)
HOST, PORT = U.hostname, U.port
fails = []


def fail(msg):
    fails.append(msg)
    print("FAIL:", msg, file=sys.stderr)


def raw(req, timeout=20.0):
    """Send bytes, read one response (headers + Content-Length body).
    Returns (status, headers dict, body bytes); status 0 when the server
    closed without answering, -1 when nothing came before the timeout."""
    s = socket.create_connection((HOST, PORT))
    s.settimeout(timeout)
    s.sendall(req)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            d = s.recv(65536)
            if not d:
                break
            data += d
        if b"\r\n\r\n" not in data:
            return (0, {}, data)
        head, body = data.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        n = int(hdrs.get("content-length", "0"))
        while len(body) < n:
            d = s.recv(65536)
            if not d:
                break
            body += d
        return (status, hdrs, body)
    except socket.timeout:
        return (-1, {}, data)
    finally:
        s.close()


def api_error(name, status, body, want_status):
    if status != want_status:
        fail("%s: status %d, want %d (%r)" % (name, status, want_status, body[:200]))
        return
    try:
        d = json.loads(body.decode("utf-8", errors="strict"))
        e = d["error"]
        assert isinstance(e["message"], str) and e["message"]
    except Exception as ex:  # noqa: BLE001 - report any shape problem
        fail("%s: not a valid UTF-8 JSON error (%s): %r" % (name, ex, body[:200]))


def http(method, path, obj=None, timeout=60):
    data = json.dumps(obj).encode() if obj is not None else None
    req = urllib.request.Request(BASE + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def get(path):
    return raw(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path).encode())


# ---- UTF-8 in error text ----
for path in ("/%ff", "/v1/models/%ff%fe", "/v1/%c3", "/" + "%c3%a9" * 300 + "%c3"):
    st, _, body = get(path)
    api_error("GET " + path[:30], st, body, 404)
long_model = "x" + "\u00e9" * 300
st, body = http("POST", "/v1/chat/completions",
                {"model": long_model, "messages": [{"role": "user", "content": "hi"}]})
api_error("chat with a 300-character model name", st, body, 404)
st, body = http("POST", "/v1/messages", {"model": long_model, "max_tokens": 2, "stream": True,
                                         "messages": [{"role": "user", "content": "hi"}]})
text = body.decode("utf-8", errors="replace")
if st != 200 or not text.startswith("event: message_start\n"):
    fail("messages stream with a long model name: status %d, starts %r" % (st, text[:80]))
elif "event: message_stop" not in text:
    fail("messages stream with a long model name: no message_stop")

# ---- %00 is not the end of the path ----
st, _, body = get("/health%00/../x")
api_error("GET /health%00/../x", st, body, 404)
st, _, body = get("/v1/models%00")
api_error("GET /v1/models%00", st, body, 404)
st, _, _ = get("/health")
if st != 200:
    fail("GET /health: %d" % st)

# ---- framing ----
def framing(name, req):
    st, _, body = raw(req)
    api_error(name, st, body, 400)

framing("GET with Transfer-Encoding: gzip",
        b"GET /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n")
framing("POST with Transfer-Encoding: gzip",
        b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n")
framing("Transfer-Encoding: chunked, gzip",
        b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n")
framing("two different Content-Length",
        b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
        b"Content-Length: 50\r\n\r\n{\"a\":")
framing("Content-Length with Transfer-Encoding",
        b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
st, _, body = raw(b"GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n"
                  b"Connection: close\r\n\r\n")
if st != 200:
    fail("two equal Content-Length headers: status %d %r" % (st, body[:100]))

# ---- heads libmicrohttpd would answer with its own HTML page (or not at
# all): the front door answers them in the API's JSON shape, with the right
# status and Connection: close, at once (a NUL used to wait for the request
# deadline: raw()'s timeout is below the server's 30 s, so a 408 fails) ----
def head_case(name, req, want, anthropic=False):
    st, hdrs, body = raw(req)
    if st != want:
        fail("%s: status %d, want %d (%r)" % (name, st, want, body[:200]))
        return
    if hdrs.get("connection", "").lower() != "close":
        fail("%s: no Connection: close (%r)" % (name, hdrs))
    try:
        d = json.loads(body.decode("utf-8", errors="strict"))
        if anthropic:
            assert d["type"] == "error" and d["error"]["message"] and d["error"]["type"]
        else:
            e = d["error"]
            assert isinstance(e["message"], str) and e["message"]
            assert isinstance(e["type"], str) and "param" in e and "code" in e
    except Exception as ex:  # noqa: BLE001
        fail("%s: not the API's JSON error (%s): %r" % (name, ex, body[:200]))
    st, _, _ = get("/health")
    if st != 200:
        fail("%s: /health answered %d afterwards" % (name, st))


H = b"Host: x\r\n"
for name, req, want in (
        ("NUL first byte", b"\x00GET / HTTP/1.1\r\n\r\n", 400),
        ("binary garbage", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400),
        ("garbage request line", b"hello world\r\n\r\n", 400),
        ("no HTTP version", b"GET /health\r\n\r\n", 400),
        ("lower-case protocol", b"GET /health http/1.1\r\n" + H + b"\r\n", 400),
        ("HTTP/1.10", b"GET /health HTTP/1.10\r\n" + H + b"\r\n", 400),
        ("HTTP/2.0", b"GET /health HTTP/2.0\r\n" + H + b"\r\n", 505),
        ("HTTP/0.9", b"GET /health HTTP/0.9\r\n" + H + b"\r\n", 505),
        ("tab between the parts", b"GET\t/health\tHTTP/1.1\r\n" + H + b"\r\n", 400),
        ("two spaces", b"GET  /health HTTP/1.1\r\n" + H + b"\r\n", 400),
        ("space after the version", b"GET /health HTTP/1.1 \r\n" + H + b"\r\n", 400),
        ("non-token method", b"G(T /health HTTP/1.1\r\n" + H + b"\r\n", 400),
        ("control byte in the target", b"GET /hea\x01lth HTTP/1.1\r\n" + H + b"\r\n", 400),
        ("header without colon", b"GET /health HTTP/1.1\r\n" + H + b"foo\r\n\r\n", 400),
        ("space before the colon", b"GET /health HTTP/1.1\r\n" + H + b"foo : bar\r\n\r\n", 400),
        ("empty header name", b"GET /health HTTP/1.1\r\n" + H + b": v\r\n\r\n", 400),
        ("folded header", b"GET /health HTTP/1.1\r\n" + H + b"a: b\r\n c\r\n\r\n", 400),
        ("NUL in a header value", b"GET /health HTTP/1.1\r\n" + H + b"a: b\x00c\r\n\r\n", 400),
        ("CR without LF", b"GET /health HTTP/1.1\r" + H + b"\r\n", 400),
        ("Content-Length abc", b"POST /v1/completions HTTP/1.1\r\n" + H + b"Content-Length: abc\r\n\r\n", 400),
        ("Content-Length -1", b"POST /v1/completions HTTP/1.1\r\n" + H + b"Content-Length: -1\r\n\r\n", 400),
        ("Content-Length 5, 5", b"POST /v1/completions HTTP/1.1\r\n" + H + b"Content-Length: 5, 5\r\n\r\nhello", 400),
        ("Content-Length past 64 bits", b"POST /v1/completions HTTP/1.1\r\n" + H +
         b"Content-Length: 99999999999999999999999\r\n\r\n", 413),
        ("100 KB target", b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\n" + H + b"\r\n", 414),
        ("9 KB target", b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n" + H + b"\r\n", 414),
        ("1,000 query parameters", b"GET /health?" + b"&".join(b"a%d=1" % i for i in range(1000)) +
         b" HTTP/1.1\r\n" + H + b"\r\n", 414),
        ("100 KB header", b"GET /health HTTP/1.1\r\n" + H + b"X: " + b"a" * 100000 + b"\r\n\r\n", 431),
        ("500 header fields", b"GET /health HTTP/1.1\r\n" + H + b"a: b\r\n" * 500 + b"\r\n", 431)):
    head_case(name, req, want)
head_case("Anthropic route, bad header",
          b"POST /v1/messages HTTP/1.1\r\n" + H + b"Content-Length: x\r\n\r\n", 400, anthropic=True)


def max_head(path, extra_field=b""):
    """A head of exactly 16,384 bytes with 100 query parameters and 100
    header fields: the most the front door lets through."""
    q = "&".join("p%d=%s" % (i, "v" * 70) for i in range(100))
    line = b"GET %s HTTP/1.1\r\n" % (path + "?" + q)[:8192].encode()
    hdrs = b"Host: x\r\nConnection: close\r\n" + b"".join(b"X-F%d: %s\r\n" % (i, b"y" * 60) for i in range(97))
    pad = 16384 - len(line) - len(hdrs) - 2 - len(b"X-Pad: \r\n")
    return line + hdrs + b"X-Pad: " + b"z" * pad + extra_field + b"\r\n\r\n"


st, _, body = raw(max_head("/health"))
if st != 200:
    fail("the largest head allowed: status %d %r" % (st, body[:200]))
head_case("one byte past the largest head", max_head("/health", b"z"), 431)
# a request whose bytes trickle in (one every few ms) is still served: the
# door waits for the rest of the head without holding anyone up
s = socket.create_connection((HOST, PORT))
s.settimeout(20)
for b in b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n":
    s.sendall(bytes([b]))
    time.sleep(0.002)
data = b""
try:
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
except socket.timeout:
    pass
s.close()
if not data.startswith(b"HTTP/1.1 200"):
    fail("a head sent byte by byte: %r" % data[:100])
# Known limit (coli-serve(1) BUGS): the next request on a kept-alive
# connection is parsed by libmicrohttpd alone; a malformed one gets the
# right status with libmicrohttpd's HTML body.
st, _, _ = raw(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\nhello world\r\n\r\n")
if st != 200:
    fail("keep-alive: first request answered %d" % st)

# ---- logit_bias ----
def complete(extra):
    obj = {"prompt": "hello", "max_tokens": 6}
    obj.update(extra)
    return http("POST", "/v1/completions", obj)

forced = None
for temp in (0, 1.5):
    st, body = complete({"temperature": temp, "logit_bias": {"300": 100}})
    if st != 200:
        fail("logit_bias +100 (temperature %g): status %d %r" % (temp, st, body[:200]))
        continue
    d = json.loads(body)
    t = d["choices"][0]["text"]
    if d["usage"]["completion_tokens"] != 6 or len(t) % 6 or t != t[: len(t) // 6] * 6:
        fail("logit_bias +100 (temperature %g) did not force one token: %r" % (temp, t))
    forced = t[: len(t) // 6]
# -100 bans: find the greedy first token's id by banning halves of the
# vocabulary (the first token changes iff it was banned), then ban it alone
st, body = complete({"logit_bias": {"99999999": 1}})
vocab = int(re.search(r"\(0\.\.(\d+)\)", json.loads(body)["error"]["message"]).group(1)) + 1


def first(bias):
    st, body = complete({"temperature": 0, "max_tokens": 1, "logit_bias": bias})
    return json.loads(body)["choices"][0]["text"] if st == 200 else None


top = first({})
lo, hi = 0, vocab
while hi - lo > 1:
    mid = (lo + hi) // 2
    if first({str(i): -100 for i in range(lo, mid)}) != top:
        hi = mid
    else:
        lo = mid
if first({str(lo): -100}) == top:
    fail("logit_bias -100 on the greedy token %d did not ban it (%r)" % (lo, top))
if first({str(lo): -100, str((lo + 1) % vocab): 100}) != first({str((lo + 1) % vocab): 100}):
    fail("logit_bias: a ban changed which token +100 forces")
for name, lb in (("negative id", {"-1": 1}), ("not a number", {"abc": 1}),
                 ("bias 101", {"5": 101}), ("bias a string", {"5": "x"}),
                 ("id past the vocabulary", {"99999999": 1}), ("an array", [1, 2])):
    st, body = complete({"logit_bias": lb})
    api_error("logit_bias " + name, st, body, 400)
    if st == 400 and json.loads(body)["error"]["param"] != "logit_bias":
        fail("logit_bias %s: param %r" % (name, json.loads(body)["error"]["param"]))

# ---- a client that leaves a non-streamed request cancels it ----
def metric(name):
    with urllib.request.urlopen(BASE + "/metrics", timeout=30) as r:
        for ln in r.read().decode().splitlines():
            if ln.startswith(name + " "):
                return float(ln.split()[1])
    return 0.0

NO_EOS = {"1": -100}
bodies = {
    "/v1/completions": {"prompt": "hello", "max_tokens": 60000, "logit_bias": NO_EOS},
    "/v1/chat/completions": {"messages": [{"role": "user", "content": "hi"}],
                             "max_tokens": 60000, "logit_bias": NO_EOS},
    # no logit_bias on Anthropic's API: the server runs with --ignore-eos
    "/v1/messages": {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                     "max_tokens": 60000},
}
before = metric("coli_requests_cancelled_total")
for path, obj in bodies.items():
    data = json.dumps(obj).encode()
    s = socket.create_connection((HOST, PORT))
    s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % (path.encode(), len(data)) + data)
    # wait until the engine is generating for it, then leave
    for _ in range(600):
        if metric("coli_queue_length") > 0:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    s.close()
    # the queue empties long before 60,000 tokens could be generated only
    # if the request was cancelled; bounded so a regression fails, not hangs
    for _ in range(1200):
        if metric("coli_queue_length") == 0:
            break
        time.sleep(0.05)
after = metric("coli_requests_cancelled_total")
if after - before != len(bodies):
    fail("non-streamed requests whose client left: %d cancelled, want %d"
         % (after - before, len(bodies)))
if metric("coli_queue_length") != 0:
    fail("a cancelled request is still in the engine")

if fails:
    sys.exit(1)
print("ok")
