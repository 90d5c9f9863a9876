#!/usr/bin/env python3
"""The Responses API on the wire (raw httpx, no SDK) against a tiny random
model whose template is GLM-5's: the response object, the event stream's
order and sequence numbers, reasoning items, forced function calls and
their events, function_call_output round trips (stateless and through
previous_response_id), text.format, tool types left out, store,
previous_response_id with cached_tokens, GET and DELETE.
Greedy decoding (temperature 0) makes every answer reproducible.
Usage: server_responses_wire.py BASE_URL LOG STATE first|restarted
  first: writes the stored ids to STATE; restarted: checks they survived."""
import json
import re
import sys

import httpx
import jsonschema

BASE, LOG, STATE, PHASE = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3], sys.argv[4]
URL = BASE + "/v1/responses"
c = httpx.Client(timeout=120)
fails = 0
ID_RE = re.compile(r"^resp_[0-9a-f]{32}$")
WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                            "days": {"type": "integer", "minimum": 1, "maximum": 7}},
           "required": ["city", "days"], "additionalProperties": False}
TOOLS = [{"type": "web_search"}, {"type": "file_search", "vector_store_ids": ["vs_1"]},
         {"type": "namespace", "name": "mcp__x", "tools": []},
         {"type": "function", "name": "get_weather", "description": "Weather of a city",
          "parameters": WEATHER, "strict": True}]
OFF = {"effort": "none"}


def check(cond, what):
    global fails
    if not cond:
        fails += 1
        print("FAIL:", what)


def post(body, status=200):
    r = c.post(URL, json=body)
    check(r.status_code == status, "status %d (want %d): %s" % (r.status_code, status, r.text[:300]))
    return r.json()


def events(body):
    """(event name, data) of a streamed response, read whole."""
    out, name = [], None
    with c.stream("POST", URL, json=dict(body, stream=True)) as r:
        check(r.status_code == 200, "stream status %d" % r.status_code)
        check(r.headers["content-type"].startswith("text/event-stream"), "stream content type")
        text = r.read().decode()
    for line in text.splitlines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            d = json.loads(line[6:])
            check(d["type"] == name, "event line %s matches data type %s" % (name, d["type"]))
            out.append((name, d))
    check("[DONE]" not in text, "no [DONE] in a Responses stream")
    # each finished item is the final object's item at its index
    final = [d["response"] for n, d in out if n in ("response.completed", "response.incomplete")]
    if final:
        done = [d for n, d in out if n == "response.output_item.done"]
        check([d["output_index"] for d in done] == list(range(len(final[0]["output"]))) and
              all(final[0]["output"][d["output_index"]] == d["item"] for d in done),
              "output_item.done items = the final output: %s" % [d["item"] for d in done])
    check([d["sequence_number"] for _, d in out] == list(range(len(out))),
          "sequence numbers 0..n-1: %s" % [d["sequence_number"] for _, d in out])
    return out


def usage_ok(u, what):
    check(set(u) == {"input_tokens", "input_tokens_details", "output_tokens", "output_tokens_details",
                     "total_tokens"}, "%s: usage keys %s" % (what, sorted(u)))
    check(u["total_tokens"] == u["input_tokens"] + u["output_tokens"], "%s: total_tokens" % what)
    check(isinstance(u["input_tokens_details"]["cached_tokens"], int), "%s: cached_tokens" % what)
    check(isinstance(u["output_tokens_details"]["reasoning_tokens"], int), "%s: reasoning_tokens" % what)


def object_ok(d, what):
    check(ID_RE.match(d["id"]), "%s: id %s" % (what, d["id"]))
    check(d["object"] == "response", "%s: object" % what)
    for k in ("created_at", "status", "model", "output", "usage", "error", "incomplete_details",
              "instructions", "tools", "tool_choice", "text", "parallel_tool_calls", "store", "metadata",
              "temperature", "top_p", "previous_response_id", "reasoning"):
        check(k in d, "%s: field %s" % (what, k))
    usage_ok(d["usage"], what)


def text_of(d):
    return "".join(p["text"] for o in d["output"] if o["type"] == "message" for p in o["content"]
                   if p["type"] == "output_text")


if PHASE == "first":
    # ---- non-streamed, a string input, cut by max_output_tokens ----
    d = post({"input": "Why is the sky blue?", "max_output_tokens": 6, "temperature": 0, "reasoning": OFF,
              "instructions": "Be brief.", "metadata": {"k": "v"}})
    object_ok(d, "plain")
    check(d["status"] == "incomplete", "max_output_tokens: status %s" % d["status"])
    check(d["incomplete_details"] == {"reason": "max_output_tokens"}, "incomplete_details %s" % d["incomplete_details"])
    check([o["type"] for o in d["output"]] == ["message"], "one message: %s" % d["output"])
    m = d["output"][0]
    check(m["role"] == "assistant" and m["id"].startswith("msg_") and m["status"] == "incomplete", "message %s" % m)
    check(m["content"][0]["type"] == "output_text" and m["content"][0]["annotations"] == [], "output_text part")
    check(d["usage"]["output_tokens"] == 6, "6 output tokens: %s" % d["usage"])
    check(d["instructions"] == "Be brief." and d["metadata"] == {"k": "v"} and d["store"] is True,
          "echoed fields and store default true")
    plain = d
    # instructions are part of the prompt
    d2 = post({"input": "Why is the sky blue?", "max_output_tokens": 1, "temperature": 0, "reasoning": OFF})
    check(d2["usage"]["input_tokens"] < plain["usage"]["input_tokens"], "instructions add to the prompt")

    # ---- GET returns the stored object; the same input, streamed ----
    g = c.get(URL + "/" + plain["id"])
    check(g.status_code == 200 and g.json() == plain, "GET equals the created response")
    ev = events({"input": "Why is the sky blue?", "max_output_tokens": 6, "temperature": 0, "reasoning": OFF,
                 "instructions": "Be brief.", "metadata": {"k": "v"}})
    names = [n for n, _ in ev]
    deltas = [n for n in names if n == "response.output_text.delta"]
    want = (["response.created", "response.in_progress", "response.output_item.added",
             "response.content_part.added"] + deltas +
            ["response.output_text.done", "response.content_part.done", "response.output_item.done",
             "response.incomplete"])
    check(names == want and deltas, "event order: %s" % names)
    by = dict(ev)
    check(by["response.created"]["response"]["status"] == "in_progress", "created: in_progress")
    check(by["response.output_item.added"]["item"]["type"] == "message", "added a message item")
    streamed = "".join(d["delta"] for n, d in ev if n == "response.output_text.delta")
    final = by["response.incomplete"]["response"]
    check(streamed == by["response.output_text.done"]["text"] == text_of(final) == text_of(plain),
          "deltas = done text = final text = the non-streamed text: %r %r" % (streamed, text_of(plain)))
    check(final["output"][0]["id"] == by["response.output_item.added"]["item"]["id"]
          == by["response.output_text.delta"]["item_id"], "item ids agree")
    check(final["usage"]["output_tokens"] == 6 and final["status"] == "incomplete", "final usage/status")
    g = c.get(URL + "/" + final["id"])
    check(g.status_code == 200 and g.json() == final, "a streamed response is stored as its final object")

    # ---- reasoning (the template opens a thinking block) ----
    ev = events({"input": "Why is the sky blue?", "max_output_tokens": 6, "temperature": 0,
                 "reasoning": {"effort": "high"}})
    names = [n for n, _ in ev]
    rdeltas = [n for n in names if n == "response.reasoning_text.delta"]
    want = (["response.created", "response.in_progress", "response.output_item.added",
             "response.content_part.added"] + rdeltas +
            ["response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
             "response.output_item.added", "response.content_part.added", "response.output_text.done",
             "response.content_part.done", "response.output_item.done", "response.incomplete"])
    check(names == want and rdeltas, "reasoning event order: %s" % names)
    final = dict(ev)["response.incomplete"]["response"]
    check([o["type"] for o in final["output"]] == ["reasoning", "message"], "reasoning then message")
    rs = final["output"][0]
    check(rs["id"].startswith("rs_") and rs["content"][0]["type"] == "reasoning_text" and
          rs["content"][0]["text"] == "".join(d["delta"] for n, d in ev if n == "response.reasoning_text.delta"),
          "reasoning item text = its deltas: %s" % rs)
    u = final["usage"]
    check(u["output_tokens_details"]["reasoning_tokens"] == u["output_tokens"] == 6, "reasoning tokens %s" % u)

    # ---- tools: a forced function call; tool types not served are left out ----
    body = {"input": "Weather in Paris for 3 days?", "max_output_tokens": 80, "temperature": 0, "reasoning": OFF,
            "tools": TOOLS, "tool_choice": {"type": "function", "name": "get_weather"}, "parallel_tool_calls": False}
    d = post(body)
    object_ok(d, "tool")
    check(d["status"] == "completed", "forced call completes: %s" % d["status"])
    fc = [o for o in d["output"] if o["type"] == "function_call"]
    check(len(fc) == 1 and fc[0]["name"] == "get_weather" and fc[0]["call_id"].startswith("call_") and
          fc[0]["id"].startswith("fc_") and fc[0]["status"] == "completed", "one function_call: %s" % d["output"])
    jsonschema.validate(json.loads(fc[0]["arguments"]), WEATHER)
    check(d["tools"] == TOOLS and d["parallel_tool_calls"] is False, "tools echoed as sent")
    log = open(LOG, encoding="utf-8").read()
    for t in ("web_search", "file_search", "namespace"):
        check("of type '%s'" % t in log and "not served" in log, "-v log names the %s tool left out" % t)
    tool_resp = d
    ev = events(body)
    names = [n for n, _ in ev]
    adeltas = [d["delta"] for n, d in ev if n == "response.function_call_arguments.delta"]
    check(names == ["response.created", "response.in_progress", "response.output_item.added"] +
          ["response.function_call_arguments.delta"] * len(adeltas) +
          ["response.function_call_arguments.done", "response.output_item.done", "response.completed"],
          "function call events: %s" % names)
    check(len(adeltas) > 1, "the arguments stream as they are generated: %r" % adeltas)
    by = dict(ev)
    check(len({d["item_id"] for n, d in ev if n.startswith("response.function_call_arguments")}) == 1 and
          all(d["output_index"] == 0 for n, d in ev if n.startswith("response.function_call_arguments")),
          "the deltas name the call's item")
    sfc = by["response.output_item.done"]["item"]
    check(by["response.output_item.added"]["item"]["type"] == "function_call" and
          by["response.output_item.added"]["item"]["arguments"] == "", "added: an empty function_call")
    check(by["response.function_call_arguments.done"]["arguments"] == sfc["arguments"] == fc[0]["arguments"]
          == "".join(adeltas), "streamed arguments = the whole call's")
    check(by["response.completed"]["response"]["output"] == [sfc], "final output: the call")
    # a tool choice of none offers no tools: a shorter prompt
    d = post(dict(body, tool_choice="none", max_output_tokens=1))
    check(d["usage"]["input_tokens"] < tool_resp["usage"]["input_tokens"], "tool_choice none drops the tools")
    d = post(dict(body, tool_choice={"type": "function", "name": "nope"}), 400)
    check(d["error"]["param"] == "tool_choice.name", "an unknown forced tool names the field: %s" % d)

    # ---- function_call_output: stateless round trip and via previous_response_id ----
    def round_trip(output, prev=None):
        items = [{"type": "function_call_output", "call_id": fc[0]["call_id"], "output": output}]
        b = {"input": items, "max_output_tokens": 4, "temperature": 0, "reasoning": OFF, "tools": TOOLS[3:]}
        if prev:
            b["previous_response_id"] = prev
        else:
            b["input"] = [{"role": "user", "content": "Weather in Paris for 3 days?"},
                          {"type": "function_call", "call_id": fc[0]["call_id"], "name": "get_weather",
                           "arguments": fc[0]["arguments"]}] + items
        return post(b)
    short, long_ = round_trip("sunny"), round_trip("sunny, 24 degrees, light wind from the west all week")
    check(long_["usage"]["input_tokens"] > short["usage"]["input_tokens"] > tool_resp["usage"]["input_tokens"],
          "the tool output is in the prompt: %d %d" % (short["usage"]["input_tokens"], long_["usage"]["input_tokens"]))
    cont = round_trip("sunny", tool_resp["id"])
    check(cont["previous_response_id"] == tool_resp["id"], "previous_response_id echoed")
    check(cont["usage"]["input_tokens"] == short["usage"]["input_tokens"],
          "the stored call continues as the stateless conversation: %d %d"
          % (cont["usage"]["input_tokens"], short["usage"]["input_tokens"]))
    check(cont["usage"]["input_tokens_details"]["cached_tokens"] >= tool_resp["usage"]["input_tokens"],
          "the stored prompt is not evaluated again: %s" % cont["usage"])
    check(short["usage"]["input_tokens_details"]["cached_tokens"] < tool_resp["usage"]["input_tokens"],
          "a stored response feeds no other request's cache: %s" % short["usage"])

    # ---- text.format ----
    PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                               "age": {"type": "integer"}},
              "required": ["name", "age"], "additionalProperties": False}
    d = post({"input": "A person?", "max_output_tokens": 120, "temperature": 0, "reasoning": OFF,
              "text": {"format": {"type": "json_schema", "name": "person", "schema": PERSON, "strict": True}}})
    check(d["status"] == "completed", "json_schema answer completes: %s" % d["status"])
    jsonschema.validate(json.loads(text_of(d)), PERSON)
    check(d["text"]["format"]["type"] == "json_schema", "text.format echoed")
    d = post({"input": "An object?", "max_output_tokens": 120, "temperature": 0, "reasoning": OFF,
              "text": {"format": {"type": "json_object"}}})
    # a random model may write one long string: whole only when completed
    check(text_of(d).startswith("{") and (d["status"] != "completed" or isinstance(json.loads(text_of(d)), dict)),
          "json_object answer: %r" % text_of(d)[:80])
    d = post({"input": "x", "text": {"format": {"type": "json_schema", "name": "p", "schema": {"type": "nope"}}}}, 400)
    check(d["error"]["param"].startswith("text.format"), "a bad schema names text.format: %s" % d["error"])

    # ---- previous_response_id: the stored prompt comes from the session ----
    first = post({"input": "Hello there", "max_output_tokens": 5, "temperature": 0, "reasoning": OFF})
    second = post({"input": "And then?", "max_output_tokens": 5, "temperature": 0, "reasoning": OFF,
                   "previous_response_id": first["id"]})
    cached = second["usage"]["input_tokens_details"]["cached_tokens"]
    fu = first["usage"]
    check(fu["input_tokens"] <= cached <= fu["input_tokens"] + fu["output_tokens"],
          "cached_tokens covers the stored prompt: %d of %s" % (cached, fu))
    check(second["usage"]["input_tokens"] > fu["input_tokens"] + fu["output_tokens"], "the history is in the prompt")

    # ---- store: false; errors ----
    d = post({"input": "Hello there", "max_output_tokens": 2, "temperature": 0, "store": False})
    check(d["store"] is False and c.get(URL + "/" + d["id"]).status_code == 404, "store false: not kept")
    for bad in ("resp_nope", "resp_" + "0" * 32, "x" * 70):
        r = c.get(URL + "/" + bad)
        check(r.status_code == 404 and r.json()["error"]["type"] == "invalid_request_error", "GET %s: 404" % bad)
    d = post({"input": "x", "previous_response_id": "resp_" + "1" * 32}, 404)
    check(d["error"]["code"] == "previous_response_not_found" and d["error"]["param"] == "previous_response_id",
          "unknown previous_response_id: %s" % d["error"])
    for body, param in (({"input": 3}, "input"), ({}, "input"), ({"input": "x", "max_output_tokens": 0},
                        "max_output_tokens"), ({"input": "x", "reasoning": {"effort": "huge"}}, "reasoning.effort"),
                        ({"input": [{"type": "message", "role": "tool", "content": "x"}]}, "input[0]")):
        d = post(body, 400)
        check(d["error"]["param"] == param, "400 names %s: %s" % (param, d["error"]))
    r = c.put(URL + "/" + plain["id"], json={})
    check(r.status_code == 405, "PUT: 405")
    # ---- DELETE ----
    gone = post({"input": "Delete me", "max_output_tokens": 2, "temperature": 0})
    r = c.delete(URL + "/" + gone["id"])
    check(r.status_code == 200 and r.json() == {"id": gone["id"], "object": "response", "deleted": True},
          "DELETE: %s" % r.text)
    check(c.get(URL + "/" + gone["id"]).status_code == 404, "deleted: GET 404")
    check(c.delete(URL + "/" + gone["id"]).status_code == 404, "deleted: DELETE 404")
    d = post({"input": "x", "previous_response_id": gone["id"]}, 404)
    json.dump({"plain": plain, "first": first, "second": second, "gone": gone["id"]}, open(STATE, "w"))
else:
    st = json.load(open(STATE))
    # the server runs with --share-session-prefixes: stored responses'
    # sessions are still nobody else's prompt cache
    d = post({"input": "Hello there", "max_output_tokens": 2, "temperature": 0, "reasoning": OFF, "store": False})
    check(d["usage"]["input_tokens"] == st["first"]["usage"]["input_tokens"] and
          d["usage"]["input_tokens_details"]["cached_tokens"] == 0,
          "a stored session feeds no other request, even when sessions are shared: %s" % d["usage"])
    for k in ("plain", "first", "second"):
        r = c.get(URL + "/" + st[k]["id"])
        check(r.status_code == 200 and r.json() == st[k], "%s survives a restart" % k)
    check(c.get(URL + "/" + st["gone"]).status_code == 404, "a deleted one stays deleted")
    # continuing after the restart: the session is read back from disk
    third = post({"input": "Go on.", "max_output_tokens": 3, "temperature": 0, "reasoning": OFF,
                  "previous_response_id": st["second"]["id"]})
    su = st["second"]["usage"]
    cached = third["usage"]["input_tokens_details"]["cached_tokens"]
    check(su["input_tokens"] <= cached <= su["input_tokens"] + su["output_tokens"],
          "after a restart the stored prompt is still cached: %d of %s" % (cached, su))

print("responses wire (%s): %s" % (PHASE, "FAIL (%d)" % fails if fails else "ok"))
sys.exit(1 if fails else 0)
