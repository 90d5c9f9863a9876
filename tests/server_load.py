#!/usr/bin/python3
"""server_load.py - bounded load on a running `coli serve` (not part of
`make check`): N concurrent streaming chat clients for S seconds on
loopback. Every stream is parsed strictly (SSE framing, one id, role first,
finish_reason then usage then [DONE]); any deviation counts as malformed.

Reports p50/p99 client-side TTFT, completed/refused (503) requests,
malformed streams and aggregate generated tokens per second.

    coli serve MODEL --port 8080 --max-queue 64 &
    /usr/bin/python3 tests/server_load.py --url http://127.0.0.1:8080/v1
"""
import argparse
import json
import threading
import time

import httpx


def one_stream(client, url, headers, max_tokens):
    """Returns (ttft_seconds or None, completion_tokens, status, malformed_reason)."""
    body = {"model": "default", "messages": [{"role": "user", "content": "Count to ten."}],
            "max_tokens": max_tokens, "stream": True, "stream_options": {"include_usage": True}}
    t0 = time.monotonic()
    ttft, ids, first, finish, usage, done = None, set(), True, None, None, False
    try:
        with client.stream("POST", url + "/chat/completions", json=body, headers=headers) as r:
            if r.status_code != 200:
                r.read()
                return None, 0, r.status_code, None
            pending = []
            for line in r.iter_lines():
                line = line.rstrip("\r\n")
                if line:
                    pending.append(line)
                    continue
                if len(pending) != 1 or not pending[0].startswith("data: "):
                    return None, 0, 200, "bad framing %r" % pending
                data = pending[0][6:]
                pending = []
                if done:
                    return None, 0, 200, "data after [DONE]"
                if data == "[DONE]":
                    done = True
                    continue
                ch = json.loads(data)
                if "error" in ch:
                    return None, 0, 200, "error chunk %r" % ch
                ids.add(ch["id"])
                if ch.get("usage"):
                    if ch["choices"]:
                        return None, 0, 200, "usage chunk with choices"
                    usage = ch["usage"]
                    continue
                c = ch["choices"][0]
                if first and c["delta"].get("role") != "assistant":
                    return None, 0, 200, "first chunk without role"
                first = False
                if finish is not None:
                    return None, 0, 200, "chunk after finish_reason"
                if c["delta"].get("content") and ttft is None:
                    ttft = time.monotonic() - t0
                finish = c["finish_reason"]
            if pending or not done or len(ids) != 1 or finish is None or usage is None:
                return None, 0, 200, "incomplete stream"
    except (httpx.HTTPError, ValueError, KeyError) as e:
        return None, 0, 0, "exception %s" % e
    return ttft, usage["completion_tokens"], 200, None


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8080/v1")
    ap.add_argument("--key", default="")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--max-tokens", type=int, default=32)
    a = ap.parse_args()
    headers = {"Authorization": "Bearer " + a.key} if a.key else {}
    lock = threading.Lock()
    ttfts, statuses, malformed = [], {}, []
    tokens = [0]
    deadline = time.monotonic() + a.seconds

    def worker():
        with httpx.Client(timeout=300) as client:
            while time.monotonic() < deadline:
                ttft, ntok, status, bad = one_stream(client, a.url, headers, a.max_tokens)
                with lock:
                    statuses[status] = statuses.get(status, 0) + 1
                    if bad:
                        malformed.append(bad)
                    elif status == 200:
                        tokens[0] += ntok
                        if ttft is not None:
                            ttfts.append(ttft)
                if status == 503:
                    time.sleep(0.05)

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(a.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    print(json.dumps({
        "clients": a.clients, "seconds": round(wall, 1), "max_tokens": a.max_tokens,
        "requests": statuses, "malformed_streams": len(malformed),
        "ttft_p50_ms": round(pct(ttfts, 50) * 1000, 1), "ttft_p99_ms": round(pct(ttfts, 99) * 1000, 1),
        "generated_tokens_per_s": round(tokens[0] / wall, 1),
    }))
    for m in malformed[:5]:
        print("malformed:", m)
    return 1 if malformed else 0


if __name__ == "__main__":
    raise SystemExit(main())
