#!/usr/bin/env python3
"""server_signals_clients.py BASE PID - SIGTERM during 4 streams and 2 non-streamed
requests (issue 20): every client must see a well-formed end.

 - OpenAI streams: every data line is JSON, the last two are an error
   chunk and [DONE];
 - Anthropic streams: message_start first, an `event: error` last;
 - non-streamed requests: a JSON 503 with code shutting_down.
The requests ban the end-of-sequence token (logit_bias) so they are still
running when the signal comes; the server runs with a short
--shutdown-grace. The caller checks the exit status and the sessions."""
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.parse
import urllib.request

BASE, PID = sys.argv[1], int(sys.argv[2])
U = urllib.parse.urlparse(BASE)
NO_EOS = {"1": -100}
fails = []
lock = threading.Lock()


def fail(msg):
    with lock:
        fails.append(msg)
    print("FAIL:", msg, file=sys.stderr)


def post(path, obj):
    data = json.dumps(obj).encode()
    s = socket.create_connection((U.hostname, U.port))
    s.settimeout(120)
    s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Connection: close\r\nContent-Length: %d\r\n\r\n" % (path.encode(), len(data)) + data)
    return s


def read_all(s, started):
    data = b""
    while True:
        try:
            d = s.recv(65536)
        except OSError:
            break
        if not d:
            break
        data += d
        if b"\r\n\r\n" in data:
            started.set()
    s.close()
    return data


def dechunk(body):
    out = b""
    while body:
        line, _, rest = body.partition(b"\r\n")
        n = int(line.split(b";")[0], 16)
        if n == 0:
            return out, True
        out += rest[:n]
        body = rest[n + 2:]
    return out, False


def check_stream(name, raw, anthropic):
    head, _, body = raw.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        return fail("%s: %r" % (name, head[:60]))
    text, complete = dechunk(body)
    if not complete:
        return fail("%s: the chunked body was cut (no final chunk)" % name)
    events = [e for e in text.decode("utf-8").split("\n\n") if e.strip()]
    if anthropic:
        if not events or not events[0].startswith("event: message_start\n"):
            return fail("%s: does not start with message_start" % name)
        last = events[-1].split("\n")
        if last[0] != "event: error" or json.loads(last[1][6:])["type"] != "error":
            return fail("%s: last event is not an error event: %r" % (name, events[-1][:200]))
        for e in events:
            json.loads(e.split("\n")[1][6:])
    else:
        datas = [e[6:] for e in events if e.startswith("data: ")]
        if len(datas) < 3 or datas[-1] != "[DONE]":
            return fail("%s: does not end with [DONE]: %r" % (name, events[-2:]))
        if "error" not in json.loads(datas[-2]):
            return fail("%s: no error chunk before [DONE]: %r" % (name, datas[-2][:200]))
        for d in datas[:-1]:
            json.loads(d)


def check_whole(name, raw):
    head, _, body = raw.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 503"):
        return fail("%s: want 503, got %r" % (name, head[:60]))
    e = json.loads(body)["error"]
    if e["code"] != "shutting_down":
        fail("%s: error code %r" % (name, e["code"]))


msgs = [{"role": "user", "content": "hi"}]
jobs = [
    ("openai stream 1", "/v1/chat/completions",
     {"messages": msgs, "stream": True, "max_tokens": 60000, "logit_bias": NO_EOS}, "openai"),
    ("openai stream 2", "/v1/completions",
     {"prompt": "hello", "stream": True, "max_tokens": 60000, "logit_bias": NO_EOS}, "openai"),
    ("anthropic stream 1", "/v1/messages",
     {"model": "m", "messages": msgs, "stream": True, "max_tokens": 60000}, "anthropic"),
    ("anthropic stream 2", "/v1/messages",
     {"model": "m", "messages": msgs, "stream": True, "max_tokens": 60000}, "anthropic"),
    ("non-streamed 1", "/v1/completions",
     {"prompt": "hello", "max_tokens": 60000, "logit_bias": NO_EOS}, "whole"),
    ("non-streamed 2", "/v1/chat/completions",
     {"messages": msgs, "max_tokens": 60000, "logit_bias": NO_EOS}, "whole"),
]
results = {}
threads = []
events = []
for name, path, obj, kind in jobs:
    ev = threading.Event()
    events.append((name, kind, ev))
    s = post(path, obj)

    def run(name=name, s=s, ev=ev):
        results[name] = read_all(s, ev)
    t = threading.Thread(target=run)
    t.start()
    threads.append(t)

# streams have started when their headers came; the non-streamed ones
# are in the engine (or its queue) once the queue gauge counts all six
def queue_len():
    with urllib.request.urlopen(BASE + "/metrics", timeout=30) as r:
        for ln in r.read().decode().splitlines():
            if ln.startswith("coli_queue_length "):
                return int(float(ln.split()[1]))
    return 0

for name, kind, ev in events:
    if kind != "whole" and not ev.wait(60):
        fail("%s: never started" % name)
for _ in range(600):
    if queue_len() >= len(jobs):
        break
    time.sleep(0.05)
os.kill(PID, signal.SIGTERM)
for t in threads:
    t.join(120)
for name, path, obj, kind in jobs:
    raw = results.get(name, b"")
    if not raw:
        fail("%s: zero bytes" % name)
    elif kind == "whole":
        check_whole(name, raw)
    else:
        check_stream(name, raw, kind == "anthropic")
if fails:
    sys.exit(1)
print("ok")
