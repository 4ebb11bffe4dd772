#!/usr/bin/env python3
"""Smoke test of the Linux arm64 build under qemu user-mode emulation, by the official Python SDK.

Usage:
    python3 tests/cross/qemu_smoke.py PATH_TO_aarch64_toolbelt-mcp

Needs `qemu-aarch64` (Debian's `qemu-user`). qemu runs the static arm64 binary on this x86-64
machine but implements no Landlock, so the server must say commands cannot be confined and
refuse them (never run them unconfined), while everything that needs no command sandbox works:
initialize, tools/list, reads, writes checked on disk, escapes refused (qemu 7.2 has no
`openat2`, so this also runs the server's name-by-name fallback for real), todo and memory
(SQLite, built for arm64 by zig). Everything happens in a temp dir the script owns. Prints one
line per check, ends with `N passed, M failed`; exit status 1 if any failed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from sdk_checks import check, failed, report, run_smoke, text


async def smoke(binary: Path, tmp: Path) -> None:
    ws = tmp / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "a.txt").write_text("hello arm64\n")
    (ws / "src" / "lib.rs").write_text("fn one() {}\n")
    (tmp / "outside.txt").write_text("secret\n")
    (ws / "out").symlink_to(tmp)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp),
           "XDG_STATE_HOME": str(tmp / "state"), "XDG_CONFIG_HOME": str(tmp / "config")}
    params = StdioServerParameters(command="qemu-aarch64", args=[str(binary), "serve", "--root", str(ws)], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check("initialize under qemu-aarch64", (getattr(init, "server_info", None) or getattr(init, "serverInfo")).name == "toolbelt-mcp")
            tools = sorted(t.name for t in (await session.list_tools()).tools)
            check("tools/list: the four tools",
                  tools == ["file_operations", "memory_operations", "terminal_operations", "todo_operations"], f"{tools}")

            async def files(**args: Any) -> Any:
                return await session.call_tool("file_operations", args)

            res = await files(operation="read_file", path="a.txt")
            check("read_file", not failed(res) and "hello arm64" in text(res), text(res)[:200])
            res = await files(operation="grep_search", pattern="fn one")
            check("grep_search", not failed(res) and "lib.rs" in text(res), text(res)[:200])
            res = await files(operation="replace_string", path="a.txt", old_string="arm64", new_string="aarch64")
            check("replace_string, checked on disk", not failed(res) and (ws / "a.txt").read_text() == "hello aarch64\n",
                  text(res)[:200])
            res = await files(operation="create_file", path="../outside.txt", content="pwned\n", overwrite=True)
            check("a write outside the root is refused", failed(res) and (tmp / "outside.txt").read_text() == "secret\n",
                  text(res)[:200])
            # qemu 7.2 has no `openat2`: the server walks name by name instead, and a symlink
            # on the way must still be refused.
            res = await files(operation="read_file", path="out/outside.txt")
            check("a read through a symlink out of the root is refused (no openat2: the name-by-name walk)",
                  failed(res) and "secret" not in text(res), text(res)[:200])
            res = await session.call_tool("todo_operations", {"operation": "write", "todos": [{"title": "Port", "status": "in_progress"}]})
            check("todo write (SQLite)", not failed(res) and "Port" in text(res), text(res)[:200])
            res = await session.call_tool("memory_operations", {"operation": "store", "content": "qemu runs the arm64 build."})
            check("memory store", not failed(res), text(res)[:200])
            res = await session.call_tool("memory_operations", {"operation": "search", "query": "arm64"})
            check("memory search", not failed(res) and "qemu runs" in text(res), text(res)[:200])
            res = await session.call_tool("terminal_operations", {"operation": "run_command", "command": "touch made_by_command"})
            check("without Landlock (qemu has none) a command is refused, not run unconfined",
                  failed(res) and "Landlock" in text(res) and not (ws / "made_by_command").exists(), text(res)[:300])


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = Path(sys.argv[1]).resolve()
    if shutil.which("qemu-aarch64") is None:
        print("FAIL qemu-aarch64 is needed (apt-get install qemu-user)")
        return 1
    version = subprocess.run(["qemu-aarch64", str(binary), "--version"], capture_output=True, text=True)
    check("--version under qemu-aarch64", version.returncode == 0 and version.stdout.startswith("toolbelt-mcp "),
          version.stdout + version.stderr)
    with tempfile.TemporaryDirectory(prefix="toolbelt-qemu-") as tmp_name:
        run_smoke(smoke, binary, Path(tmp_name), timeout_env="QEMU_SMOKE_TIMEOUT_S", default_s=120)
    return report()


if __name__ == "__main__":
    sys.exit(main())
