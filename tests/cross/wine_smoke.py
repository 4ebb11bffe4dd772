#!/usr/bin/env python3
"""Wine smoke test: the Windows build of toolbelt-mcp driven by the official Python MCP SDK.

Usage:
    python3 tests/cross/wine_smoke.py PATH_TO_toolbelt-mcp.exe

Needs `wine` (Debian's `wine` package) and `x86_64-w64-mingw32-gcc` (`mingw-w64`): Wine 8 lacks
`bcryptprimitives.dll`, which Rust's std imports for `ProcessPrng`, so the script builds the
few-line shim in `tests/cross/wine/` and puts it beside a copy of the binary, as Windows 10 and
later have the DLL. Everything happens in a temp dir the script owns, with a Wine prefix of its
own there (its first start takes a while). Windows paths: the workspace is `Z:\\...` (Wine's view
of the Unix tree).

The server is started as the Windows config of mcp.json.example (`toolbelt-windows`) says. Checks: initialize and tools/list (the terminal tool says it has no sandbox on Windows); the four
read operations; create, replace (CRLF kept), multi_replace, apply_patch, rename, delete and
undo, each checked on disk; todo and memory (SQLite); a read-only command runs and its output
comes back, one that is not read-only is refused when the client cannot be asked and runs when
a client that can be asked approves it; no PTY operations are offered; and the
path escapes a Windows agent could try: `..\\`, an absolute path, the `\\\\?\\` and UNC forms,
another drive, a case-changed root (inside: allowed), alternate data streams, reserved device
names. Prints one line per check, ends with `N passed, M failed`; exit status 1 if any failed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp import types
from mcp.client.stdio import stdio_client
from sdk_checks import check, failed, field, report, run_smoke, text


HERE = Path(__file__).resolve().parent
def windows_path(path: Path) -> str:
    """Wine's name for a Unix path: the `Z:` drive maps `/`."""
    return "Z:" + str(path).replace("/", "\\")


def example_params(name: str, exe: Path, ws: Path, env: dict[str, str]) -> StdioServerParameters:
    """The Windows config `name` of mcp.json.example, with its placeholders pointed at `exe` and
    `ws`, started under Wine as Claude Desktop on Windows would start it."""
    with open(HERE / "../../mcp.json.example") as f:
        config = json.load(f)["mcpServers"][name]
    places = {"C:\\absolute\\path\\to\\toolbelt-mcp.exe": windows_path(exe),
              "C:\\absolute\\path\\to\\your\\project": windows_path(ws)}
    command, args = config["command"], config["args"]
    args = [places.get(a, a) for a in args]
    return StdioServerParameters(command="wine", args=[places.get(command, command), *args], env=env)


async def approve(_context: Any, _params: Any) -> types.ElicitResult:
    """A client whose user allows every question once."""
    return types.ElicitResult(action="accept", content={"decision": "allow_once"})


async def asked(params: StdioServerParameters, ws: Path) -> None:
    """A client that can be asked (and approves): a command that is not read-only runs after the
    question, and the PTY operations are not offered at all."""
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=approve) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            operations = field(tools["terminal_operations"], "input_schema", "inputSchema")["properties"]["operation"]["enum"]
            check("no PTY operations on Windows (start_session, send_input not offered)",
                  "start_session" not in operations and "send_input" not in operations and "run_command" in operations,
                  f"{operations}")
            res = await session.call_tool("terminal_operations", {"operation": "run_command", "command": "mkdir made_by_cmd"})
            check("a command that is not read-only runs once the user approves it",
                  not failed(res) and (ws / "made_by_cmd").is_dir(), text(res)[:300])


def build_shim(out: Path) -> None:
    subprocess.run(["x86_64-w64-mingw32-gcc", "-O2", "-shared", "-o", str(out / "bcryptprimitives.dll"),
                    str(HERE / "wine" / "shim.c"), str(HERE / "wine" / "shim.def"), "-ladvapi32"], check=True)


async def smoke(exe: Path, tmp: Path) -> None:
    ws = tmp / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "a.txt").write_text("hello world\n")
    (ws / "src" / "lib.rs").write_text("fn one() {}\nfn two() {}\n")
    (ws / "crlf.txt").write_bytes(b"alpha\r\nbeta\r\n")
    (tmp / "outside.txt").write_text("secret\n")
    # Wine shows a Unix symlink as a link, as Windows shows a directory symlink. (Junctions
    # cannot be made under Wine 8: its `mklink /J` fails.)
    (ws / "link").symlink_to(tmp)
    env = {"WINEDEBUG": "-all", "WINEPREFIX": str(tmp / "prefix"), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "HOME": str(tmp), "DISPLAY": "", "WINEDLLOVERRIDES": "mscoree,mshtml="}
    params = example_params("toolbelt-windows", exe, ws, env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check("initialize under Wine", field(init, "server_info", "serverInfo").name == "toolbelt-mcp")
            tools = {t.name: t for t in (await session.list_tools()).tools}
            check("tools/list: the four tools", sorted(tools) == sorted(
                ["file_operations", "terminal_operations", "todo_operations", "memory_operations"]), f"{sorted(tools)}")
            terminal = tools.get("terminal_operations")
            check("tools/list: the terminal tool says Windows has no sandbox",
                  terminal is not None and "no sandbox" in (terminal.description or ""), terminal and terminal.description)

            async def files(**args: Any) -> Any:
                return await session.call_tool("file_operations", args)

            res = await files(operation="read_file", path="a.txt")
            check("read_file", not failed(res) and "hello world" in text(res), text(res)[:200])
            res = await files(operation="list_dir", path=".")
            check("list_dir", not failed(res) and "a.txt" in text(res) and "src" in text(res), text(res)[:200])
            res = await files(operation="file_search", pattern="**/*.rs")
            check("file_search: Windows separators in results", not failed(res) and "src\\lib.rs" in text(res),
                  text(res)[:200])
            res = await files(operation="grep_search", pattern="fn two")
            check("grep_search", not failed(res) and "lib.rs" in text(res) and "fn two" in text(res), text(res)[:200])

            res = await files(operation="create_file", path="new\\made.txt", content="made\n", create_parents=True)
            check("create_file (with a parent dir)", not failed(res) and (ws / "new" / "made.txt").read_text() == "made\n",
                  text(res)[:200])
            res = await files(operation="replace_string", path="crlf.txt", old_string="beta", new_string="gamma")
            check("replace_string keeps CRLF", not failed(res)
                  and (ws / "crlf.txt").read_bytes() == b"alpha\r\ngamma\r\n", text(res)[:200])
            res = await files(operation="multi_replace", path="src\\lib.rs",
                              edits=[{"old_string": "one", "new_string": "uno"}, {"old_string": "two", "new_string": "dos"}])
            check("multi_replace", not failed(res) and (ws / "src" / "lib.rs").read_text() == "fn uno() {}\nfn dos() {}\n",
                  text(res)[:300])
            patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-hello world\n+hello wine\n*** End Patch\n"
            res = await files(operation="apply_patch", patch=patch)
            check("apply_patch", not failed(res) and (ws / "a.txt").read_text() == "hello wine\n", text(res)[:300])
            res = await files(operation="rename_file", path="new\\made.txt", destination="made2.txt")
            check("rename_file", not failed(res) and (ws / "made2.txt").exists() and not (ws / "new" / "made.txt").exists(),
                  text(res)[:200])
            res = await files(operation="rename_file", path="made2.txt", destination="crlf.txt")
            check("rename_file never replaces silently", failed(res) and (ws / "made2.txt").exists(), text(res)[:200])
            res = await files(operation="delete_file", path="made2.txt")
            check("delete_file", not failed(res) and not (ws / "made2.txt").exists(), text(res)[:200])
            res = await files(operation="undo")
            check("undo brings the deleted file back", not failed(res) and (ws / "made2.txt").exists(), text(res)[:300])

            # Escapes: each must fail and leave the outside untouched.
            escapes = {
                "..\\ out of the root": "..\\outside.txt",
                "an absolute path outside": windows_path(tmp / "outside.txt"),
                "the \\\\?\\ form": "\\\\?\\" + windows_path(tmp / "outside.txt"),
                "a UNC path": "\\\\localhost\\share\\outside.txt",
                "another drive": "C:\\windows\\win.ini",
                "a drive-relative path": "Z:outside.txt",
            }
            for name, path in escapes.items():
                res = await files(operation="read_file", path=path)
                check(f"read refused: {name}", failed(res) and "secret" not in text(res), text(res)[:200])
                res = await files(operation="create_file", path=path, content="pwned\n", overwrite=True)
                check(f"write refused: {name}", failed(res), text(res)[:200])
            res = await files(operation="read_file", path="link\\outside.txt")
            check("read refused: through a symlink in the root to outside", failed(res) and "secret" not in text(res),
                  text(res)[:200])
            res = await files(operation="create_file", path="link\\planted.txt", content="x\n")
            check("write refused: through a symlink in the root to outside",
                  failed(res) and not (tmp / "planted.txt").exists(), text(res)[:200])
            res = await files(operation="list_dir", path="link")
            check("list refused: a symlink in the root to outside", failed(res) and "outside.txt" not in text(res),
                  text(res)[:200])
            check("the outside file is untouched", (tmp / "outside.txt").read_text() == "secret\n")
            res = await files(operation="create_file", path="a.txt:hidden", content="x\n")
            check("write refused: an alternate data stream", failed(res), text(res)[:200])
            for device in ["CON", "NUL", "aux.txt", "src\\COM1"]:
                res = await files(operation="create_file", path=device, content="x\n")
                check(f"write refused: the reserved name `{device}`", failed(res), text(res)[:200])
            res = await files(operation="read_file", path=windows_path(ws).upper() + "\\A.TXT")
            check("a case-changed path inside the root reads", not failed(res) and "hello wine" in text(res),
                  text(res)[:200])

            res = await session.call_tool("todo_operations", {"operation": "write", "todos": [
                {"title": "Port", "status": "completed"}, {"title": "Test", "status": "in_progress"}]})
            check("todo write (SQLite)", not failed(res) and "Test" in text(res), text(res)[:200])
            res = await session.call_tool("memory_operations", {"operation": "store", "content": "Wine runs the build."})
            check("memory store", not failed(res), text(res)[:200])
            res = await session.call_tool("memory_operations", {"operation": "search", "query": "wine"})
            check("memory search", not failed(res) and "runs the build" in text(res), text(res)[:200])

            res = await session.call_tool("terminal_operations", {"operation": "run_command", "command": "echo hi there"})
            check("a read-only command runs through cmd.exe", not failed(res) and "hi there" in text(res), text(res)[:300])
            res = await session.call_tool("terminal_operations", {"operation": "run_command", "command": "mkdir made_by_cmd"})
            check("a command that is not read-only is refused when the client cannot be asked",
                  failed(res) and not (ws / "made_by_cmd").exists(), text(res)[:300])
            state = list((tmp / "prefix" / "drive_c" / "users").glob("*/AppData/Local/toolbelt-mcp"))
            check("state (todos, memories) lives in %LOCALAPPDATA%\\toolbelt-mcp", len(state) == 1,
                  f"{list((tmp / 'prefix' / 'drive_c' / 'users').glob('*/AppData/Local/*'))}")
    await asked(params, ws)


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    exe = Path(sys.argv[1]).resolve()
    if shutil.which("wine") is None or shutil.which("x86_64-w64-mingw32-gcc") is None:
        print("FAIL wine and mingw-w64 are needed (apt-get install wine mingw-w64)")
        return 1
    with tempfile.TemporaryDirectory(prefix="toolbelt-wine-") as tmp_name:
        tmp = Path(tmp_name)
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        shutil.copy2(exe, bin_dir / exe.name)
        build_shim(bin_dir)
        run_smoke(smoke, bin_dir / exe.name, tmp, timeout_env="WINE_SMOKE_TIMEOUT_S", default_s=300)
        subprocess.run(["wineserver", "-k"], env={**os.environ, "WINEPREFIX": str(tmp / "prefix")}, check=False)
    return report()


if __name__ == "__main__":
    sys.exit(main())
