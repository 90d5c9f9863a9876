#!/usr/bin/env python3
"""A loopback HTTP proxy between `codex exec` and `coli serve` for
tests/agent_codex.sh. It forwards every request unchanged but for POST
/v1/responses bodies, where a random tiny model needs steering to act like
an agent in a few tokens:
  - the first request gets tool_choice naming one of the offered function
    tools (TOOL, or the first), so the answer is a call of that tool whose
    arguments the server's grammar keeps valid against its schema;
  - later requests get text.format: a JSON string of at most 12
    characters, so the random model's answer ends (status completed).
Each request body, as received, is appended to LOG as one JSON line.
Usage: agent_codex_proxy.py UPSTREAM_BASE PORT_FILE LOG [TOOL]"""
import http.client
import http.server
import json
import sys
import threading
import urllib.parse

UP = urllib.parse.urlsplit(sys.argv[1])
PORT_FILE, LOG = sys.argv[2], sys.argv[3]
TOOL = sys.argv[4] if len(sys.argv) > 4 else None
lock = threading.Lock()
seen = {"responses": 0}
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *a):
        pass

    def relay(self):
        n = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(n) if n else b""
        if self.command == "POST" and self.path.rstrip("/").endswith("/responses") and body:
            req = json.loads(body)
            with lock:
                with open(LOG, "a", encoding="utf-8") as f:
                    f.write(json.dumps(req) + "\n")
                first = seen["responses"] == 0
                seen["responses"] += 1
            fns = [t.get("name") for t in req.get("tools", []) if t.get("type") == "function"]
            if first and fns:
                req["tool_choice"] = {"type": "function", "name": TOOL if TOOL in fns else fns[0]}
            else:
                req["text"] = {"format": {"type": "json_schema", "name": "short", "strict": True,
                                          "schema": {"type": "string", "maxLength": 12}}}
            body = json.dumps(req).encode()
        conn = http.client.HTTPConnection(UP.hostname, UP.port, timeout=600)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        headers["Content-Length"] = str(len(body))
        conn.request(self.command, self.path, body=body, headers=headers)
        r = conn.getresponse()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in HOP:
                self.send_header(k, v)
        self.send_header("Connection", "close")
        self.end_headers()
        while True:
            chunk = r.read1(65536)
            if not chunk:
                break
            self.wfile.write(chunk)
            self.wfile.flush()
        conn.close()

    do_GET = do_POST = do_DELETE = relay


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os  # noqa: E402
os.rename(PORT_FILE + ".tmp", PORT_FILE)
srv.serve_forever()
