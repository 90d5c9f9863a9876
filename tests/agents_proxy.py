#!/usr/bin/env python3
"""A loopback proxy in front of `coli serve` for the agent CLI tests: it
passes every request through and logs each /v1/messages exchange (request
body, response bytes) as NNN.req.json / NNN.resp in LOGDIR. On the first
request that offers the tool FORCE it adds tool_choice {"type":"tool"} for
it (FORCE "-": none), and narrows that tool's schema to one short string
parameter PARAM so the random test model closes it quickly; every
/v1/messages request without stop_sequences gets a few common letters as
stop sequences, so a random model's answer ends soon as an ordinary
end of turn (not at max_tokens, which Claude Code reports as an error).
What a random model happens to write then decides nothing.
Prints the proxy's port on stdout once it listens.
Usage: agents_proxy.py BACKEND_PORT LOGDIR FORCE PARAM"""
import http.client
import http.server
import json
import os
import sys
import threading

BACKEND = int(sys.argv[1])
LOGDIR = sys.argv[2]
FORCE, PARAM = sys.argv[3], sys.argv[4]
lock = threading.Lock()
state = {"n": 0, "forced": False}


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def relay(self, body):
        path = self.path
        with lock:
            state["n"] += 1
            n = state["n"]
        if body and path.split("?")[0].endswith("/messages"):
            j = json.loads(body)
            with lock:
                force = not state["forced"] and any(t.get("name") == FORCE for t in j.get("tools", []))
                if force:
                    state["forced"] = True
            j.setdefault("stop_sequences", [" ", "e", "a", "o"])
            if force:
                for t in j["tools"]:
                    if t.get("name") == FORCE:
                        t["input_schema"] = {"type": "object", "additionalProperties": False,
                                             "properties": {PARAM: {"type": "string", "maxLength": 8}},
                                             "required": [PARAM]}
                j["tool_choice"] = {"type": "tool", "name": FORCE}
            body = json.dumps(j).encode()
            with open(os.path.join(LOGDIR, "%03d.req.json" % n), "wb") as f:
                f.write(body)
        conn = http.client.HTTPConnection("127.0.0.1", BACKEND, timeout=600)
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ("host", "content-length", "connection", "accept-encoding")}
        if body is not None:
            headers["Content-Length"] = str(len(body))
        conn.request(self.command, path, body=body, headers=headers)
        resp = conn.getresponse()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        log = open(os.path.join(LOGDIR, "%03d.resp" % n), "wb") if body else None
        while True:
            chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
            if not chunk:
                break
            if log:
                log.write(chunk)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        if log:
            log.close()
        conn.close()

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.relay(self.rfile.read(n))

    def do_GET(self):
        self.relay(None)

    def do_HEAD(self):
        conn = http.client.HTTPConnection("127.0.0.1", BACKEND, timeout=60)
        conn.request("HEAD", self.path)
        resp = conn.getresponse()
        self.send_response(resp.status)
        self.send_header("Content-Length", "0")
        self.end_headers()
        conn.close()


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
print(srv.server_address[1], flush=True)
srv.serve_forever()
