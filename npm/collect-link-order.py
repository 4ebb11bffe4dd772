#!/usr/bin/env python3
"""Regenerates `npm/link-order.txt`: the functions toolbelt-mcp runs, start-up first.

Usage (Linux, valgrind installed): link the packaged (musl) build with `npm/link-ordered.py`
keeping its symbols, then collect from that binary (and any other build's, e.g. glibc's):

    TOOLBELT_KEEP_SYMBOLS=/tmp/toolbelt-symbols \
    CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_LINKER="$PWD/npm/link-ordered.py" \
        cargo build --profile dist --locked --target x86_64-unknown-linux-musl
    python3 npm/collect-link-order.py /tmp/toolbelt-symbols

With `--merge`, the functions already listed are kept (each in its part, start-up or session) and
those the given binaries run are added: how the list covers a build that is not at hand, e.g. the
glibc `release` build collected with the musl one's names kept (`.cargo/config.toml` links
`cargo build --release` on x86-64 Linux with the same layout).

(`touch src/main.rs` first if that build is up to date: the program must be linked again.)
An unstripped build works as well (`CARGO_PROFILE_DIST_STRIP=false`), at the cost of
rebuilding every crate.

It runs each binary (which must keep its symbols) under valgrind's callgrind twice, in a
throwaway workspace under a temporary directory: once to start, initialize and answer
`tools/list` (what an idle server has run), and once through a short session of every tool
(reads, searches, an edit, todos, memories, a sandboxed command). The list names the functions
the first runs executed, then those only the second did, as `nm -C` shows them (no hashes),
for `npm/link-ordered.py` to lay them out together at link time; each build's own C (its libc
and allocator in the static one) comes from its own runs. Commit the new list.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = HERE / "link-order.txt"
sys.path.insert(0, str(HERE))
from importlib import import_module  # noqa: E402

symbols = import_module("link-ordered").symbols

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "collect", "version": "1"}}


def file_op(operation: str, **args: object) -> tuple[str, dict]:
    return "file_operations", {"operation": operation, **args}


# A short session of every tool, as an agent would make one.
SESSION = [
    file_op("read_file", path="src/lib.rs"),
    file_op("list_dir", path="."),
    file_op("list_dir", path="src", depth=2),
    file_op("file_search", pattern="*.rs"),
    file_op("grep_search", pattern="fn \\w+", output="content"),
    file_op("create_file", path="notes.md", content="# notes\n"),
    file_op("replace_string", path="src/lib.rs", old_string="one", new_string="two"),
    file_op("changes"),
    ("terminal_operations", {"operation": "run_command", "command": "echo hello"}),
    ("todo_operations", {"operation": "add", "todos": [{"title": "ship it"}]}),
    ("todo_operations", {"operation": "read"}),
    ("memory_operations", {"operation": "store", "content": "the build uses cargo"}),
    ("memory_operations", {"operation": "search", "query": "cargo"}),
]


def drive(binary: str, workspace: Path, out: Path, calls: list[tuple[str, dict]]) -> None:
    """Runs `binary serve` under callgrind through a handshake, `tools/list` and `calls`."""
    valgrind = ["valgrind", "--tool=callgrind", "--demangle=no", "--trace-children=yes", f"--callgrind-out-file={out}.%p"]
    server = subprocess.Popen(
        [*valgrind, binary, "serve", "--root", str(workspace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=workspace,
        text=True,
    )
    assert server.stdin and server.stdout

    def request(ident: int, method: str, params: dict) -> dict:
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}) + "\n")
        server.stdin.flush()
        while True:
            message = json.loads(server.stdout.readline())
            if message.get("id") == ident:
                return message

    request(1, "initialize", INIT)
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    request(2, "tools/list", {})
    for ident, (tool, arguments) in enumerate(calls, start=3):
        reply = request(ident, "tools/call", {"name": tool, "arguments": arguments})
        if "error" in reply:
            raise SystemExit(f"npm/collect-link-order.py: {tool} {arguments} failed: {reply['error']}")
    server.stdin.close()
    server.wait(timeout=300)


def executed(out: Path, binary: str) -> list[str]:
    """The mangled names of the functions in `binary` that the callgrind outputs `out.*` ran."""
    name = Path(binary).name
    found: list[str] = []
    seen: set[str] = set()
    for part in sorted(out.parent.glob(out.name + ".*")):
        objects: dict[str, str] = {}
        functions: dict[str, str] = {}
        current = ""
        for line in part.read_text(errors="replace").splitlines():
            if m := re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line):
                kind, ident, text = m.groups()
                objects.setdefault(ident, text or "")
                current = objects[ident] if kind == "ob" else current
            elif m := re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line):
                kind, ident, text = m.groups()
                functions.setdefault(ident, text or "")
                symbol = functions[ident].split("'")[0]
                if kind == "fn" and Path(current).name == name and symbol not in seen:
                    seen.add(symbol)
                    found.append(symbol)
    return found


def collect(binary: str) -> tuple[list[str], list[str]]:
    """The functions `binary` runs to start, and in the session, by their `nm -C` names."""
    by_name = symbols(binary)
    if not by_name:
        raise SystemExit(f"npm/collect-link-order.py: `{binary}` has no symbols: build it unstripped")
    shown = {raw: name for name, raws in by_name.items() for raw in raws}
    groups = []
    with tempfile.TemporaryDirectory(prefix="toolbelt-collect-") as scratch:
        for label, calls in (("start", []), ("session", SESSION)):
            workspace = Path(scratch) / label / "ws"
            (workspace / "src").mkdir(parents=True)
            (workspace / "src" / "lib.rs").write_text("pub fn one() -> u32 {\n    1\n}\n")
            (workspace / "README.md").write_text("# demo\n")
            (workspace / ".gitignore").write_text("target/\n")
            out = Path(scratch) / label / "callgrind.out"
            drive(binary, workspace, out, calls)
            groups.append([shown[raw] for raw in executed(out, binary) if raw in shown])
    return groups[0], groups[1]


def listed_before() -> tuple[list[str], list[str]]:
    """The list as it stands: its start-up part (the count its header gives) and the rest."""
    lines = ORDER.read_text(encoding="utf-8").splitlines()
    names = [line for line in lines if line and not line.startswith("#")]
    counts = [re.match(r"^# (\d+) run to start", line) for line in lines]
    first = next((int(m.group(1)) for m in counts if m), 0)
    return names[:first], names[first:]


def main(arguments: list[str]) -> int:
    merge = "--merge" in arguments
    binaries = [argument for argument in arguments if argument != "--merge"]
    start, session = listed_before() if merge else ([], [])
    for binary in binaries:
        started, used = collect(binary)
        start += started
        session += used
    first = list(dict.fromkeys(start))
    listed = first + [name for name in dict.fromkeys(session) if name not in set(first)]
    header = [
        "# Functions toolbelt-mcp runs, start-up first (npm/link-ordered.py lays them out together).",
        "# Generated by npm/collect-link-order.py; do not edit by hand.",
        f"# {len(first)} run to start and answer tools/list, then {len(listed) - len(first)} more in a session.",
    ]
    ORDER.write_text("\n".join(header + listed) + "\n", encoding="utf-8")
    print(f"{ORDER}: {len(listed)} functions ({len(first)} at start-up)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    if len([argument for argument in sys.argv[1:] if argument != "--merge"]) < 1:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
