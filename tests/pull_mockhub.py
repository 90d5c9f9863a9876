#!/usr/bin/python3
"""A stand-in for the Hugging Face Hub endpoints `coli pull` uses, serving
checkpoint directories on loopback, for tests/pull_hub.sh.

  GET /api/models/ORG/NAME/revision/REV?blobs=true   model info: sha, siblings
      with size and, for *.safetensors, lfs {sha256, size}
  GET /ORG/NAME/resolve/REV/FILE                      the file; *.safetensors
      answer 302 to /lfs/SHA256/FILE, which honours Range (206)

usage: pull_mockhub.py --repo ORG/NAME --dir CKPT [--dir2 CKPT2] --port-file F
         [--log F] [--token T] [--fault SPEC]...
The port is chosen by the kernel (port 0) and written to --port-file.
REV "main" is commit 1 (--dir); with --dir2, after the Nth lfs request
(--fault move:N) "main" names commit 2 (--dir2). Commits are also served by
their sha. Faults, each counted down as it fires:
  status:CODE:N[:RA]     the next N requests answer CODE (429, 5xx: with Retry-After: RA,
                         0 when absent, no header when RA is "none")
Hostile modes (issue 30):
  redirect:N             the next N requests answer 302 to themselves (a redirect loop)
  short:FILE:N           the next N answers for FILE (not via /lfs) announce their full
                         Content-Length, send half, then close
  biglen:FILE:N          the next N answers for FILE (resolve or lfs) announce a
                         Content-Length of 10 GiB, send 16 bytes, then close
  bigsize:FILE:BYTES     the model info lists FILE as BYTES bytes (its real size served)
  drop:FILE:N            the next N lfs answers for FILE send half, then close
  corrupt:FILE:N         the next N lfs answers for FILE covering its middle byte flip it
  fill:FILE:PATH:BYTES   on the first lfs request for FILE from byte 65536 on (after
                         the headers), write BYTES bytes to PATH
                         (fills a small file system for the disk-full test)
"""
import hashlib
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

ARGS = sys.argv[1:]


def opt(name, default=None):
    return ARGS[ARGS.index(name) + 1] if name in ARGS else default


REPO = opt("--repo")
TOKEN = opt("--token")
LOG = opt("--log")
FAULTS = [ARGS[i + 1].split(":") for i, a in enumerate(ARGS) if a == "--fault"]
LOCK = threading.Lock()
LFS_COUNT = [0]


def commit_of(d):
    h = hashlib.sha1()
    for n in sorted(os.listdir(d)):
        h.update(n.encode())
        with open(os.path.join(d, n), "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def snapshot(d):
    files, by_sha = {}, {}
    for n in sorted(os.listdir(d)):
        p = os.path.join(d, n)
        with open(p, "rb") as f:
            data = f.read()
        sha = hashlib.sha256(data).hexdigest()
        files[n] = (p, len(data), sha)
    return {"dir": d, "sha": commit_of(d), "files": files}


COMMITS = [snapshot(opt("--dir"))]
if opt("--dir2"):
    COMMITS.append(snapshot(opt("--dir2")))
BLOBS = {}
for c in COMMITS:
    for n, (p, size, sha) in c["files"].items():
        BLOBS[sha] = p


def fault(kind, name=None):
    """The first armed fault of this kind (and file), counted down."""
    with LOCK:
        for f in FAULTS:
            if f[0] != kind:
                continue
            if kind == "status":
                if int(f[2]) > 0:
                    f[2] = str(int(f[2]) - 1)
                    return int(f[1]), (f[3] if len(f) > 3 else "0")
            elif kind == "redirect":
                if int(f[1]) > 0:
                    f[1] = str(int(f[1]) - 1)
                    return True
            elif kind == "bigsize":
                if f[1] == name:
                    return int(f[2])
            elif kind == "fill":
                if f[1] == name and f[4:] != ["done"]:
                    f.append("done")
                    return f
            elif f[1] == name and int(f[2]) > 0:
                f[2] = str(int(f[2]) - 1)
                return True
    return None


def moved():
    n = next((int(f[1]) for f in FAULTS if f[0] == "move"), None)
    return len(COMMITS) > 1 and n is not None and LFS_COUNT[0] >= n


def commit_for(rev):
    for c in COMMITS:
        if rev == c["sha"]:
            return c
    if rev == "main":
        return COMMITS[1] if moved() else COMMITS[0]
    return None


class Hub(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body in one segment: no Nagle / delayed-ACK stall per request
    disable_nagle_algorithm = True
    wbufsize = 1 << 16

    def log_message(self, fmt, *a):
        pass

    def note(self, status):
        if LOG:
            auth = self.headers.get("Authorization", "")
            with LOCK, open(LOG, "a") as f:
                f.write("%s %s %s range=%s auth=%s\n" % (
                    status, self.command, self.path, self.headers.get("Range", "-"),
                    "yes" if auth else "no"))

    def reply(self, status, body=b"", ctype="application/json", headers=()):
        self.note(status)
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status, msg, retry_after="0"):
        h = [("X-Error-Message", msg)]
        if (status == 429 or status >= 500) and retry_after != "none":
            h.append(("Retry-After", retry_after))
        self.reply(status, json.dumps({"error": msg}).encode(), headers=h)

    def cut(self, status, announced, body, hdr=()):
        """Announce `announced` bytes, send `body`, close: a short answer."""
        self.note("cut")
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(announced))
        for k, v in hdr:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        self.close_connection = True

    def do_GET(self):
        u = urlsplit(self.path)
        path = unquote(u.path)
        code = fault("status")
        if code:
            return self.error(code[0], "injected", code[1])
        if fault("redirect"):
            return self.reply(302, headers=[("Location", self.path)])
        if path.startswith("/lfs/"):
            return self.lfs(path)
        if TOKEN and self.headers.get("Authorization") != "Bearer " + TOKEN:
            return self.error(401, "Invalid credentials in Authorization header")
        api = "/api/models/%s/revision/" % REPO
        res = "/%s/resolve/" % REPO
        if path.startswith(api):
            c = commit_for(path[len(api):])
            if not c:
                return self.error(404, "Revision Not Found")
            sib = []
            for n, (p, size, sha) in c["files"].items():
                size = fault("bigsize", n) or size
                e = {"rfilename": n, "size": size}
                if n.endswith(".safetensors"):
                    e["lfs"] = {"sha256": sha, "size": size, "pointerSize": 134}
                sib.append(e)
            body = json.dumps({"id": REPO, "sha": c["sha"], "siblings": sib}).encode()
            return self.reply(200, body)
        if path.startswith(res):
            rev, _, name = path[len(res):].partition("/")
            c = commit_for(rev)
            if not c or name not in c["files"]:
                return self.error(404, "Entry not found")
            p, size, sha = c["files"][name]
            if name.endswith(".safetensors"):
                return self.reply(302, headers=[("Location", "/lfs/%s/%s" % (sha, name))])
            with open(p, "rb") as f:
                data = f.read()
            if fault("biglen", name):
                return self.cut(200, 10 << 30, data[:16])
            if fault("short", name):
                return self.cut(200, len(data), data[:len(data) // 2])
            return self.reply(200, data, "application/octet-stream")
        return self.error(404, "Repository Not Found")

    def lfs(self, path):
        _, _, sha, name = path.split("/", 3)
        p = BLOBS.get(sha)
        if not p:
            return self.error(404, "no such blob")
        with LOCK:
            LFS_COUNT[0] += 1
        with open(p, "rb") as f:
            data = f.read()
        a, b = 0, len(data) - 1
        rng = self.headers.get("Range")
        if rng:
            x, _, y = rng.split("=", 1)[1].partition("-")
            a, b = int(x), min(int(y) if y else len(data) - 1, len(data) - 1)
        # past the header: the pull has planned and checked space by now
        fill = fault("fill", name) if a >= 65536 else None
        if fill:
            with open(fill[2], "wb") as f:
                f.write(b"\0" * int(fill[3]))
        body = bytearray(data[a:b + 1])
        mid = len(data) // 2
        if a <= mid <= b and fault("corrupt", name):
            body[mid - a] ^= 0x5A
        status = 206 if rng else 200
        hdr = [("Content-Range", "bytes %d-%d/%d" % (a, b, len(data)))] if rng else []
        if fault("biglen", name):
            return self.cut(status, 10 << 30, bytes(body[:16]), hdr)
        if len(body) > 1 and fault("drop", name):
            self.note("drop")
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            for k, v in hdr:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(bytes(body[:len(body) // 2]))
            self.wfile.flush()
            self.close_connection = True
            return
        self.reply(status, bytes(body), "application/octet-stream", hdr)


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    srv.daemon_threads = True
    # a client killed mid-answer (the kill -9 tests) is expected, not news
    srv.handle_error = lambda request, address: None
    port_file = opt("--port-file")
    with open(port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    srv.serve_forever()


main()
