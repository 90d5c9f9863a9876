#!/usr/bin/env python3
"""Reasoning on the wire (raw httpx) against a model whose template opens a
thinking block. logit_bias on "</think>" makes the random model's answer
deterministic: -100 never closes the block (everything is reasoning), +100
closes it at once. Usage: server_thinking_wire.py BASE_URL THINK_END_ID"""
import json
import sys

import httpx
import jsonschema

BASE, END = sys.argv[1].rstrip("/"), sys.argv[2]
c = httpx.Client(timeout=120)
fails = 0
MSGS = [{"role": "user", "content": "Why is the sky blue?"}]
AH = {"anthropic-version": "2023-06-01"}


def check(cond, what):
    global fails
    if not cond:
        fails += 1
        print("FAIL:", what)


def sse(resp):
    out = []
    for line in resp.read().decode().splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line[6:]))
    return out


def chat(**kw):
    body = dict({"messages": MSGS, "max_tokens": 6, "temperature": 0}, **kw)
    r = c.post(BASE + "/v1/chat/completions", json=body)
    check(r.status_code == 200, "status %d %s" % (r.status_code, r.text[:200]))
    return r.json()


# never closed: all six tokens are reasoning
d = chat(logit_bias={END: -100})
m = d["choices"][0]["message"]
check(m.get("reasoning_content"), "reasoning_content present: %s" % m)
check(m["content"] == "", "no answer while thinking: %r" % m["content"])
check(d["usage"]["completion_tokens_details"]["reasoning_tokens"] == d["usage"]["completion_tokens"] == 6,
      "reasoning tokens counted: %s" % d["usage"])
check(d["choices"][0]["finish_reason"] == "length", "max_tokens counts the reasoning")
# streamed: the reasoning_content deltas spell the same reasoning
with c.stream("POST", BASE + "/v1/chat/completions",
              json={"messages": MSGS, "max_tokens": 6, "temperature": 0, "logit_bias": {END: -100},
                    "stream": True, "stream_options": {"include_usage": True}}) as s:
    chunks = sse(s)
rs = "".join(k["choices"][0]["delta"].get("reasoning_content") or "" for k in chunks if k["choices"])
check(rs == m["reasoning_content"], "streamed reasoning %r vs %r" % (rs, m["reasoning_content"]))
check(all(not (k["choices"] and k["choices"][0]["delta"].get("content")) for k in chunks), "no content deltas")
check(chunks[-1]["usage"]["completion_tokens_details"]["reasoning_tokens"] == 6, "stream usage")

# closed at once: the rest is the answer, constrained when asked
SCHEMA = {"enum": ["yes", "no", "maybe"]}
d = chat(logit_bias={END: 100}, max_tokens=20,
         response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA}})
m = d["choices"][0]["message"]
check(d["usage"]["completion_tokens_details"]["reasoning_tokens"] == 1, "one reasoning token: %s" % d["usage"])
check(not m.get("reasoning_content"), "empty reasoning left out: %s" % m)
try:
    jsonschema.validate(json.loads(m["content"]), SCHEMA)
except Exception as e:  # noqa: BLE001
    check(False, "the answer after the thinking is constrained: %r (%s)" % (m["content"], e))
check(d["choices"][0]["finish_reason"] == "stop", "constrained answer ends: %s" % d["choices"][0])

# enable_thinking false: the template closes the block, no reasoning
d = chat(logit_bias={END: -100}, chat_template_kwargs={"enable_thinking": False})
m = d["choices"][0]["message"]
check("reasoning_content" not in m and m["content"], "thinking off: %s" % m)
check(d["usage"]["completion_tokens_details"]["reasoning_tokens"] == 0, "no reasoning tokens")
r = c.post(BASE + "/v1/chat/completions", json={"messages": MSGS, "chat_template_kwargs": {"enable_thinking": 1}})
check(r.status_code == 400 and r.json()["error"]["param"] == "chat_template_kwargs", "bad kwargs: %s" % r.text)

# Anthropic: thinking blocks only when asked
base = {"model": "m", "max_tokens": 6, "temperature": 0, "messages": MSGS}
r = c.post(BASE + "/v1/messages", headers=AH, json=dict(base, thinking={"type": "enabled", "budget_tokens": 1024}))
check(r.status_code == 200, "anthropic thinking %d %s" % (r.status_code, r.text[:200]))
blocks = r.json()["content"]
check(blocks and blocks[0]["type"] == "thinking" and blocks[0]["thinking"] and "signature" in blocks[0],
      "thinking block first: %s" % blocks)
with c.stream("POST", BASE + "/v1/messages", headers=AH,
              json=dict(base, stream=True, thinking={"type": "enabled", "budget_tokens": 1024})) as s:
    evs = sse(s)
starts = [e["content_block"]["type"] for e in evs if e["type"] == "content_block_start"]
deltas = [e["delta"] for e in evs if e["type"] == "content_block_delta"]
check(starts[:1] == ["thinking"], "stream opens with a thinking block: %s" % starts)
th = "".join(d_["thinking"] for d_ in deltas if d_["type"] == "thinking_delta")
check(th == blocks[0]["thinking"], "thinking_delta spell the thinking: %r vs %r" % (th, blocks[0]["thinking"]))
check(any(d_["type"] == "signature_delta" for d_ in deltas), "signature_delta before the block ends")
idx = [e["index"] for e in evs if e["type"] in ("content_block_start", "content_block_stop")]
check(idx == sorted(idx) and idx[0] == 0, "block indices in order: %s" % idx)
r = c.post(BASE + "/v1/messages", headers=AH, json=dict(base, max_tokens=4))
check(all(b_["type"] != "thinking" for b_ in r.json()["content"]), "no thinking unless asked: %s" % r.text[:300])
r = c.post(BASE + "/v1/messages", headers=AH, json=dict(base, thinking={"type": "sometimes"}))
check(r.status_code == 400 and r.json()["type"] == "error", "bad thinking: %s" % r.text[:200])
check(c.get(BASE + "/health").status_code == 200, "still serving")
print("%d failures" % fails)
sys.exit(1 if fails else 0)
