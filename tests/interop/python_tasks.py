#!/usr/bin/env python3
"""`run_command` as an MCP task through the official Python SDK's client (1.x: the tasks of
protocol 2025-11-25, `session.experimental`), over stdio.

    python3 tests/interop/python_tasks.py BINARY

Needs `mcp` 1.x importable (CI installs `mcp==1.30.0` into a directory on PYTHONPATH: 2.x no
longer has these tasks). Checks: the server declares `capabilities.tasks` for `tools/call` and
marks `terminal_operations` `taskSupport: optional`; a call made as a task answers with a task
at once (a 128-bit id); `tasks/get` goes `working` → `completed`; `tasks/result` gives the
command's output; `tasks/list` lists it; `tasks/cancel` ends a long command (its marker never
appears); an approval the command needs comes as `elicitation/create` while `tasks/result`
waits, and the answer decides (allowed: the file is written; denied: it is not); a call not
made as a task is a plain call. `delegate` called as a task by a client that samples with
tools: its sub-agent's model turns come to the client as `sampling/createMessage` while
`tasks/result` waits (the tools offered, the tool's result tied to its use), its edit lands, and
the result carries the sub-agent's answer. Exit 0 when all hold.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", category=DeprecationWarning)

from mcp import ClientSession, StdioServerParameters, types  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

FAILURES: list[str] = []


def check(ok: bool, what: str) -> None:
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILURES.append(what)


async def wait_status(session: ClientSession, task_id: str, wanted: set[str], secs: float = 30) -> str:
    deadline = asyncio.get_running_loop().time() + secs
    while True:
        status = (await session.experimental.get_task(task_id)).status
        if status in wanted or asyncio.get_running_loop().time() > deadline:
            return status
        await asyncio.sleep(0.1)


def command(line: str) -> dict:
    return {"operation": "run_command", "command": line}


async def run(binary: str, scratch: Path) -> None:
    root = scratch / "ws"
    root.mkdir()
    config = scratch / "config.toml"
    config.write_text('approval = "always"\n')
    env = dict(os.environ, XDG_CONFIG_HOME=str(scratch / "config"), XDG_STATE_HOME=str(scratch / "state"))
    server = StdioServerParameters(command=binary, args=["serve", "--root", str(root), "--config", str(config)], env=env)
    answers: list[str] = []

    async def elicit(_context, params: types.ElicitRequestParams) -> types.ElicitResult:
        decision = answers.pop(0) if answers else "deny"
        if decision == "hold":
            # A person who has not answered yet.
            await asyncio.sleep(60)
            decision = "deny"
        await asyncio.sleep(0.3)  # a person reads the question before answering
        return types.ElicitResult(action="accept", content={"decision": decision, "note": "from the test"})

    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, elicitation_callback=elicit) as session:
            init = await session.initialize()
            tasks = init.capabilities.tasks
            check(tasks is not None and tasks.requests is not None and tasks.requests.tools is not None,
                  "the server declares tasks for tools/call")
            listed = {tool.name: tool for tool in (await session.list_tools()).tools}
            execution = listed["terminal_operations"].execution
            check(execution is not None and execution.taskSupport == "optional",
                  "terminal_operations may run as a task")

            # Allowed: asked while tasks/result waits, then the result.
            answers.append("allow_once")
            created = await session.experimental.call_tool_as_task(
                "terminal_operations", command("sleep 1; echo py-task > made.txt; echo py-task"))
            task_id = created.task.taskId
            check(len(task_id) == 32 and all(c in "0123456789abcdef" for c in task_id), f"a 128-bit task id ({task_id})")
            status = await wait_status(session, task_id, {"input_required", "completed", "failed"})
            check(status == "input_required", f"the approval makes the task input_required ({status})")
            result = await session.experimental.get_task_result(task_id, types.CallToolResult)
            text = "".join(getattr(block, "text", "") for block in result.content)
            check("py-task" in text and not result.isError, f"tasks/result has the output ({text[:80]!r})")
            check((root / "made.txt").exists(), "the allowed command wrote its file")
            check((await session.experimental.get_task(task_id)).status == "completed", "the task is completed")
            check(task_id in {t.taskId for t in (await session.experimental.list_tasks()).tasks}, "tasks/list lists it")

            # Denied: the command never runs; the result says so.
            answers.append("deny")
            denied = await session.experimental.call_tool_as_task("terminal_operations", command("echo no > denied.txt"))
            result = await session.experimental.get_task_result(denied.task.taskId, types.CallToolResult)
            check(result.isError and not (root / "denied.txt").exists(), "a denied command does not run")

            # Cancelled: the command ends and its marker never appears.
            answers.append("allow_once")
            long = await session.experimental.call_tool_as_task(
                "terminal_operations", command("sleep 60; echo late > late.txt"))
            await wait_status(session, long.task.taskId, {"input_required"})
            waiter = asyncio.create_task(session.experimental.get_task_result(long.task.taskId, types.CallToolResult))
            await wait_status(session, long.task.taskId, {"working"}, 5)
            await asyncio.sleep(1)
            cancelled = await session.experimental.cancel_task(long.task.taskId)
            check(cancelled.status == "cancelled", f"tasks/cancel answers the cancelled task ({cancelled.status})")
            try:
                await asyncio.wait_for(waiter, 10)
            except Exception:  # noqa: BLE001 - a cancelled task has no result: an error is right
                pass
            await asyncio.sleep(1)
            check(not (root / "late.txt").exists(), "the cancelled command did not go on")

            # Cancelled while its question is open: tasks/result answers at once.
            answers.append("hold")
            held = await session.experimental.call_tool_as_task("terminal_operations", command("echo held > held.txt"))
            await wait_status(session, held.task.taskId, {"input_required"})
            waiter = asyncio.create_task(session.experimental.get_task_result(held.task.taskId, types.CallToolResult))
            await asyncio.sleep(1)
            await session.experimental.cancel_task(held.task.taskId)
            try:
                await asyncio.wait_for(waiter, 5)
                check(False, "tasks/result of a task cancelled while it asked: an error")
            except asyncio.TimeoutError:
                check(False, "tasks/result of a task cancelled while it asked answers within 5 s")
            except Exception:  # noqa: BLE001 - the cancelled task has no result
                check(True, "tasks/result of a task cancelled while it asked answers at once")
            check(not (root / "held.txt").exists(), "the cancelled command never ran")

            # Not asked as a task: a plain call.
            answers.append("allow_once")
            plain = await session.call_tool("terminal_operations", command("echo plain"))
            text = "".join(getattr(block, "text", "") for block in plain.content)
            check("plain" in text, "a call not made as a task answers as usual")


async def delegate(binary: str, scratch: Path) -> None:
    root = scratch / "delegate-ws"
    root.mkdir()
    (root / "answer.txt").write_text("answer = 41\n")
    env = dict(os.environ, XDG_CONFIG_HOME=str(scratch / "config"), XDG_STATE_HOME=str(scratch / "state"))
    server = StdioServerParameters(command=binary, args=["serve", "--root", str(root)], env=env)
    asked: list[types.CreateMessageRequestParams] = []
    replies = [
        [types.ToolUseContent(type="tool_use", id="u1", name="file_operations",
                              input={"operation": "replace_string", "path": "answer.txt",
                                     "old_string": "41", "new_string": "42"})],
        [types.TextContent(type="text", text="Fixed by the Python client's model.")],
    ]

    async def sample(_context, params: types.CreateMessageRequestParams):
        asked.append(params)
        content = replies.pop(0) if replies else [types.TextContent(type="text", text="(no more)")]
        stop = "toolUse" if content[0].type == "tool_use" else "endTurn"
        return types.CreateMessageResultWithTools(role="assistant", content=content, model="py-script", stopReason=stop)

    tools = types.SamplingCapability(tools=types.SamplingToolsCapability())
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, sampling_callback=sample, sampling_capabilities=tools) as session:
            await session.initialize()
            listed = {tool.name: tool for tool in (await session.list_tools()).tools}
            operations = listed["terminal_operations"].inputSchema["properties"]["operation"]["enum"]
            check("delegate" in operations, "delegate is listed for a client that samples with tools")
            created = await session.experimental.call_tool_as_task(
                "terminal_operations", {"operation": "delegate", "task": "Fix answer.txt: it must say 42."})
            result = await session.experimental.get_task_result(created.task.taskId, types.CallToolResult)
            text = "".join(getattr(block, "text", "") for block in result.content)
            check("Fixed by the Python client's model." in text and not result.isError,
                  f"the delegated task's result has the sub-agent's answer ({text[:80]!r})")
            check((root / "answer.txt").read_text() == "answer = 42\n", "the sub-agent's edit landed")
            check(len(asked) == 2 and bool(asked[0].tools), f"two sampling requests, with tools ({len(asked)})")
            if len(asked) == 2:
                last = asked[1].messages[-1].content
                blocks = last if isinstance(last, list) else [last]
                check(any(getattr(b, "type", "") == "tool_result" and b.toolUseId == "u1" for b in blocks),
                      "the second request carries the tool's result")


def main() -> int:
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/toolbelt-mcp")
    with tempfile.TemporaryDirectory(prefix="toolbelt-py-tasks-") as scratch:
        asyncio.run(asyncio.wait_for(run(binary, Path(scratch)), 120))
        asyncio.run(asyncio.wait_for(delegate(binary, Path(scratch)), 60))
    print(f"python tasks: {len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
