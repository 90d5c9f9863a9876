#!/usr/bin/env python3
"""What coding agents rely on, on the wire (raw httpx): tool_choice forced
in both APIs, streamed and not, with arguments valid under the tool's
schema (python3-jsonschema) and streamed in pieces; Anthropic details
Claude Code parses: system-role messages inside `messages`, the context
error's wording and envelope, toolu_ ids, no empty text block before a
tool call, message_start usage equal to message_delta's when the cache is
hit, anthropic-beta accepted; HEAD /; model aliases and the model-name
policy (coli-serve(1), MODEL NAMES).
Usage: server_agents_wire.py BASE_URL ALIAS"""
import json
import re
import sys

import httpx
import jsonschema

BASE = sys.argv[1].rstrip("/")
ALIAS = sys.argv[2]
c = httpx.Client(timeout=300)
fails = 0

# Bounded so that the tiny random model ends its strings (an unbounded
# format "uri" alone is checked below: accepted, not refused).
FETCH = {"type": "object", "properties": {
    "url": {"type": "string", "format": "uri", "pattern": "^https://[a-z]{1,12}\\.com/[a-z]{0,12}$"},
    "headers": {"type": "object", "propertyNames": {"enum": ["Accept", "User-Agent"]},
                "additionalProperties": {"type": "string", "maxLength": 20}},
    "prompt": {"type": "string", "maxLength": 40}},
    "required": ["url", "prompt"], "additionalProperties": False,
    "$schema": "http://json-schema.org/draft-07/schema#"}
BASH = {"type": "object", "properties": {"command": {"type": "string", "maxLength": 40},
                                         "timeout": {"type": "number", "maximum": 600}},
        "required": ["command"], "additionalProperties": False}
SCHEMAS = {"WebFetch": FETCH, "Bash": BASH}
OAI_TOOLS = [{"type": "function", "function": {"name": n, "description": n, "parameters": s}}
             for n, s in SCHEMAS.items()]
ANT_TOOLS = [{"name": n, "description": n, "input_schema": s} for n, s in SCHEMAS.items()]
MSGS = [{"role": "user", "content": "Fetch the page and list the files."}]
H = {"anthropic-version": "2023-06-01",
     "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14"}


def check(cond, what):
    global fails
    if not cond:
        fails += 1
        print("FAIL:", what)


def valid(args, name, what):
    try:
        jsonschema.validate(args, SCHEMAS[name], format_checker=jsonschema.FormatChecker())
    except Exception as e:  # noqa: BLE001 - validation error
        check(False, "%s: %r: %s" % (what, args, str(e)[:200]))


def events(resp):
    """(event, data) pairs of an event stream."""
    out, ev = [], None
    for line in resp.read().decode().splitlines():
        if line.startswith("event: "):
            ev = line[7:]
        elif line.startswith("data: ") and line != "data: [DONE]":
            out.append((ev, json.loads(line[6:])))
    return out


# ---- HEAD / and model names ----
r = c.head(BASE + "/")
check(r.status_code == 200, "HEAD / status %d" % r.status_code)
r = c.get(BASE + "/v1/models")
ids = [m["id"] for m in r.json()["data"]]
check(len(ids) == 2 and ids[1] == ALIAS, "models list %r" % ids)
# Anthropic's shape of the list too (Claude Code's model picker)
j = r.json()
check(j.get("has_more") is False and j.get("first_id") == ids[0] and
      all(m.get("type") == "model" and m.get("display_name") and m.get("created_at") for m in j["data"]),
      "models list, Anthropic fields: %r" % j)
served = ids[0]
check(c.get(BASE + "/v1/models/" + ALIAS).json().get("id") == ALIAS, "GET /v1/models/ALIAS")
for name, want in ((served, 200), (ALIAS, 200), ("gpt-17", 404)):
    r = c.post(BASE + "/v1/chat/completions", json={"model": name, "messages": MSGS, "max_tokens": 2})
    check(r.status_code == want, "chat model %s: %d, want %d" % (name, r.status_code, want))
    if want == 200:
        check(r.json()["model"] == served, "chat model %s answered as %s" % (name, r.json()["model"]))
r = c.post(BASE + "/v1/messages", headers=H,
           json={"model": "claude-haiku-4-5-20251001", "max_tokens": 2, "messages": MSGS})
check(r.status_code == 200 and r.json()["model"] == "claude-haiku-4-5-20251001",
      "messages, other model name: %d %s" % (r.status_code, r.text[:200]))

# ---- Anthropic: system inside messages, the context error ----
r = c.post(BASE + "/v1/messages", headers=H, json={
    "model": served, "max_tokens": 2, "system": [{"type": "text", "text": "Be brief."}],
    "messages": [MSGS[0], {"role": "system", "content": "Reply in English."},
                 {"role": "assistant", "content": "Ok."}, {"role": "user", "content": "Go."}]})
check(r.status_code == 200, "system-role message: %d %s" % (r.status_code, r.text[:200]))
n1 = c.post(BASE + "/v1/messages/count_tokens", headers=H, json={
    "model": served, "messages": [MSGS[0]]}).json()["input_tokens"]
n2 = c.post(BASE + "/v1/messages/count_tokens", headers=H, json={
    "model": served, "messages": [MSGS[0], {"role": "system", "content": "Reply in English."}]}).json()["input_tokens"]
check(n2 > n1, "the system-role message is rendered (%d then %d tokens)" % (n1, n2))
r = c.post(BASE + "/v1/messages", headers=H, json={
    "model": served, "max_tokens": 5, "messages": [{"role": "user", "content": "word " * 3000}]})
j = r.json()
check(r.status_code == 400 and j.get("type") == "error" and j["error"].get("type") == "invalid_request_error",
      "context error envelope: %d %s" % (r.status_code, r.text[:200]))
m = re.fullmatch(r"prompt is too long: (\d+) tokens > (\d+) maximum", j.get("error", {}).get("message", ""))
check(m and int(m.group(1)) > int(m.group(2)), "context error wording: %r" % j.get("error"))

# ---- tool_choice, OpenAI ----
for choice, names in (("required", ("WebFetch", "Bash")),
                      ({"type": "function", "function": {"name": "WebFetch"}}, ("WebFetch",))):
    for seed in (1, 2):
        body = {"model": served, "messages": MSGS, "tools": OAI_TOOLS, "tool_choice": choice,
                "max_tokens": 300, "seed": seed, "temperature": 0.9}
        r = c.post(BASE + "/v1/chat/completions", json=body)
        ch = r.json()["choices"][0]
        calls = ch["message"].get("tool_calls") or []
        check(ch["finish_reason"] == "tool_calls" and len(calls) == 1,
              "openai %r: %s" % (choice, json.dumps(ch)[:300]))
        for tc in calls:
            check(tc["id"].startswith("call_") and tc["function"]["name"] in names, "openai call %r" % tc)
            valid(json.loads(tc["function"]["arguments"]), tc["function"]["name"], "openai %r" % choice)
        body["stream"] = True
        with c.stream("POST", BASE + "/v1/chat/completions", json=body) as resp:
            chunks = [d for _, d in events(resp)]
        deltas = [tc for ch in chunks for tc in (ch["choices"][0]["delta"].get("tool_calls") or [])
                  if ch["choices"]]
        check(deltas and deltas[0].get("id", "").startswith("call_") and
              deltas[0]["function"]["name"] in names, "openai stream first delta %r" % deltas[:1])
        args = "".join(d["function"].get("arguments", "") for d in deltas)
        check(len([d for d in deltas if d["function"].get("arguments")]) >= 2,
              "openai stream: arguments in one piece %r" % deltas)
        try:
            valid(json.loads(args), deltas[0]["function"]["name"], "openai stream %r" % choice)
        except (ValueError, IndexError, KeyError) as e:
            check(False, "openai stream args %r: %s" % (args, e))
        check(chunks[-1]["choices"][0]["finish_reason"] == "tool_calls", "openai stream finish")
# Claude Code's WebFetch and a zod record: forcing them is not refused
CC_FETCH = {"type": "object", "properties": {"url": {"type": "string", "format": "uri"},
                                             "env": {"type": "object", "propertyNames": {"type": "string"},
                                                     "additionalProperties": {"type": "string"}}},
            "required": ["url"], "additionalProperties": False}
r = c.post(BASE + "/v1/chat/completions", json={
    "model": served, "messages": MSGS, "max_tokens": 20, "tool_choice": "required",
    "tools": [{"type": "function", "function": {"name": "WebFetch", "parameters": CC_FETCH}}]})
check(r.status_code == 200 and r.json()["choices"][0]["finish_reason"] in ("tool_calls", "length"),
      "forcing format uri + propertyNames: %d %s" % (r.status_code, r.text[:200]))
# a key pattern (an environment map): forced, the call's keys satisfy it
ENV = {"type": "object", "properties": {"env": {
    "type": "object", "propertyNames": {"type": "string", "pattern": "^[A-Z_]+$"},
    "properties": {"HOME": {"type": "string"}, "lower": {"type": "string"}}, "required": ["PATH"],
    "additionalProperties": {"type": "string"}}}, "required": ["env"], "additionalProperties": False}
r = c.post(BASE + "/v1/chat/completions", json={
    "model": served, "messages": MSGS, "max_tokens": 60, "tool_choice": "required",
    "tools": [{"type": "function", "function": {"name": "SetEnv", "parameters": ENV}}]})
check(r.status_code == 200 and r.json()["choices"][0]["finish_reason"] == "tool_calls",
      "forcing propertyNames with a pattern: %d %s" % (r.status_code, r.text[:200]))
if r.status_code == 200 and r.json()["choices"][0]["finish_reason"] == "tool_calls":
    env = json.loads(r.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])["env"]
    check("PATH" in env and set(env) <= {"PATH", "HOME"}, "keys by the pattern: %r" % env)
# a schema outside the subset: a 400 naming the tool only when forced
ODD = [{"type": "function", "function": {"name": "Odd", "parameters": {"type": "object", "properties": {
    "x": {"not": {"type": "string"}}}}}}]
r = c.post(BASE + "/v1/chat/completions", json={"model": served, "messages": MSGS, "tools": ODD, "max_tokens": 2})
check(r.status_code == 200, "offered tool with an odd schema: %d %s" % (r.status_code, r.text[:200]))
for choice in ("required", {"type": "function", "function": {"name": "Odd"}}):
    r = c.post(BASE + "/v1/chat/completions", json={"model": served, "messages": MSGS, "tools": ODD,
                                                    "tool_choice": choice, "max_tokens": 2})
    check(r.status_code == 400 and "Odd" in r.text and "not" in r.json()["error"]["message"],
          "forced tool with an odd schema %r: %d %s" % (choice, r.status_code, r.text[:200]))
r = c.post(BASE + "/v1/messages", headers=H, json={
    "model": served, "max_tokens": 2, "messages": MSGS, "tool_choice": {"type": "any"},
    "tools": [{"name": "Odd", "input_schema": ODD[0]["function"]["parameters"]}]})
check(r.status_code == 400 and r.json().get("type") == "error", "anthropic forced odd: %d %s" % (r.status_code, r.text[:200]))
r = c.post(BASE + "/v1/chat/completions", json={"model": served, "messages": MSGS, "tools": OAI_TOOLS,
                                                "tool_choice": "none", "max_tokens": 5})
check(not r.json()["choices"][0]["message"].get("tool_calls"), "tool_choice none")
r = c.post(BASE + "/v1/chat/completions", json={"model": served, "messages": MSGS, "tool_choice": "required"})
check(r.status_code == 400, "required without tools: %d" % r.status_code)

# ---- tool_choice, Anthropic ----
for choice, names in (({"type": "any"}, ("WebFetch", "Bash")),
                      ({"type": "tool", "name": "Bash", "disable_parallel_tool_use": True}, ("Bash",))):
    body = {"model": served, "max_tokens": 300, "messages": MSGS, "tools": ANT_TOOLS,
            "tool_choice": choice, "temperature": 0.9}
    r = c.post(BASE + "/v1/messages", headers=H, json=body)
    j = r.json()
    uses = [b for b in j.get("content", []) if b["type"] == "tool_use"]
    check(j.get("stop_reason") == "tool_use" and len(uses) == 1, "anthropic %r: %s" % (choice, r.text[:300]))
    check(not [b for b in j.get("content", []) if b["type"] == "text" and not b["text"]],
          "anthropic: an empty text block %r" % j.get("content"))
    for u in uses:
        check(u["id"].startswith("toolu_") and u["name"] in names, "anthropic tool_use %r" % u)
        valid(u["input"], u["name"], "anthropic %r" % choice)
    body["stream"] = True
    with c.stream("POST", BASE + "/v1/messages", headers=H, json=body) as resp:
        evs = events(resp)
    starts = [d for e, d in evs if e == "content_block_start"]
    check(starts and starts[0]["content_block"]["type"] == "tool_use",
          "anthropic stream: first block %r" % starts[:1])
    if starts:
        blk = starts[0]["content_block"]
        check(blk["id"].startswith("toolu_") and blk["name"] in names, "stream tool_use %r" % blk)
        parts = [d["delta"]["partial_json"] for e, d in evs
                 if e == "content_block_delta" and d["delta"]["type"] == "input_json_delta"]
        check(len(parts) >= 2, "anthropic stream: input in one piece %r" % parts)
        try:
            valid(json.loads("".join(parts)), blk["name"], "anthropic stream %r" % choice)
        except ValueError as e:
            check(False, "anthropic stream input %r: %s" % ("".join(parts), e))
    delta = [d for e, d in evs if e == "message_delta"]
    check(delta and delta[0]["delta"]["stop_reason"] == "tool_use", "anthropic stream stop_reason")

# ---- usage: message_start and message_delta agree when the cache is hit ----
body = {"model": served, "max_tokens": 4, "stream": True, "temperature": 0,
        "messages": [{"role": "user", "content": "Tell me a long story about caches. " * 8}]}
for turn in (1, 2):
    with c.stream("POST", BASE + "/v1/messages", headers=H, json=body) as resp:
        evs = events(resp)
    us = [d["message"]["usage"] for e, d in evs if e == "message_start"]
    ud = [d["usage"] for e, d in evs if e == "message_delta"]
    check(us and ud, "usage events missing")
    if us and ud:
        for k in ("input_tokens", "cache_read_input_tokens"):
            check(us[0][k] == ud[0][k], "turn %d %s: message_start %r, message_delta %r" % (turn, k, us[0], ud[0]))
        if turn == 2:
            check(us[0]["cache_read_input_tokens"] > 0, "turn 2 read nothing from the cache: %r" % us[0])

print("server_agents_wire: %d failures" % fails)
sys.exit(1 if fails else 0)
