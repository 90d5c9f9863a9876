#!/usr/bin/python3
"""compare_mock.py PORTFILE - a fake OpenAI-compatible endpoint for
tests/compare_run.sh. It prints its port to PORTFILE and serves, by the
first path segment of the URL (the "base"):

  /ok/v1/chat/completions     a good stream answering the JSON
                              {"city": "Oslo", "n": 3}, after a delay
                              (MOCK_DELAY seconds, default 0.2), with usage
  /key/v1/...                 401 unless "Authorization: Bearer sekrit"
  /badsse/v1/...              a stream with a data line that is not JSON
  /cut/v1/...                 two chunks, then the connection is closed
                              without [DONE]
  anything else               404 (as a server without /v1 routes answers)

Every request's headers are appended to PORTFILE.log so the test can check
which key was sent (and that no other value leaked)."""
import json
import os
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DELAY = float(os.environ.get("MOCK_DELAY", "0.2"))
LOG = sys.argv[1] + ".log"


def chunk(content=None, finish=None, usage=None):
    c = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1,
         "model": "mock", "choices": []}
    if usage is not None:
        c["usage"] = usage
    else:
        delta = {"content": content} if content is not None else {"role": "assistant"}
        c["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
    return ("data: " + json.dumps(c) + "\n\n").encode()


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_json(self, status, obj):
        b = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(n) or b"{}")
        with open(LOG, "a") as f:
            f.write(json.dumps({"path": self.path, "auth": self.headers.get("Authorization"),
                                "model": body.get("model"),
                                "include_usage": body.get("stream_options", {}).get("include_usage")}) + "\n")
        base = self.path.split("/")[1]
        if not self.path.endswith("/v1/chat/completions") or base not in ("ok", "key", "badsse", "cut"):
            return self.send_json(404, {"error": {"message": "Not Found", "type": "invalid_request_error"}})
        if base == "key" and self.headers.get("Authorization") != "Bearer sekrit":
            return self.send_json(401, {"error": {"message": "Incorrect API key provided",
                                                  "type": "invalid_request_error",
                                                  "code": "invalid_api_key"}})
        self.start_stream()
        w = self.wfile
        if base == "badsse":
            w.write(chunk())
            w.write(b"data: {this is not json}\n\n")
            w.flush()
            return
        time.sleep(DELAY)
        w.write(chunk())
        w.write(chunk('{"city": '))
        w.flush()
        if base == "cut":
            w.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        time.sleep(DELAY / 4)
        w.write(chunk('"Oslo", "n": 3}'))
        w.write(chunk("", finish="stop"))
        w.write(chunk(usage={"prompt_tokens": 9, "completion_tokens": 6, "total_tokens": 15}))
        w.write(b"data: [DONE]\n\n")
        w.flush()
        self.close_connection = True


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    srv.serve_forever()


main()
