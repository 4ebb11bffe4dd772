#!/usr/bin/env python3
"""A scripted model endpoint on loopback for the real-host tests.

It speaks what a coding host speaks to its provider:

- the Anthropic Messages API (`POST /v1/messages`, streamed as SSE when the request says
  `stream: true`, a JSON message otherwise; `POST /v1/messages/count_tokens`), for Claude Code;
- the OpenAI Responses API (`POST /v1/responses`, SSE), for Codex CLI;
- OpenAI Chat Completions (`POST /v1/chat/completions`, SSE or JSON), for Qwen Code;
- the Gemini API (`POST /v1beta/models/MODEL:streamGenerateContent?alt=sse` or
  `:generateContent`), for Gemini CLI;
- `GET /v1/models`, for hosts that list models first.

Instead of thinking it plays a script: one tool call per turn, in order, then a final text
answer. Every request is logged as one JSON line (path, headers, body, and what the endpoint
answered), so a test can read what the host handed the model as the result of the previous
call.

The endpoint keeps no conversation state: the next step is worked out from the history in
the request itself (the ids of the calls it made carry the step number, `toolu_hb_3`,
`call_hb_3`). Hosts that defer MCP tools behind a search tool (Claude Code's `ToolSearch`,
Qwen Code's `tool_search`) get that search first, for every tool of the script, when a tool
the next step needs is not among the request's tools.

Requests that are not the task's main loop (title generation, quota checks, summaries: those
without tools, or without the task's marker) get a short harmless text answer.

Standalone, for poking at a host by hand:

    python3 tests/hosts/model.py --script script.json --log requests.jsonl
    # prints: model endpoint on http://127.0.0.1:PORT

with `script.json` `{"marker": "...", "server": "toolbelt", "steps": [{"name": "read",
"tool": "file_operations", "args": {...}}, ...], "final": "done"}`.

Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import re
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL_ID = "hostcheck-model"

# Call ids carry the step number, so the history says where the script is.
ANTHROPIC_ID = "toolu_hb_{}"
ANTHROPIC_SEARCH_ID = "toolu_hbsearch_{}"
OPENAI_ID = "call_hb_{}"
OPENAI_SEARCH_ID = "call_hbsearch_{}"
STEP_RE = re.compile(r"^(?:toolu|call)_hb_(\d+)$")
SEARCH_RE = re.compile(r"^(?:toolu|call)_hbsearch_(\d+)$")

# The search tools of hosts that defer MCP tools, and how to ask them for given tools.
ANTHROPIC_SEARCH_TOOLS = ("ToolSearch",)
OPENAI_SEARCH_TOOLS = ("tool_search", "search_tool_bm25", "ToolSearch")


@dataclass
class Step:
    name: str
    tool: str  # the server's own tool name, e.g. `file_operations`
    args: dict[str, Any]


@dataclass
class Script:
    steps: list[Step]
    marker: str  # a word in the task prompt: requests that carry it are the main loop
    server: str = "toolbelt"  # the MCP server's name in the host's config
    final: str = "All steps done."

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Script":
        return cls(
            steps=[Step(s["name"], s["tool"], s.get("args", {})) for s in data["steps"]],
            marker=data["marker"],
            server=data.get("server", "toolbelt"),
            final=data.get("final", "All steps done."),
        )


@dataclass
class Reply:
    """What the endpoint answers one main-loop request with."""

    kind: str  # "call", "search", "code" (a script for a code-mode tool) or "text"
    step: int | None = None
    tool: str | None = None  # the name as sent to the host
    namespace: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None
    text: str | None = None
    code: str | None = None  # the script of a "code" reply

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        for key in ("step", "tool", "namespace", "call_id", "text", "code"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.kind in ("call", "search"):
            out["args"] = self.args
        return out


# --------------------------------------------------------------------------------------------
# Reading what a host sent
# --------------------------------------------------------------------------------------------


def _flat_tools(tools: list[Any]) -> list[tuple[str | None, str, dict[str, Any]]]:
    """(namespace, name, definition) for every tool, namespaces opened."""
    out: list[tuple[str | None, str, dict[str, Any]]] = []
    for tool in tools or []:
        if not isinstance(tool, dict):
            continue
        inner = tool.get("tools")
        if isinstance(inner, list) and tool.get("type") in ("namespace", None):
            ns = tool.get("name")
            for sub in inner:
                if isinstance(sub, dict):
                    name = sub.get("name") or (sub.get("function") or {}).get("name")
                    if name:
                        out.append((ns, name, sub))
            continue
        name = tool.get("name") or (tool.get("function") or {}).get("name")
        if name:
            out.append((None, name, tool))
    return out


def find_tool(tools: list[Any], server: str, short: str) -> tuple[str | None, str] | None:
    """The (namespace, name) under which the host offers the server's tool `short`."""
    candidates = _flat_tools(tools)
    prefixed = f"mcp__{server}__{short}"
    for ns, name, _ in candidates:
        if ns is None and name == prefixed:
            return None, name
    for ns, name, _ in candidates:
        if ns is not None and server in ns and name in (short, prefixed):
            return ns, name
    for ns, name, _ in candidates:
        if name == short or name.endswith(("__" + short, "_" + short, "-" + short)):
            return ns, name
    return None


def responses_tools(body: dict[str, Any]) -> list[Any]:
    """A Responses request's tools: `tools`, and those sent as `additional_tools` input items
    (Codex's code mode)."""
    tools = list(body.get("tools") or [])
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "additional_tools":
            tools.extend(item.get("tools") or [])
    return tools


def code_mode_tool(tools: list[Any]) -> str | None:
    """The name of a code-mode tool (a freeform `exec` that runs a script calling the other
    tools), when the request offers one."""
    for ns, name, d in _flat_tools(tools):
        if name == "exec" and d.get("type") == "custom":
            return name
    return None


def tool_names(tools: list[Any]) -> set[str]:
    return {name for _, name, _ in _flat_tools(tools)}


def text_of_blocks(content: Any) -> str:
    """The text a host handed over as a tool result (string, or a list of content blocks)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            kind = block.get("type")
            if "text" in block and isinstance(block["text"], str):
                parts.append(block["text"])
            elif kind in ("image", "input_image", "image_url"):
                parts.append("[image]")
            elif kind == "tool_reference":
                parts.append(f"[tool_reference {block.get('tool_name')}]")
            else:
                parts.append(json.dumps(block, ensure_ascii=False))
    return "\n".join(parts)


def anthropic_history(messages: list[Any]) -> tuple[dict[str, dict], dict[str, dict]]:
    """(calls by id, results by tool_use_id) found in a Messages API history."""
    calls: dict[str, dict] = {}
    results: dict[str, dict] = {}
    for msg in messages or []:
        content = msg.get("content") if isinstance(msg, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                calls[block.get("id", "")] = block
            elif block.get("type") == "tool_result":
                results[block.get("tool_use_id", "")] = {
                    "text": text_of_blocks(block.get("content")),
                    "is_error": bool(block.get("is_error")),
                }
    return calls, results


def responses_history(items: Any) -> tuple[dict[str, dict], dict[str, dict]]:
    """(calls by call_id, results by call_id) found in a Responses API `input`."""
    calls: dict[str, dict] = {}
    results: dict[str, dict] = {}
    if not isinstance(items, list):
        return calls, results
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind in ("function_call", "custom_tool_call", "tool_search_call"):
            calls[item.get("call_id", "")] = item
        elif kind in ("function_call_output", "custom_tool_call_output", "tool_search_output"):
            output = item.get("output")
            if isinstance(output, dict) and "content" in output:
                output = output.get("content")
            results[item.get("call_id", "")] = {
                "text": text_of_blocks(output) if output is not None else json.dumps(item),
                "is_error": False,
            }
    return calls, results


def chat_history(messages: Any) -> tuple[dict[str, dict], dict[str, dict]]:
    """(calls by id, results by tool_call_id) found in a Chat Completions history."""
    calls: dict[str, dict] = {}
    results: dict[str, dict] = {}
    for msg in messages or []:
        if not isinstance(msg, dict):
            continue
        for call in msg.get("tool_calls") or []:
            calls[call.get("id", "")] = call
        if msg.get("role") == "tool":
            results[msg.get("tool_call_id", "")] = {
                "text": text_of_blocks(msg.get("content")),
                "is_error": False,
            }
    return calls, results


def is_gemini(path: str) -> bool:
    return path.endswith((":generateContent", ":streamGenerateContent"))


def gemini_tools(body: dict[str, Any]) -> list[Any]:
    """A Gemini request's function declarations, as plain tools."""
    return [d for t in body.get("tools") or [] if isinstance(t, dict)
            for d in t.get("functionDeclarations") or [] if isinstance(d, dict)]


def gemini_history(contents: Any) -> tuple[dict[str, dict], dict[str, dict]]:
    """(calls, results) found in a Gemini `contents` history. Calls are keyed by the id this
    endpoint gave them when the host kept it, else by their order (one call per turn)."""
    calls: dict[str, dict] = {}
    results: dict[str, dict] = {}
    order = {"call": 0, "result": 0}
    for content in contents or []:
        for part in (content.get("parts") if isinstance(content, dict) else None) or []:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("functionCall"), dict):
                call = part["functionCall"]
                calls[call.get("id") or ANTHROPIC_ID.format(order["call"])] = call
                order["call"] += 1
            elif isinstance(part.get("functionResponse"), dict):
                answer = part["functionResponse"]
                key = answer.get("id") or ANTHROPIC_ID.format(order["result"])
                order["result"] += 1
                results[key] = {"text": text_of_blocks(json.dumps(answer.get("response"), ensure_ascii=False)),
                                "is_error": False}
    return calls, results


def history_of(path: str, body: dict[str, Any]) -> tuple[dict[str, dict], dict[str, dict]]:
    if is_gemini(path):
        return gemini_history(body.get("contents"))
    if path.endswith("/responses"):
        return responses_history(body.get("input"))
    if path.endswith("/chat/completions"):
        return chat_history(body.get("messages"))
    return anthropic_history(body.get("messages"))


# --------------------------------------------------------------------------------------------
# The script player
# --------------------------------------------------------------------------------------------


class Player:
    def __init__(self, script: Script):
        self.script = script

    def _next(self, calls: dict[str, dict]) -> tuple[int, bool]:
        """(index of the next step, whether a tool search was made already)."""
        done = -1
        searched = False
        for call_id in calls:
            m = STEP_RE.match(call_id or "")
            if m:
                done = max(done, int(m.group(1)))
            if SEARCH_RE.match(call_id or ""):
                searched = True
        return done + 1, searched

    def _full_names(self) -> list[str]:
        seen: list[str] = []
        for step in self.script.steps:
            name = f"mcp__{self.script.server}__{step.tool}"
            if name not in seen:
                seen.append(name)
        return seen

    def decide(self, tools: list[Any], calls: dict[str, dict], search_tools: tuple[str, ...],
               id_fmt: str, search_id_fmt: str, code_tool: str | None = None) -> Reply:
        k, searched = self._next(calls)
        if k >= len(self.script.steps):
            return Reply("text", text=self.script.final)
        step = self.script.steps[k]
        found = find_tool(tools, self.script.server, step.tool)
        names = tool_names(tools)
        search = next((s for s in search_tools if s in names), None)
        if found is None and code_tool:
            # Code mode (Codex with its default model): MCP tools are functions of a script.
            fn = f"mcp__{self.script.server}__{step.tool}"
            code = (f"const r = await tools.{fn}({json.dumps(step.args)});\n"
                    "text(r);\n")
            return Reply("code", step=k, tool=code_tool, args=step.args, call_id=id_fmt.format(k), code=code)
        if found is None and search and not searched:
            query = "select:" + ",".join(self._full_names())
            args: dict[str, Any] = {"query": query}
            if search == "ToolSearch":
                args["max_results"] = len(self._full_names()) + 5
            return Reply("search", step=k, tool=search, args=args, call_id=search_id_fmt.format(k))
        if found is None:
            # Not offered: call it by its usual name anyway; the host's answer shows why.
            namespace, name = None, f"mcp__{self.script.server}__{step.tool}"
        else:
            namespace, name = found
        return Reply("call", step=k, tool=name, namespace=namespace, args=step.args,
                     call_id=id_fmt.format(k))


# --------------------------------------------------------------------------------------------
# Wire formats
# --------------------------------------------------------------------------------------------


def sse(events: list[tuple[str | None, dict[str, Any]]]) -> bytes:
    out = []
    for name, data in events:
        if name:
            out.append(f"event: {name}\n")
        out.append("data: " + json.dumps(data, ensure_ascii=False) + "\n\n")
    return "".join(out).encode()


def anthropic_message(reply: Reply, msg_id: str, model: str) -> dict[str, Any]:
    if reply.kind == "text":
        content = [{"type": "text", "text": reply.text}]
        stop = "end_turn"
    else:
        content = [{"type": "tool_use", "id": reply.call_id, "name": reply.tool, "input": reply.args}]
        stop = "tool_use"
    return {
        "id": msg_id, "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }


def anthropic_stream(reply: Reply, msg_id: str, model: str) -> bytes:
    msg = anthropic_message(reply, msg_id, model)
    start = dict(msg, content=[], stop_reason=None)
    start["usage"] = dict(msg["usage"], output_tokens=1)
    events: list[tuple[str | None, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})]
    block = msg["content"][0]
    if block["type"] == "text":
        events.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                               "content_block": {"type": "text", "text": ""}}))
        events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "text_delta", "text": block["text"]}}))
    else:
        events.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                               "content_block": dict(block, input={})}))
        events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "input_json_delta",
                                                         "partial_json": json.dumps(block["input"])}}))
    events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                                     "usage": {"output_tokens": 20}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return sse(events)


def responses_item(reply: Reply, n: int) -> dict[str, Any]:
    if reply.kind == "text":
        return {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}]}
    if reply.kind == "code":
        return {"type": "custom_tool_call", "id": f"ctc_{n}", "status": "completed",
                "call_id": reply.call_id, "name": reply.tool, "input": reply.code}
    item: dict[str, Any] = {"type": "function_call", "id": f"fc_{n}", "status": "completed",
                            "call_id": reply.call_id, "name": reply.tool,
                            "arguments": json.dumps(reply.args)}
    if reply.namespace:
        item["namespace"] = reply.namespace
    return item


def responses_stream(reply: Reply, n: int, model: str) -> bytes:
    resp_id = f"resp_{n}"
    item = responses_item(reply, n)
    base = {"id": resp_id, "object": "response", "created_at": int(time.time()), "model": model,
            "status": "in_progress", "output": []}
    events: list[tuple[str | None, dict[str, Any]]] = [
        ("response.created", {"type": "response.created", "response": base}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                        "item": dict(item, status="in_progress")}),
    ]
    if reply.kind == "text":
        events.append(("response.output_text.delta", {"type": "response.output_text.delta",
                                                       "item_id": item["id"], "output_index": 0,
                                                       "content_index": 0, "delta": reply.text}))
    events.append(("response.output_item.done", {"type": "response.output_item.done",
                                                 "output_index": 0, "item": item}))
    done = dict(base, status="completed", output=[item],
                usage={"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                       "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                       "total_tokens": 120})
    events.append(("response.completed", {"type": "response.completed", "response": done}))
    return sse(events)


def gemini_response(reply: Reply, stream: bool) -> bytes:
    if reply.kind == "text":
        part: dict[str, Any] = {"text": reply.text}
    else:
        part = {"functionCall": {"id": reply.call_id, "name": reply.tool, "args": reply.args}}
    data = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120},
            "modelVersion": MODEL_ID}
    return ("data: " + json.dumps(data, ensure_ascii=False) + "\r\n\r\n").encode() if stream else json.dumps(data).encode()


def chat_message(reply: Reply) -> dict[str, Any]:
    if reply.kind == "text":
        return {"role": "assistant", "content": reply.text}
    return {"role": "assistant", "content": None, "tool_calls": [{
        "id": reply.call_id, "type": "function",
        "function": {"name": reply.tool, "arguments": json.dumps(reply.args)}}]}


def chat_response(reply: Reply, n: int, model: str, stream: bool) -> bytes | dict[str, Any]:
    msg = chat_message(reply)
    finish = "stop" if reply.kind == "text" else "tool_calls"
    usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    base = {"id": f"chatcmpl-{n}", "created": int(time.time()), "model": model}
    if not stream:
        return dict(base, object="chat.completion", usage=usage,
                    choices=[{"index": 0, "message": msg, "finish_reason": finish}])
    chunk = dict(base, object="chat.completion.chunk")
    events: list[tuple[str | None, dict[str, Any]]] = [
        (None, dict(chunk, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                     "finish_reason": None}]))]
    if reply.kind == "text":
        events.append((None, dict(chunk, choices=[{"index": 0, "delta": {"content": reply.text},
                                                   "finish_reason": None}])))
    else:
        call = msg["tool_calls"][0]
        events.append((None, dict(chunk, choices=[{"index": 0, "delta": {"tool_calls": [
            dict(call, index=0)]}, "finish_reason": None}])))
    events.append((None, dict(chunk, choices=[{"index": 0, "delta": {}, "finish_reason": finish}],
                              usage=usage)))
    return sse(events) + b"data: [DONE]\n\n"


# --------------------------------------------------------------------------------------------
# The HTTP server
# --------------------------------------------------------------------------------------------


class ModelServer:
    """The scripted endpoint: `start()` returns its base URL (`http://127.0.0.1:PORT`)."""

    def __init__(self, script: Script, log_path: str, host: str = "127.0.0.1", port: int = 0):
        self.script = script
        self.player = Player(script)
        self.log_path = log_path
        self._log_lock = threading.Lock()
        self._seq = itertools.count(1)
        self._log = open(log_path, "a", encoding="utf-8")
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802
                server._handle(self, "GET")

            def do_POST(self) -> None:  # noqa: N802
                server._handle(self, "POST")

            def do_HEAD(self) -> None:  # noqa: N802
                server._handle(self, "HEAD")

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> str:
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self.url

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        with self._log_lock:
            self._log.close()

    # ----------------------------------------------------------------------------------------

    def _record(self, rec: dict[str, Any]) -> None:
        with self._log_lock:
            self._log.write(json.dumps(rec, ensure_ascii=False) + "\n")
            self._log.flush()

    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        seq = next(self._seq)
        path = h.path.split("?", 1)[0]
        raw = b""
        length = int(h.headers.get("content-length") or 0)
        if length:
            raw = h.rfile.read(length)
        elif "chunked" in (h.headers.get("transfer-encoding") or "").lower():
            raw = _read_chunked(h.rfile)
        enc = (h.headers.get("content-encoding") or "").lower()
        try:
            if enc == "gzip":
                raw = gzip.decompress(raw)
            elif enc == "deflate":
                raw = zlib.decompress(raw)
        except Exception:  # noqa: BLE001 - log it as it came
            pass
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = {"_raw": raw[:2000].decode("utf-8", "replace"), "_encoding": enc}
        rec: dict[str, Any] = {
            "seq": seq, "time": time.time(), "method": method, "path": h.path,
            "headers": {k.lower(): v for k, v in h.headers.items()
                        if k.lower() not in ("authorization", "x-api-key", "cookie")},
            "body": body,
        }
        try:
            status, ctype, payload, answer = self._answer(method, path, body if isinstance(body, dict) else {}, seq)
        except Exception as exc:  # noqa: BLE001 - never leave a host hanging
            status, ctype, payload, answer = 500, "application/json", json.dumps(
                {"error": {"type": "api_error", "message": f"scripted model failed: {exc!r}"}}).encode(), {
                "kind": "error", "error": repr(exc)}
        rec["answer"] = answer
        self._record(rec)
        h.send_response(status)
        h.send_header("content-type", ctype)
        h.send_header("content-length", str(len(payload)))
        h.send_header("request-id", f"req_{seq}")
        h.send_header("x-request-id", f"req_{seq}")
        h.end_headers()
        if method != "HEAD":
            h.wfile.write(payload)
            h.wfile.flush()

    def _is_main(self, path: str, body: dict[str, Any]) -> bool:
        if not (responses_tools(body) if path.endswith("/responses") else body.get("tools")):
            return False
        if is_gemini(path):
            convo = body.get("contents")
        elif path.endswith("/responses"):
            convo = body.get("input")
        else:
            convo = body.get("messages")
        return self.script.marker in json.dumps(convo, ensure_ascii=False)

    def _answer(self, method: str, path: str, body: dict[str, Any],
                seq: int) -> tuple[int, str, bytes, dict[str, Any]]:
        model = body.get("model") or MODEL_ID
        if method in ("GET", "HEAD"):
            if path.rstrip("/").endswith("/models"):
                data = {"object": "list", "data": [{"id": MODEL_ID, "object": "model", "created": 0,
                                                    "owned_by": "hostcheck", "type": "model",
                                                    "display_name": MODEL_ID}],
                        "models": [], "has_more": False, "first_id": MODEL_ID, "last_id": MODEL_ID}
                return 200, "application/json", json.dumps(data).encode(), {"kind": "models"}
            return 404, "application/json", b'{"error":{"type":"not_found_error","message":"not here"}}', {
                "kind": "404"}

        if path.endswith("/count_tokens"):
            n = max(1, len(json.dumps(body)) // 4)
            return 200, "application/json", json.dumps({"input_tokens": n}).encode(), {"kind": "count_tokens"}

        main = self._is_main(path, body)
        if path.endswith("/v1/messages") or path.endswith("/messages"):
            if main:
                calls, _ = anthropic_history(body.get("messages"))
                reply = self.player.decide(body.get("tools") or [], calls, ANTHROPIC_SEARCH_TOOLS,
                                           ANTHROPIC_ID, ANTHROPIC_SEARCH_ID)
            else:
                reply = Reply("text", text="ok")
            msg_id = f"msg_hb_{seq}"
            summary = dict(reply.summary(), main=main)
            if body.get("stream"):
                return 200, "text/event-stream", anthropic_stream(reply, msg_id, model), summary
            return 200, "application/json", json.dumps(anthropic_message(reply, msg_id, model)).encode(), summary

        if path.endswith("/responses"):
            if main:
                calls, _ = responses_history(body.get("input"))
                tools = responses_tools(body)
                reply = self.player.decide(tools, calls, OPENAI_SEARCH_TOOLS, OPENAI_ID, OPENAI_SEARCH_ID,
                                           code_tool=code_mode_tool(tools))
            else:
                reply = Reply("text", text="ok")
            summary = dict(reply.summary(), main=main)
            if body.get("stream", True):
                return 200, "text/event-stream", responses_stream(reply, seq, model), summary
            item = responses_item(reply, seq)
            data = {"id": f"resp_{seq}", "object": "response", "status": "completed", "model": model,
                    "output": [item], "usage": {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}}
            return 200, "application/json", json.dumps(data).encode(), summary

        if is_gemini(path):
            if main:
                calls, _ = gemini_history(body.get("contents"))
                reply = self.player.decide(gemini_tools(body), calls, (), ANTHROPIC_ID, ANTHROPIC_SEARCH_ID)
            else:
                reply = Reply("text", text="ok")
            stream = path.endswith(":streamGenerateContent")
            ctype = "text/event-stream" if stream else "application/json"
            return 200, ctype, gemini_response(reply, stream), dict(reply.summary(), main=main)

        if path.endswith("/chat/completions"):
            if main:
                calls, _ = chat_history(body.get("messages"))
                reply = self.player.decide(body.get("tools") or [], calls, OPENAI_SEARCH_TOOLS,
                                           OPENAI_ID, OPENAI_SEARCH_ID)
            else:
                reply = Reply("text", text="ok")
            summary = dict(reply.summary(), main=main)
            stream = bool(body.get("stream"))
            out = chat_response(reply, seq, model, stream)
            if stream:
                assert isinstance(out, bytes)
                return 200, "text/event-stream", out, summary
            return 200, "application/json", json.dumps(out).encode(), summary

        return 404, "application/json", b'{"error":{"type":"not_found_error","message":"not here"}}', {
            "kind": "404"}


def _read_chunked(rfile: Any) -> bytes:
    out = bytearray()
    while True:
        line = rfile.readline()
        if not line:
            break
        size = int(line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            rfile.readline()
            break
        out += rfile.read(size)
        rfile.readline()
    return bytes(out)


# --------------------------------------------------------------------------------------------
# Reading a log back
# --------------------------------------------------------------------------------------------


def read_log(path: str) -> list[dict[str, Any]]:
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line:
                    out.append(json.loads(line))
    except FileNotFoundError:
        pass
    return out


def results_seen(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """For every call id: the first request that handed its result to the model, and what it said.

    Returns {call_id: {"text", "is_error", "seq", "call"}} over the main-loop requests.
    """
    seen: dict[str, dict[str, Any]] = {}
    for rec in records:
        body = rec.get("body")
        if not isinstance(body, dict) or rec.get("method") != "POST":
            continue
        path = rec.get("path", "").split("?", 1)[0]
        if path.endswith("/count_tokens"):
            continue
        calls, results = history_of(path, body)
        for call_id, res in results.items():
            if call_id not in seen:
                seen[call_id] = dict(res, seq=rec.get("seq"), call=calls.get(call_id))
    return seen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--script", required=True, help="JSON: {marker, server, steps, final}")
    ap.add_argument("--log", required=True, help="JSONL file every request is appended to")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    with open(args.script, encoding="utf-8") as f:
        script = Script.from_json(json.load(f))
    srv = ModelServer(script, args.log, port=args.port)
    print(f"model endpoint on {srv.url}", flush=True)
    try:
        srv.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
