#!/usr/bin/env python3
"""Interop check: drive toolbelt-mcp with the official Python MCP SDK.

Usage:
    pip install mcp
    python3 tests/interop/python_client.py PATH_TO_BINARY

The script builds its own small temporary workspace (nested text files, a
.gitignore with an ignored directory, a hidden directory, a binary file), starts
`BINARY serve --root WORKSPACE` through `mcp.client.stdio.stdio_client`, and
checks the handshake, the `file_operations` tool schema, the four read
operations, two failing calls, writes with undo, and `terminal_operations` (streams, exit
codes, the sandbox, progress notifications, a background command and a PTY session),
`todo_operations` and `memory_operations`, and the `todo://` resource with a subscription; then
the same binary with `serve --http` through the SDK's streamable HTTP client (token, health,
two isolated sessions, SIGTERM). It prints one line per check and ends with
`N passed, M failed`; the exit status is 1 if any check failed.

Set INTEROP_TIMEOUT_S to change the overall timeout (default 120 s) and VERBOSE=1 to print
tracebacks of failed steps. Works with the SDK's 1.x (camelCase attributes) and 2.x (snake_case) models.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import sys
import tempfile
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import anyio.streams.buffered
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SDK_MAJOR = int(importlib.metadata.version("mcp").split(".")[0])
OVERALL_TIMEOUT_S = int(os.environ.get("INTEROP_TIMEOUT_S", "120"))
CALL_TIMEOUT_S = 30
READ_OPS = {"read_file", "list_dir", "file_search", "grep_search"}
FORBIDDEN_SCHEMA_KEYS = {"oneOf", "anyOf", "allOf", "$ref", "$defs", "definitions"}

PASSED: list[str] = []
FAILED: list[str] = []


def check(name: str, ok: bool, detail: str = "") -> bool:
    """Record and print one check."""
    (PASSED if ok else FAILED).append(name)
    line = f"{'PASS' if ok else 'FAIL'} {name}"
    if not ok and detail:
        line += f" -- {detail}"
    print(line, flush=True)
    return ok


def field(obj: Any, *names: str) -> Any:
    """First present attribute among `names` (SDK 1.x camelCase vs 2.x snake_case)."""
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
    return None


def result_text(res: Any) -> str:
    return "\n".join(getattr(c, "text", "") or "" for c in (res.content or []))


def structured(res: Any) -> dict:
    return field(res, "structured_content", "structuredContent") or {}


def is_error(res: Any) -> bool:
    return bool(field(res, "is_error", "isError"))


def short(res: Any) -> str:
    return f"isError={is_error(res)} text={result_text(res)[:300]!r} structured={json.dumps(structured(res))[:300]}"


# ---------------------------------------------------------------- workspace


NOTES_LINES = [f"line {i}: the quick brown fox" for i in range(1, 51)]
MAIN_RS = """\
fn main() {
    println!("Hello from main");
    helper();
}

fn helper() {
    // TODO: a.b literal dot
}
"""
UTIL_RS = """\
pub fn util_one() -> u32 { 1 }
pub fn util_two() -> u32 { 2 }
pub struct ParseError;
"""


def build_workspace(root: Path) -> None:
    """A small tree exercising nesting, .gitignore, hidden and binary files."""
    files = {
        "README.md": "# Demo workspace\nHello toolbelt\n",
        "notes.txt": "\n".join(NOTES_LINES) + "\n",
        "src/main.rs": MAIN_RS,
        "src/lib/util.rs": UTIL_RS,
        "docs/guide.md": "# Guide\nSee src/main.rs for fn main.\nhello again\n",
        ".gitignore": "target/\n*.log\n",
        "target/debug/generated.rs": "fn ignored_by_gitignore() {}\n",
        "build.log": "fn logged() {}\n",
        ".hidden/secret.rs": "fn hidden_file() {}\n",
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (root / "data.bin").write_bytes(b"fn binary()\x00\x01\x02\xff" * 8)


# ---------------------------------------------------------------- checks


def walk_keys(node: Any, path: str = "$"):
    """Yield (json-path, key) for every object key in a JSON value."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield f"{path}.{k}", k
            yield from walk_keys(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk_keys(v, f"{path}[{i}]")


def whole(args: dict) -> dict:
    """The whole record (`details: true`) unless the check asks for the lean view."""
    return args if "details" in args else {**args, "details": True}


async def call(session: ClientSession, args: dict) -> Any:
    # SDK 1.x takes a timedelta, 2.x takes seconds.
    timeout = timedelta(seconds=CALL_TIMEOUT_S) if SDK_MAJOR < 2 else CALL_TIMEOUT_S
    return await session.call_tool("file_operations", whole(args), read_timeout_seconds=timeout)


async def check_tools(session: ClientSession) -> None:
    tools = (await session.list_tools()).tools
    names = [t.name for t in tools]
    tool = next((t for t in tools if t.name == "file_operations"), None)
    if not check("tools/list lists file_operations", tool is not None, f"got {names}"):
        return
    schema = field(tool, "input_schema", "inputSchema") or {}
    check("inputSchema is type: object", schema.get("type") == "object", json.dumps(schema)[:200])
    op = (schema.get("properties") or {}).get("operation") or {}
    enum = set(op.get("enum") or [])
    check("operation enum has the four read ops", READ_OPS <= enum, f"enum={sorted(enum)}")
    check("operation is required", "operation" in (schema.get("required") or []), f"required={schema.get('required')}")
    bad = [p for p, k in walk_keys(schema) if k in FORBIDDEN_SCHEMA_KEYS]
    check("inputSchema has no oneOf/anyOf/allOf/$ref/$defs", not bad, f"found at {bad[:5]}")


async def check_read_file(session: ClientSession, root: Path) -> None:
    res = await call(session, {"operation": "read_file", "path": "notes.txt", "offset": 10, "limit": 5})
    text, sc = result_text(res), structured(res)
    check("read_file window: not isError", not is_error(res), short(res))
    check("read_file window: text has lines 10..14 only",
          "line 10:" in text and "line 14:" in text and "line 9:" not in text and "line 15:" not in text, text[:300])
    check("read_file window: lines are numbered", re.search(r"^\s*10\D.*line 10:", text, re.M) is not None, text[:200])
    sha = hashlib.sha256((root / "notes.txt").read_bytes()).hexdigest()
    expect = {"operation": "read_file", "path": "notes.txt", "total_lines": 50, "start_line": 10,
              "end_line": 14, "next_offset": 15, "truncated": False, "sha256": sha}
    diff = {k: (sc.get(k), v) for k, v in expect.items() if sc.get(k) != v}
    check("read_file window: structuredContent fields", not diff, f"(got, want)={diff}")
    lines = sc.get("lines") or []
    check("read_file window: structuredContent carries the same numbered lines (hosts show only it)",
          len(lines) == 5 and lines[0].startswith("10\t") and all(line in text for line in lines), f"{lines}")

    # The lean view (the default): the text as one string, no hash or restated defaults.
    res = await call(session, {"operation": "read_file", "path": "notes.txt", "offset": 10, "limit": 2,
                               "details": False})
    sc = structured(res)
    check("read_file lean view: the numbered text, the position, nothing a program alone needs",
          sc.get("text") == f"10\t{NOTES_LINES[9]}\n11\t{NOTES_LINES[10]}\n" and sc.get("next_offset") == 12
          and not {"operation", "sha256", "lines", "truncated", "kind"} & sc.keys(), f"{sc}")

    res = await call(session, {"operation": "read_file", "path": "src/lib/util.rs"})
    sc = structured(res)
    check("read_file whole nested file", not is_error(res) and "ParseError" in result_text(res)
          and sc.get("total_lines") == 3 and sc.get("start_line") == 1 and sc.get("end_line") == 3
          and sc.get("truncated") is False, short(res))


async def check_list_dir(session: ClientSession) -> None:
    res = await call(session, {"operation": "list_dir", "path": ".", "depth": 3})
    text, sc = result_text(res), structured(res)
    check("list_dir: not isError", not is_error(res), short(res))
    paths = sorted(e.get("path") for e in sc.get("entries") or [])
    want = sorted(["README.md", "data.bin", "docs", "docs/guide.md", "notes.txt", "src", "src/lib",
                   "src/lib/util.rs", "src/main.rs"])
    check("list_dir: structuredContent total == 9 and entry paths", sc.get("total") == 9 and paths == want,
          f"total={sc.get('total')} paths={paths}")
    present = all(s in text for s in ("README.md", "notes.txt", "src", "util.rs", "guide.md"))
    check("list_dir: lists visible entries (nested to depth 3)", present, text[:400])
    leaked = [s for s in ("generated.rs", "build.log", "secret.rs", ".hidden") if s in text]
    check("list_dir: hides gitignored and hidden entries", not leaked, f"leaked {leaked}")
    res = await call(session, {"operation": "list_dir", "path": ".", "include_hidden": True, "respect_gitignore": False})
    text = result_text(res)
    check("list_dir include_hidden + respect_gitignore=false shows them",
          not is_error(res) and ".hidden" in text and "target" in text and "build.log" in text, text[:400])


async def check_file_search(session: ClientSession) -> None:
    res = await call(session, {"operation": "file_search", "pattern": "**/*.rs"})
    text, sc = result_text(res), structured(res)
    check("file_search **/*.rs: not isError", not is_error(res), short(res))
    check("file_search **/*.rs: total == 2 (ignored/hidden excluded)", sc.get("total") == 2, short(res))
    check("file_search **/*.rs: lists both paths",
          "src/main.rs" in text and "src/lib/util.rs" in text and "generated.rs" not in text, text[:300])
    res = await call(session, {"operation": "file_search", "pattern": "**/*.rs", "limit": 1})
    sc, text = structured(res), result_text(res)
    shown = sum(p in text for p in ("src/main.rs", "src/lib/util.rs"))
    check("file_search limit=1: total still 2, one path shown, truncated",
          sc.get("total") == 2 and shown == 1 and sc.get("truncated") is True, short(res))
    res = await call(session, {"operation": "file_search", "pattern": "*.md", "path": "docs"})
    check("file_search *.md under docs", not is_error(res) and "guide.md" in result_text(res)
          and "README.md" not in result_text(res), short(res))


async def check_grep(session: ClientSession) -> None:
    res = await call(session, {"operation": "grep_search", "pattern": r"fn \w+", "output": "content"})
    text, sc = result_text(res), structured(res)
    check("grep_search regex: not isError", not is_error(res), short(res))
    # main.rs: 2 lines, util.rs: 2 lines, guide.md: 1 line; ignored/hidden/binary files excluded.
    check("grep_search regex: total_matches == 5, total_files == 3",
          sc.get("total_matches") == 5 and sc.get("total_files") == 3, short(res))
    check("grep_search regex: content shows path and line",
          "src/main.rs" in text and "fn helper()" in text and "ignored_by_gitignore" not in text
          and "hidden_file" not in text and "binary" not in text, text[:400])
    res = await call(session, {"operation": "grep_search", "pattern": "HELLO", "case_insensitive": True,
                               "glob": "*.md", "output": "files"})
    sc, text = structured(res), result_text(res)
    check("grep_search -i with glob, output files", not is_error(res) and sc.get("total_files") == 2
          and "README.md" in text and "docs/guide.md" in text and "main.rs" not in text, short(res))
    res = await call(session, {"operation": "grep_search", "pattern": "a.b", "fixed_strings": True, "output": "count"})
    sc = structured(res)
    check("grep_search fixed_strings, output count", not is_error(res) and sc.get("total_matches") == 1
          and "src/main.rs" in result_text(res), short(res))
    res = await call(session, {"operation": "grep_search", "pattern": "Hello from", "path": "src",
                               "context": 1, "output": "content"})
    text = result_text(res)
    check("grep_search context=1 shows neighbouring lines", not is_error(res) and "fn main()" in text
          and "helper();" in text, text[:400])


async def check_errors(session: ClientSession) -> None:
    res = await call(session, {"operation": "read_file", "path": "../outside"})
    msg = result_text(res)
    check("path ../outside -> isError", is_error(res), short(res))
    check("path ../outside error mentions the root", "root" in msg.lower(), msg[:300])
    try:
        res = await call(session, {"operation": "no_such_operation", "path": "."})
        check("unknown operation -> isError result", is_error(res), short(res))
    except Exception as e:  # a JSON-RPC error instead of an isError result
        check("unknown operation -> isError result", False, f"raised {type(e).__name__}: {e}")


async def check_writes(session: ClientSession, root: Path) -> None:
    res = await call(session, {"operation": "create_file", "path": "made/by/sdk.txt", "content": "one\ntwo\n"})
    sc = structured(res)
    check("create_file: created, with its counts", not is_error(res) and sc.get("action") == "created"
          and "created (+2 -0)" in result_text(res) and (root / "made/by/sdk.txt").read_text() == "one\ntwo\n",
          short(res))
    res = await call(session, {"operation": "replace_string", "path": "made/by/sdk.txt", "old_string": "two",
                               "new_string": "2", "expected_hash": sc.get("new_hash")})
    check("replace_string with expected_hash", not is_error(res) and (root / "made/by/sdk.txt").read_text() == "one\n2\n",
          short(res))
    diff = structured(res).get("diff") or []
    check("replace_string: the diff in both views", "-two" in diff and "+2" in diff and "-two\n+2" in result_text(res),
          f"{diff}")
    res = await call(session, {"operation": "undo", "steps": 2})
    check("undo of both: file and new directories gone", not is_error(res) and not (root / "made").exists(), short(res))


async def term(session: ClientSession, args: dict, progress=None) -> Any:
    timeout = timedelta(seconds=CALL_TIMEOUT_S) if SDK_MAJOR < 2 else CALL_TIMEOUT_S
    return await session.call_tool("terminal_operations", whole(args), read_timeout_seconds=timeout,
                                   progress_callback=progress)


async def check_terminal(session: ClientSession, root: Path) -> None:
    tools = (await session.list_tools()).tools
    tool = next((t for t in tools if t.name == "terminal_operations"), None)
    if not check("tools/list lists terminal_operations", tool is not None, f"got {[t.name for t in tools]}"):
        return
    schema = field(tool, "input_schema", "inputSchema") or {}
    bad = [p for p, k in walk_keys(schema) if k in FORBIDDEN_SCHEMA_KEYS]
    check("terminal inputSchema is flat", schema.get("type") == "object" and not bad, f"found at {bad[:5]}")
    res = await term(session, {"operation": "run_command", "command": "echo out; echo err >&2", "cwd": "src"})
    sc = structured(res)
    check("run_command: exit 0, streams apart", not is_error(res) and sc.get("exit_code") == 0
          and sc.get("stdout") == ["out"] and sc.get("stderr") == ["err"], short(res))
    res = await term(session, {"operation": "run_command", "command": "echo partial; exit 7"})
    check("run_command non-zero: isError with exit code and output", is_error(res)
          and structured(res).get("exit_code") == 7 and "partial" in result_text(res), short(res))
    # The workspace is under the system temp dir, which commands may write; the home directory
    # is outside everything writable.
    escaped = Path.home() / f".toolbelt-interop-escaped-{os.getpid()}"
    res = await term(session, {"operation": "run_command", "command": f"touch {escaped}"})
    check("run_command outside the roots: EACCES", is_error(res) and not escaped.exists()
          and "Permission denied" in result_text(res), short(res))
    escaped.unlink(missing_ok=True)
    updates: list[float] = []

    async def on_progress(progress: float, total: Any, message: Any) -> None:
        updates.append(progress)

    res = await term(session, {"operation": "run_command", "command": "sleep 2.2; echo slept"}, on_progress)
    check("run_command sends progress while it runs", not is_error(res) and len(updates) >= 2
          and updates == sorted(updates), f"progress={updates} {short(res)}")
    res = await term(session, {"operation": "run_command", "command": "sleep 0.3; echo bg", "background": True,
                               "wait_ms": 0})
    sid = structured(res).get("session_id")
    check("background command: session id", not is_error(res) and bool(sid), short(res))
    res = await term(session, {"operation": "read_output", "session_id": sid, "since": 0, "wait_ms": 3000})
    check("read_output waits for the background output", "bg" in (structured(res).get("output") or ""), short(res))
    res = await term(session, {"operation": "start_session", "shell": "bash"})
    pty = structured(res).get("session_id")
    res = await term(session, {"operation": "send_input", "session_id": pty, "input": "echo $((6*7))"})
    check("PTY session answers send_input", "42" in (structured(res).get("output") or ""), short(res))
    res = await term(session, {"operation": "kill_session", "session_id": pty, "signal": "KILL"})
    check("kill_session ends the PTY", not is_error(res) and structured(res).get("status") == "killed", short(res))


async def call_tool(session: ClientSession, tool: str, args: dict) -> Any:
    timeout = timedelta(seconds=CALL_TIMEOUT_S) if SDK_MAJOR < 2 else CALL_TIMEOUT_S
    return await session.call_tool(tool, whole(args), read_timeout_seconds=timeout)


def resource_texts(read: Any) -> dict[str, str]:
    """A resources/read result's texts by MIME type."""
    return {field(c, "mime_type", "mimeType"): getattr(c, "text", "") for c in read.contents}


async def check_records(session: ClientSession, updates: list[str]) -> None:
    names = [t.name for t in (await session.list_tools()).tools]
    check("tools/list lists todo_operations and memory_operations",
          "todo_operations" in names and "memory_operations" in names, f"got {names}")
    await session.subscribe_resource("todo://default")
    res = await call_tool(session, "todo_operations", {"operation": "write", "todos": [
        {"title": "Parse", "status": "completed"},
        {"title": "Fix", "status": "in_progress", "dependencies": [1]},
        {"title": "Test", "dependencies": [2]}]})
    sc = structured(res)
    check("todo write: counts and the whole list", not is_error(res) and sc.get("counts", {}).get("total") == 3
          and sc.get("counts", {}).get("completed") == 1 and "[>] 2. Fix" in result_text(res), short(res))
    res = await call_tool(session, "todo_operations", {"operation": "update", "updates": [
        {"id": 2, "status": "completed"}, {"id": 3, "status": "in_progress"}]})
    check("todo update: both changes in one call", not is_error(res)
          and structured(res).get("counts", {}).get("completed") == 2, short(res))
    res = await call_tool(session, "todo_operations", {"operation": "add", "todos": [{"title": "Loop", "dependencies": [4]}]})
    check("todo rule: a self-dependency is an isError result naming the item", is_error(res)
          and "item 4" in result_text(res) and "itself" in result_text(res), short(res))
    for _ in range(50):
        if "todo://default" in updates:
            break
        await anyio.sleep(0.1)
    check("resources/subscribe: notifications/resources/updated for todo://default", "todo://default" in updates,
          f"heard {updates}")
    texts = resource_texts(await session.read_resource("todo://default"))
    todo_json = json.loads(texts.get("application/json") or "{}")
    check("resources/read todo://default: JSON and markdown", len(todo_json.get("todos", [])) == 3
          and "- [>] 3. Test" in (texts.get("text/markdown") or ""), f"{texts}"[:300])
    res = await call_tool(session, "memory_operations", {"operation": "store", "content": "Releases are tagged vX.Y.Z from main.",
                                                    "title": "Release tags", "tags": ["release"], "collection": "howto"})
    mid = structured(res).get("id")
    check("memory store: id", not is_error(res) and isinstance(mid, int), short(res))
    res = await call_tool(session, "memory_operations", {"operation": "store", "content": "Releases are tagged vX.Y.Z from main.",
                                                    "collection": "howto"})
    check("memory store again: same id, duplicate", structured(res).get("id") == mid
          and structured(res).get("duplicate") is True, short(res))
    res = await call_tool(session, "memory_operations", {"operation": "search", "query": "tagged \"from"})
    results = structured(res).get("results") or []
    check("memory search: FTS syntax error retried as words, snippet highlighted", not is_error(res)
          and structured(res).get("query_mode") in ("plain", "any_word") and results
          and "**tagged**" in results[0].get("snippet", ""), short(res))
    res = await call_tool(session, "memory_operations", {"operation": "get", "id": mid})
    check("memory get: whole content", structured(res).get("content") == "Releases are tagged vX.Y.Z from main.", short(res))
    res = await call_tool(session, "memory_operations", {"operation": "list_collections"})
    check("memory list_collections", [c.get("name") for c in structured(res).get("collections", [])] == ["howto"], short(res))
    listed = [str(r.uri) for r in (await session.list_resources()).resources]
    check("resources/list: the policy, todo://default and memory://howto",
          {"toolbelt://policy", "todo://default", "memory://howto"} <= set(listed), f"{listed}")
    res = await call_tool(session, "memory_operations", {"operation": "delete", "id": mid})
    check("memory delete", structured(res).get("deleted") is True, short(res))


async def check_prompts(session: ClientSession) -> None:
    """Prompts built from the workspace's state, and completions of their arguments."""
    from mcp.types import PromptReference, ResourceTemplateReference
    await call(session, {"operation": "create_file", "path": "prompted.txt", "content": "hello prompt\n"})
    await call_tool(session, "memory_operations", {"operation": "store", "content": "Builds run in CI.",
                                                   "collection": "howto"})
    names = [p.name for p in (await session.list_prompts()).prompts]
    check("prompts/list: review_changes, plan, recall", names == ["review_changes", "plan", "recall"], f"{names}")
    review = await session.get_prompt("review_changes", {})
    text = review.messages[0].content.text if review.messages else ""
    check("prompts/get review_changes: the session's diff", "prompted.txt" in text and "+hello prompt" in text,
          text[:300])
    plan = await session.get_prompt("plan", {"task": "Ship it"})
    text = plan.messages[0].content.text if plan.messages else ""
    check("prompts/get plan: the task and the list as it stands", "Ship it" in text and "Parse" in text, text[:300])
    done = await session.complete(PromptReference(type="ref/prompt", name="plan"), {"name": "list", "value": "d"})
    check("completion/complete plan.list", done.completion.values == ["default"], f"{done}")
    done = await session.complete(ResourceTemplateReference(type="ref/resource", uri="memory://{collection}"),
                                  {"name": "collection", "value": "h"})
    check("completion/complete memory://{collection}", done.completion.values == ["howto"], f"{done}")


async def start_http(binary: str, root: Path, env: dict, errlog) -> tuple[Any, str]:
    """`BINARY serve --http 127.0.0.1:0`; returns the process and its URL (read from stderr)."""
    proc = await anyio.open_process([binary, "serve", "--http", "127.0.0.1:0", "--root", str(root)],
                                    env=env, stdin=None, stdout=None)
    line = b""
    buffered = anyio.streams.buffered.BufferedByteReceiveStream(proc.stderr)
    with anyio.fail_after(10):
        while b"serving MCP on " not in line:
            line = await buffered.receive_until(b"\n", 4096)
            errlog.write(line.decode(errors="replace") + "\n")
    url = line.decode().split("serving MCP on ", 1)[1].split()[0].rstrip(";")

    async def drain() -> None:
        try:
            while True:
                errlog.write((await buffered.receive(4096)).decode(errors="replace"))
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            pass
    return proc, url, drain


def http_client_cm(url: str, token: str):
    """The SDK's streamable HTTP client with the bearer token (2.x and 1.x spellings)."""
    import mcp.client.streamable_http as transport
    headers = {"Authorization": f"Bearer {token}"}
    if hasattr(transport, "streamable_http_client"):
        client = transport.create_mcp_http_client(headers=headers)
        return transport.streamable_http_client(url, http_client=client)
    return transport.streamablehttp_client(url, headers=headers)


async def check_http(binary: str, root: Path, errlog) -> None:
    """The same server over streamable HTTP: token, health, two isolated sessions."""
    token = "interop-token-0123456789abcdef"
    env = dict(os.environ, XDG_STATE_HOME=str(root.parent / "state-http"), TOOLBELT_AUTH_TOKEN=token)
    proc, url, drain = await start_http(binary, root, env, errlog)
    async with anyio.create_task_group() as tg:
        tg.start_soon(drain)
        try:
            import urllib.request, urllib.error
            base = url.rsplit("/mcp", 1)[0]
            health = await anyio.to_thread.run_sync(lambda: urllib.request.urlopen(base + "/health").read())
            check("http: /health answers without the token", health == b"ok\n", f"{health!r}")
            def unauthorized() -> int:
                req = urllib.request.Request(url, data=b"{}", method="POST", headers={"Content-Type": "application/json"})
                try:
                    return urllib.request.urlopen(req).status
                except urllib.error.HTTPError as e:
                    return e.code
            status = await anyio.to_thread.run_sync(unauthorized)
            check("http: a request without the token gets 401", status == 401, f"{status}")
            async with http_client_cm(url, token) as streams_a, http_client_cm(url, token) as streams_b:
                read_a, write_a = streams_a[0], streams_a[1]
                read_b, write_b = streams_b[0], streams_b[1]
                async with ClientSession(read_a, write_a) as a, ClientSession(read_b, write_b) as b:
                    init = await a.initialize()
                    await b.initialize()
                    version = field(init, "protocol_version", "protocolVersion")
                    check("http: initialize", bool(version), f"{init}")
                    print(f"     over HTTP: protocol {version}")
                    tools = await a.list_tools()
                    names = [t.name for t in tools.tools]
                    check("http: tools/list", names == ["file_operations", "terminal_operations",
                                                        "todo_operations", "memory_operations"], f"{names}")
                    read = await call(a, {"operation": "read_file", "path": "README.md"})
                    check("http: read_file", not is_error(read) and "Demo" in result_text(read), short(read))
                    bg = await term(a, {"operation": "run_command", "command": "sleep 30", "background": True})
                    check("http: background command in session a", not is_error(bg), short(bg))
                    listed_a = structured(await term(a, {"operation": "list_sessions"})).get("sessions", [])
                    listed_b = structured(await term(b, {"operation": "list_sessions"})).get("sessions", [])
                    check("http: sessions are isolated", len(listed_a) == 1 and listed_b == [],
                          f"a={listed_a} b={listed_b}")
        finally:
            proc.terminate()
            with anyio.fail_after(15):
                code = await proc.wait()
            check("http: SIGTERM ends the server cleanly", code == 0, f"exit {code}")
            tg.cancel_scope.cancel()


async def run(binary: str, root: Path, errlog) -> None:
    # A private state dir: the database of todos and memories is made there.
    env = dict(os.environ, XDG_STATE_HOME=str(root.parent / "state"))
    # Commands run under a 1 GiB address-space limit, as a user may set: a binary whose
    # allocator reserves that much up front (mimalloc did, in the musl build) could start none.
    config = root.parent / "limits.toml"
    config.write_text("max_memory_bytes = 1073741824\n")
    args = ["serve", "--root", str(root), "--config", str(config)]
    params = StdioServerParameters(command=binary, args=args, env=env)
    updates: list[str] = []

    async def on_message(message: Any) -> None:
        inner = getattr(message, "root", message)
        if type(inner).__name__ == "ResourceUpdatedNotification":
            updates.append(str(inner.params.uri))

    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            init = await session.initialize()
            info = field(init, "server_info", "serverInfo")
            version = field(init, "protocol_version", "protocolVersion")
            check("initialize", info is not None and bool(version), f"{init}")
            print(f"     server {getattr(info, 'name', '?')} {getattr(info, 'version', '?')}, protocol {version}")
            steps = [check_tools(session), check_read_file(session, root), check_list_dir(session),
                     check_file_search(session), check_grep(session), check_errors(session),
                     check_writes(session, root), check_terminal(session, root), check_records(session, updates),
                     check_prompts(session)]
            for step in steps:
                try:
                    await step
                except Exception as e:
                    check(f"{step.__name__} raised", False, f"{type(e).__name__}: {e}")
                    if os.environ.get("VERBOSE"):
                        traceback.print_exc()


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[1])
    tmp = Path(tempfile.mkdtemp(prefix="toolbelt-interop-"))
    root = tmp / "workspace"
    root.mkdir()
    build_workspace(root)
    errpath = tmp / "server-stderr.log"
    try:
        with open(errpath, "w") as errlog:
            try:
                anyio.run(_with_timeout, binary, root, errlog)
            except TimeoutError:
                check("session completed", False, f"timed out after {OVERALL_TIMEOUT_S} s")
            except Exception as e:
                check("session completed", False, f"{type(e).__name__}: {e}")
                traceback.print_exc()
        if FAILED:
            tail = errpath.read_text()[-2000:]
            if tail.strip():
                print("---- server stderr (tail) ----\n" + tail + "\n------------------------------")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(PASSED)} passed, {len(FAILED)} failed")
    return 1 if FAILED else 0


async def _with_timeout(binary: str, root: Path, errlog) -> None:
    with anyio.fail_after(OVERALL_TIMEOUT_S):
        await run(binary, root, errlog)
        try:
            await check_http(binary, root, errlog)
        except Exception as e:
            check("http: checks completed", False, f"{type(e).__name__}: {e}")
            if os.environ.get("VERBOSE"):
                traceback.print_exc()


if __name__ == "__main__":
    sys.exit(main())
