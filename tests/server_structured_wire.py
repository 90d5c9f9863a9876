#!/usr/bin/env python3
"""Structured output on the wire (raw httpx, no SDK): response_format
json_object / json_schema on chat and completions, streamed and not; a
forced tool on OpenAI (tool_choice naming a function) and Anthropic
(tool_choice {"type":"tool"}); bad schemas answered 400 naming the field,
the server still serving. Every answer is checked by python3-jsonschema.
Log-probabilities: the chat and completions shapes (token, logprob, bytes,
top_logprobs; tokens/token_logprobs/top_logprobs/text_offset), streamed
per chunk and equal to the whole answer's, and the values equal to the
log-softmax of `coli logits` (an independent run of the model).
Usage: server_structured_wire.py BASE_URL COLI MODEL_DIR"""
import json
import math
import subprocess
import sys

import httpx
import jsonschema

BASE = sys.argv[1].rstrip("/")
c = httpx.Client(timeout=120)
fails = 0

PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 30},
                                           "age": {"type": "integer"},
                                           "lang": {"enum": ["en", "de", "es"]}},
          "required": ["name", "age", "lang"], "additionalProperties": False}
MSGS = [{"role": "user", "content": "Tell me a fortune in English."}]


def check(cond, what):
    global fails
    if not cond:
        fails += 1
        print("FAIL:", what)


def validate(text, schema, what):
    try:
        jsonschema.validate(json.loads(text), schema)
    except Exception as e:  # noqa: BLE001 - parse or validation error
        check(False, "%s: %r: %s" % (what, text[:200], str(e)[:200]))


def sse(resp):
    """The data payloads of an event stream (read whole: the Debian httpx's
    iter_lines keeps line ends)."""
    out = []
    for line in resp.read().decode().splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line[6:]))
    return out


rf = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}}
for seed in (1, 2, 3):
    body = {"messages": MSGS, "temperature": 0.8, "seed": seed, "max_tokens": 200,
            "response_format": rf}
    r = c.post(BASE + "/v1/chat/completions", json=body)
    check(r.status_code == 200, "json_schema chat status %d %s" % (r.status_code, r.text[:200]))
    ch = r.json()["choices"][0]
    check(ch["finish_reason"] == "stop", "finish_reason %s" % ch["finish_reason"])
    validate(ch["message"]["content"], PERSON, "chat json_schema seed %d" % seed)
    # streamed: the concatenated deltas are the same document
    with c.stream("POST", BASE + "/v1/chat/completions", json=dict(body, stream=True)) as s:
        chunks = sse(s)
    text = "".join(ch["choices"][0]["delta"].get("content") or "" for ch in chunks if ch["choices"])
    check(text == r.json()["choices"][0]["message"]["content"], "stream == non-stream (seed %d)" % seed)
    validate(text, PERSON, "streamed json_schema seed %d" % seed)

# json_object: any keys, so the tiny model may run out of tokens; every
# answer that ended by itself is an object
stopped = 0
for seed in range(1, 7):
    r = c.post(BASE + "/v1/chat/completions", json={"messages": MSGS, "temperature": 0.8, "seed": seed,
                                                     "max_tokens": 300, "response_format": {"type": "json_object"}})
    check(r.status_code == 200, "json_object status %d" % r.status_code)
    ch = r.json()["choices"][0]
    if ch["finish_reason"] == "stop":
        stopped += 1
        validate(ch["message"]["content"], {"type": "object"}, "json_object seed %d" % seed)
check(stopped >= 1, "json_object: none of 6 answers ended by itself")

# max_tokens cuts the document: finish_reason length
r = c.post(BASE + "/v1/chat/completions", json={"messages": MSGS, "max_tokens": 3, "response_format": rf})
check(r.json()["choices"][0]["finish_reason"] == "length", "cut by max_tokens -> length: %s" % r.text[:200])

r = c.post(BASE + "/v1/completions", json={"prompt": "Fortune:", "temperature": 0.8, "seed": 4, "max_tokens": 200,
                                            "response_format": rf})
check(r.status_code == 200, "completions json_schema status %d %s" % (r.status_code, r.text[:200]))
validate(r.json()["choices"][0]["text"], PERSON, "completions json_schema")

TOOL_SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                                "days": {"type": "integer"}},
               "required": ["city", "days"], "additionalProperties": False}
tools = [{"type": "function", "function": {"name": "get_weather", "parameters": TOOL_SCHEMA}},
         {"type": "function", "function": {"name": "other", "parameters": {"type": "object"}}}]
for stream in (False, True):
    body = {"messages": MSGS, "temperature": 0.8, "seed": 7, "max_tokens": 200, "tools": tools,
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}}, "stream": stream}
    if stream:
        with c.stream("POST", BASE + "/v1/chat/completions", json=body) as s:
            chunks = sse(s)
        calls = [tc for ch in chunks if ch["choices"] for tc in ch["choices"][0]["delta"].get("tool_calls") or []]
        finish = [ch["choices"][0]["finish_reason"] for ch in chunks if ch["choices"]][-1]
        args = "".join(tc["function"].get("arguments") or "" for tc in calls)
        name = calls[0]["function"]["name"] if calls else None
    else:
        r = c.post(BASE + "/v1/chat/completions", json=body)
        check(r.status_code == 200, "forced tool status %d %s" % (r.status_code, r.text[:200]))
        ch = r.json()["choices"][0]
        finish = ch["finish_reason"]
        calls = ch["message"].get("tool_calls") or []
        args = calls[0]["function"]["arguments"] if calls else ""
        name = calls[0]["function"]["name"] if calls else None
    check(finish == "tool_calls", "forced tool finish_reason %s (stream %s)" % (finish, stream))
    check(name == "get_weather", "forced tool name %s" % name)
    validate(args, TOOL_SCHEMA, "forced tool arguments (stream %s)" % stream)

ah = {"anthropic-version": "2023-06-01"}
for stream in (False, True):
    body = {"model": "default-model", "max_tokens": 200, "temperature": 0.8, "messages": MSGS, "stream": stream,
            "tools": [{"name": "get_weather", "input_schema": TOOL_SCHEMA}],
            "tool_choice": {"type": "tool", "name": "get_weather"}}
    if stream:
        with c.stream("POST", BASE + "/v1/messages", json=body, headers=ah) as s:
            evs = sse(s)
        starts = [e for e in evs if e.get("type") == "content_block_start"]
        uses = [e["content_block"] for e in starts if e["content_block"]["type"] == "tool_use"]
        part = "".join(e["delta"].get("partial_json", "") for e in evs if e.get("type") == "content_block_delta")
        stop = [e["delta"]["stop_reason"] for e in evs if e.get("type") == "message_delta"]
        check(uses and uses[0]["name"] == "get_weather", "anthropic stream tool_use block: %s" % starts)
        check(stop == ["tool_use"], "anthropic stream stop_reason %s" % stop)
        validate(part, TOOL_SCHEMA, "anthropic streamed tool input")
    else:
        r = c.post(BASE + "/v1/messages", json=body, headers=ah)
        check(r.status_code == 200, "anthropic forced tool %d %s" % (r.status_code, r.text[:200]))
        d = r.json()
        uses = [b for b in d["content"] if b["type"] == "tool_use"]
        check(d["stop_reason"] == "tool_use" and uses and uses[0]["name"] == "get_weather",
              "anthropic tool_use: %s" % r.text[:300])
        if uses:
            try:
                jsonschema.validate(uses[0]["input"], TOOL_SCHEMA)
            except Exception as e:  # noqa: BLE001
                check(False, "anthropic tool input: %s" % e)

# bad input: 400 naming the field, the server keeps serving
BAD = [
    ({"type": "json_schema", "json_schema": {"name": "x"}}, "response_format.json_schema.schema"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "integer", "multipleOf": 3}}},
     "response_format.json_schema.schema"),
    ({"type": "json_schema"}, "response_format.json_schema"),
    ({"type": "yaml"}, "response_format.type"),
    ({"type": "json_schema", "json_schema": {"schema": {"type": "string", "pattern": "(?=x)"}}},
     "response_format.json_schema.schema"),
]
for rfb, param in BAD:
    r = c.post(BASE + "/v1/chat/completions", json={"messages": MSGS, "response_format": rfb})
    check(r.status_code == 400, "bad %s -> %d" % (rfb, r.status_code))
    err = r.json().get("error", {})
    check(err.get("param") == param, "bad %s: param %s, want %s" % (rfb, err.get("param"), param))
r = c.post(BASE + "/v1/chat/completions", json={"messages": MSGS, "response_format": {
    "type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "integer", "multipleOf": 3}}}})
check("multipleOf" in r.json()["error"]["message"], "the unsupported keyword is named: %s" % r.text)
r = c.post(BASE + "/v1/chat/completions", json={"messages": MSGS, "tools": tools,
                                                 "tool_choice": {"type": "function", "function": {"name": "nope"}}})
check(r.status_code == 400 and r.json()["error"]["param"] == "tool_choice.function.name", "unknown tool: %s" % r.text)
r = c.post(BASE + "/v1/messages", headers=ah, json={
    "model": "default-model", "max_tokens": 10, "messages": MSGS, "tools": [{"name": "t", "input_schema": {"not": {}}}],
    "tool_choice": {"type": "tool", "name": "t"}})
check(r.status_code == 400 and r.json().get("type") == "error" and "not" in r.json()["error"]["message"],
      "anthropic bad input_schema: %s" % r.text)
# ---- log-probabilities ----
COLI, MODEL = sys.argv[2], sys.argv[3]
body = {"messages": MSGS, "max_tokens": 6, "temperature": 0.9, "seed": 11, "logprobs": True, "top_logprobs": 3}
r = c.post(BASE + "/v1/chat/completions", json=body)
check(r.status_code == 200, "chat logprobs status %d %s" % (r.status_code, r.text[:200]))
ch = r.json()["choices"][0]
content = ch["logprobs"]["content"]
check(len(content) == r.json()["usage"]["completion_tokens"], "one entry per token")
check("".join(bytes(e["bytes"]).decode("utf-8", "replace") for e in content) == ch["message"]["content"],
      "entries' bytes spell the answer")
for e in content:
    check(set(e) == {"token", "logprob", "bytes", "top_logprobs"} and len(e["top_logprobs"]) == 3, "entry %s" % e)
    lps = [t["logprob"] for t in e["top_logprobs"]]
    check(lps == sorted(lps, reverse=True) and all(x <= 0 for x in lps) and e["logprob"] <= 0, "order %s" % lps)
    check(e["logprob"] <= lps[0] + 1e-6, "chosen not above the best")
    for t in e["top_logprobs"]:
        if t["token"] == e["token"]:
            check(abs(t["logprob"] - e["logprob"]) < 1e-5, "same token, same logprob")
with c.stream("POST", BASE + "/v1/chat/completions", json=dict(body, stream=True)) as s_:
    chunks = sse(s_)
streamed = [e for k in chunks if k["choices"] and k["choices"][0].get("logprobs")
            for e in k["choices"][0]["logprobs"]["content"]]
check(streamed == content, "streamed logprobs == whole answer's")
r = c.post(BASE + "/v1/chat/completions", json={"messages": MSGS, "max_tokens": 2, "logprobs": True})
check(all(e["top_logprobs"] == [] for e in r.json()["choices"][0]["logprobs"]["content"]), "top_logprobs 0")
r = c.post(BASE + "/v1/chat/completions", json={"messages": MSGS, "max_tokens": 2})
check(r.json()["choices"][0]["logprobs"] is None, "no logprobs unless asked")

# completions on token ids: the first token's log-probabilities against
# the log-softmax of `coli logits` on the same ids (greedy: the top token)
ids = [5, 17, 42, 9]
r = c.post(BASE + "/v1/completions", json={"prompt": ids, "max_tokens": 3, "temperature": 0, "logprobs": 5})
check(r.status_code == 200, "completions logprobs %d %s" % (r.status_code, r.text[:200]))
lp = r.json()["choices"][0]["logprobs"]
check(set(lp) == {"tokens", "token_logprobs", "top_logprobs", "text_offset"}, "completions shape %s" % lp)
check(lp["text_offset"][0] == 0 and len(lp["tokens"]) == len(lp["token_logprobs"]) >= 1, "offsets %s" % lp)
out = subprocess.run([COLI, "logits", MODEL, "--tokens", ",".join(map(str, ids))], capture_output=True, text=True)
row = json.loads(out.stdout)["logits"][-1]
mx = max(row)
lse = mx + math.log(sum(math.exp(x - mx) for x in row))
best = sorted(range(len(row)), key=lambda i: (-row[i], i))[:5]
want = sorted((row[i] - lse for i in best), reverse=True)
got = sorted(lp["top_logprobs"][0].values(), reverse=True)
check(all(abs(a - b) < 1e-3 for a, b in zip(want, got)) and len(got) == 5,
      "top logprobs vs coli logits: %s vs %s" % (got, want))
check(abs(lp["token_logprobs"][0] - want[0]) < 1e-3, "greedy token is the most likely: %s" % lp["token_logprobs"])
for bad, param in (({"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
                   ({"top_logprobs": 2}, "top_logprobs"), ({"logprobs": "yes"}, "logprobs")):
    r = c.post(BASE + "/v1/chat/completions", json=dict({"messages": MSGS}, **bad))
    check(r.status_code == 400 and r.json()["error"]["param"] == param, "bad %s: %s" % (bad, r.text[:200]))
r = c.post(BASE + "/v1/completions", json={"prompt": "x", "logprobs": 99})
check(r.status_code == 400 and r.json()["error"]["param"] == "logprobs", "completions logprobs 99: %s" % r.text)
check(c.get(BASE + "/health").status_code == 200, "still serving")
print("%d failures" % fails)
sys.exit(1 if fails else 0)
