#!/usr/bin/env python3
"""server_slowloris_clients.py BASE MAX_CONN - slow clients against a live
`coli serve --max-connections MAX_CONN --request-timeout T` (issue 20).

MAX_CONN + 3 connections trickle header lines (one every 0.3 s, so the
idle timeout never fires) and one trickles its body: with the server's
reserve (MAX_CONN/8 + 4) that leaves one free slot. Once they are older
than the server's minimum eviction age (1 s), fresh clients ask for
/health: every fresh client must be answered, and every slow connection
must be closed by the server with a JSON 408 (its request deadline passed)
or 503 (evicted to make room). A kept-alive connection
that trickles its second request is closed too. Bounded waits only: a
regression fails, it does not hang."""
import json
import socket
import sys
import threading
import time
import urllib.parse
import urllib.request

BASE, MAX_CONN = sys.argv[1], int(sys.argv[2])
U = urllib.parse.urlparse(BASE)
fails = []
lock = threading.Lock()


def fail(msg):
    with lock:
        fails.append(msg)
    print("FAIL:", msg, file=sys.stderr)


def trickle(first, lines, results, key):
    """Send `first`, then one of `lines` every 0.3 s until the server
    closes; record what it answered."""
    try:
        s = socket.create_connection((U.hostname, U.port), timeout=10)
    except OSError as e:
        results[key] = ("connect failed", str(e).encode())
        return
    s.settimeout(0.3)
    data = b""
    try:
        s.sendall(first)
        deadline = time.time() + 90
        i = 0
        while time.time() < deadline:
            try:
                d = s.recv(65536)
                if not d:
                    break
                data += d
            except socket.timeout:
                pass
            try:
                s.sendall(lines[i % len(lines)])
            except OSError:
                # the server shut the socket; collect what it sent
                s.settimeout(2)
                try:
                    while True:
                        d = s.recv(65536)
                        if not d:
                            break
                        data += d
                except OSError:
                    pass
                break
            i += 1
        else:
            results[key] = ("never closed", data)
            return
    except OSError:
        pass
    finally:
        s.close()
    results[key] = ("closed", data)


def health():
    try:
        with urllib.request.urlopen(BASE + "/health", timeout=10) as r:
            return r.status
    except Exception as e:  # noqa: BLE001
        return repr(e)


results = {}
threads = []
n_slow = MAX_CONN + 3
for k in range(n_slow):
    t = threading.Thread(target=trickle, args=(
        b"GET /health HTTP/1.1\r\nHost: x\r\n", [b"X-Slow: %d\r\n" % k], results, "hdr%d" % k))
    t.start()
    threads.append(t)
    time.sleep(0.02)
t = threading.Thread(target=trickle, args=(
    b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Content-Length: 1000\r\n\r\n", [b" "], results, "body"))
t.start()
threads.append(t)
time.sleep(1.5)

# fresh clients while the slow ones hold their connections
for i in range(20):
    st = health()
    if st != 200:
        fail("GET /health #%d while %d slow connections are open: %s" % (i, n_slow + 1, st))
    time.sleep(0.05)

# a kept-alive connection: one request answered, then a trickled second one
ka = socket.create_connection((U.hostname, U.port), timeout=10)
ka.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
first = b""
while b"{\"status\":\"ok\"}" not in first:
    d = ka.recv(65536)
    if not d:
        break
    first += d
if b"200 OK" not in first:
    fail("keep-alive: first request not answered: %r" % first[:100])
ka.close()
t = threading.Thread(target=trickle, args=(
    b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\nGET /health HTTP/1.1\r\n",
    [b"X-Slow: 1\r\n"], results, "keepalive"))
t.start()
threads.append(t)

for t in threads:
    t.join(120)
for key in sorted(results):
    how, data = results[key]
    if how != "closed":
        fail("%s: %s" % (key, how))
        continue
    if key == "keepalive":
        continue  # its first answer is a 200; the cut is silent
    head, _, body = data.partition(b"\r\n\r\n")
    status = head.split(b" ")[1] if head.startswith(b"HTTP/1.1 ") else b"none"
    if status not in (b"408", b"503"):
        fail("%s: closed with %r, want a 408 or 503" % (key, data[:120]))
        continue
    try:
        json.loads(body)["error"]["message"]
    except Exception:  # noqa: BLE001
        fail("%s: the %s body is not the API's JSON error: %r" % (key, status.decode(), body[:120]))
if len(results) != n_slow + 2:
    fail("%d slow connections reported, want %d" % (len(results), n_slow + 2))
with urllib.request.urlopen(BASE + "/metrics", timeout=10) as r:
    m = {ln.split()[0]: float(ln.split()[1]) for ln in r.read().decode().splitlines()
         if ln.startswith("coli_http_connections_")}
cut = m.get("coli_http_connections_timed_out_total", 0) + m.get("coli_http_connections_evicted_total", 0)
if cut < n_slow + 2:
    fail("metrics count %d connections cut, want at least %d: %r" % (cut, n_slow + 2, m))
if fails:
    sys.exit(1)
print("ok")
