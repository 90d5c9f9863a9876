#!/usr/bin/python3
"""server_siege.py - legitimate load under a slowloris attack on a running
`coli serve` (issue 20; a measurement, not part of `make check`).

For --seconds: --clients streaming chat clients (each stream parsed strictly
by tests/server_load.py's checker: SSE framing, one id, role first,
finish_reason, usage, [DONE]) while --slow connections trickle one header
line every --slow-period seconds and reconnect whenever the server closes
them (after --slow-period, as slowloris tools re-create their sockets), and
a prober asks GET /health every 0.5 s on a fresh connection.

Reports, as one JSON line: p50/p99 TTFT of the streams, request statuses,
malformed streams, /health failures and p99 latency, how many slow
connections the server closed, and the server's RSS (VmRSS of --pid) after
the warm-up (the first 10 s) and at the end.

    bench/server_siege.sh            # starts a server on a tiny model and runs this
"""
import argparse
import json
import os
import socket
import sys
import threading
import time
import urllib.parse

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from server_load import one_stream, pct  # noqa: E402


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True, help="base URL ending in /v1")
    ap.add_argument("--pid", type=int, required=True, help="the server's pid, for RSS")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--slow", type=int, default=64)
    ap.add_argument("--slow-period", type=float, default=5.0)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--max-tokens", type=int, default=32)
    a = ap.parse_args()
    u = urllib.parse.urlparse(a.url)
    base = a.url[: -len("/v1")] if a.url.endswith("/v1") else a.url
    lock = threading.Lock()
    ttfts, statuses, malformed = [], {}, []
    slow_closed = [0]
    health_ms, health_fail = [], [0]
    rss = {}
    t_start = time.monotonic()
    deadline = t_start + a.seconds

    def streamer():
        with httpx.Client(timeout=300) as client:
            while time.monotonic() < deadline:
                ttft, _, status, bad = one_stream(client, a.url, {}, a.max_tokens)
                with lock:
                    statuses[status] = statuses.get(status, 0) + 1
                    if bad:
                        malformed.append(bad)
                    elif ttft is not None:
                        ttfts.append(ttft)
                if status == 503:
                    time.sleep(0.05)

    def slowloris(k):
        while time.monotonic() < deadline:
            try:
                s = socket.create_connection((u.hostname, u.port), timeout=10)
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
                s.settimeout(a.slow_period)
                while time.monotonic() < deadline:
                    try:
                        if not s.recv(4096):
                            break       # closed by the server
                    except socket.timeout:
                        pass
                    s.sendall(b"X-Slow-%d: %d\r\n" % (k, int(time.monotonic())))
                else:
                    s.close()
                    return
                s.close()
            except OSError:
                pass
            with lock:
                slow_closed[0] += 1
            time.sleep(a.slow_period)

    def prober():
        while time.monotonic() < deadline:
            t0 = time.monotonic()
            try:
                r = httpx.get(base + "/health", timeout=10)
                ok = r.status_code == 200
            except httpx.HTTPError:
                ok = False
            with lock:
                if ok:
                    health_ms.append((time.monotonic() - t0) * 1000)
                else:
                    health_fail[0] += 1
            time.sleep(0.5)

    def sampler():
        while time.monotonic() < deadline:
            t = time.monotonic() - t_start
            try:
                kb = rss_kb(a.pid)
            except OSError:
                return
            if "warm" not in rss and t >= 10:
                rss["warm"] = kb
            rss["end"] = kb
            rss["max"] = max(rss.get("max", 0), kb)
            time.sleep(1)

    threads = [threading.Thread(target=slowloris, args=(k,)) for k in range(a.slow)]
    threads += [threading.Thread(target=streamer) for _ in range(a.clients)]
    threads += [threading.Thread(target=prober), threading.Thread(target=sampler)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t_start
    print(json.dumps({
        "clients": a.clients, "slow_connections": a.slow, "seconds": round(wall, 1),
        "max_tokens": a.max_tokens, "requests": statuses, "streams_ok": len(ttfts),
        "malformed_streams": len(malformed),
        "ttft_p50_ms": round(pct(ttfts, 50) * 1000, 1), "ttft_p99_ms": round(pct(ttfts, 99) * 1000, 1),
        "health_ok": len(health_ms), "health_failed": health_fail[0],
        "health_p99_ms": round(pct(health_ms, 99), 1),
        "slow_connections_closed_by_server": slow_closed[0],
        "rss_kb_after_warmup": rss.get("warm"), "rss_kb_end": rss.get("end"),
        "rss_kb_max": rss.get("max"),
    }))
    for m in malformed[:5]:
        print("malformed:", m)
    return 1 if malformed or health_fail[0] else 0


if __name__ == "__main__":
    raise SystemExit(main())
