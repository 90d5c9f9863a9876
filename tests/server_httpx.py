#!/usr/bin/python3
"""server_httpx.py URL [--key KEY] - a plain httpx client, the way
third-party scripts talk to the endpoint: strict SSE parsing of an OpenAI
chat stream (one id/created, role first, finish_reason once, usage chunk,
[DONE]) and an Anthropic message stream (event order), and the streamed
greedy answer equal to the non-streamed one. Run by server_sdk.sh.
(The local-vs-remote comparison this script once printed is `coli compare`.)"""
import argparse
import json
import sys
import time

import httpx

PROMPT = [{"role": "system", "content": "be brief"},
          {"role": "user", "content": "Write one sentence about the sea."}]


def sse_events(resp):
    """Yield (event, data) per SSE event; raise on malformed framing."""
    event, data = None, []
    for line in resp.iter_lines():
        line = line.rstrip("\r\n")   # older httpx keeps the line ending
        if line == "":
            if data:
                yield event, "\n".join(data)
            event, data = None, []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
        else:
            raise ValueError("unexpected SSE field %r" % field)
    if data:
        raise ValueError("stream ended inside an event")


def chat_stream(client, url, headers, model, max_tokens):
    body = {"model": model, "messages": PROMPT, "max_tokens": max_tokens, "temperature": 0,
            "stream": True, "stream_options": {"include_usage": True}}
    t0 = time.monotonic()
    ttft, text, ids, finish, usage, done, n = None, "", set(), None, None, False, 0
    with client.stream("POST", url + "/chat/completions", json=body, headers=headers) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        for _, data in sse_events(r):
            assert not done, "data after [DONE]"
            if data == "[DONE]":
                done = True
                continue
            ch = json.loads(data)
            assert "error" not in ch, ch
            ids.add((ch["id"], ch["created"]))
            if ch.get("usage"):
                assert ch["choices"] == []
                usage = ch["usage"]
                continue
            c = ch["choices"][0]
            if n == 0:
                assert c["delta"].get("role") == "assistant", ch
            n += 1
            assert finish is None, "chunk after finish_reason"
            piece = c["delta"].get("content") or ""
            if piece and ttft is None:
                ttft = time.monotonic() - t0
            text += piece
            finish = c["finish_reason"]
    total = time.monotonic() - t0
    assert done, "no [DONE]"
    assert len(ids) == 1, "id/created changed between chunks"
    assert finish in ("stop", "length"), finish
    assert usage and usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    return {"text": text, "ttft": ttft, "total": total, "usage": usage}


def chat_whole(client, url, headers, model, max_tokens):
    body = {"model": model, "messages": PROMPT, "max_tokens": max_tokens, "temperature": 0}
    r = client.post(url + "/chat/completions", json=body, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["message"]["content"]


def anthropic_stream(client, base, headers):
    body = {"model": "any", "max_tokens": 16, "temperature": 0, "stream": True,
            "messages": [{"role": "user", "content": "Hi"}]}
    order, text = [], ""
    with client.stream("POST", base + "/v1/messages", json=body,
                       headers={**headers, "anthropic-version": "2023-06-01"}) as r:
        assert r.status_code == 200, r.read()
        for ev, data in sse_events(r):
            d = json.loads(data)
            assert ev == d["type"], (ev, d)
            order.append(ev)
            if ev == "content_block_delta":
                text += d["delta"]["text"]
    assert order[0] == "message_start" and order[1] == "content_block_start", order
    assert order[-3:] == ["content_block_stop", "message_delta", "message_stop"], order
    return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--key", default="")
    ap.add_argument("--model", default="default")
    ap.add_argument("--max-tokens", type=int, default=32)
    a = ap.parse_args()
    headers = {"Authorization": "Bearer " + a.key} if a.key else {}
    with httpx.Client(timeout=120) as client:
        s = chat_stream(client, a.url, headers, a.model, a.max_tokens)
        w = chat_whole(client, a.url, headers, a.model, a.max_tokens)
        assert s["text"] == w, "stream %r != whole %r" % (s["text"], w)
        anthropic_stream(client, a.url[:-3] if a.url.endswith("/v1") else a.url, headers)
    print("httpx: chat stream == whole (%d tokens), anthropic stream well formed" %
          s["usage"]["completion_tokens"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
