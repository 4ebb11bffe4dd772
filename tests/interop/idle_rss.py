#!/usr/bin/env python3
"""Idle memory check: the resident set of `BINARY serve` after initialize and `tools/list`.

Usage:
    python3 tests/interop/idle_rss.py BINARY [MAX_MIB]

Starts the server in a temporary workspace, speaks the handshake and `tools/list` over stdio,
waits half a second, and reads its resident set from /proc (Linux). Prints the total and its
largest parts (the binary's code, its other segments, the heap), the median of five starts,
and exits 1 when that median is over MAX_MIB (default 8): the packaged binary keeps its
start-up code together (npm/link-ordered.py; the `release` build too, through
.cargo/config.toml), and a stale layout shows up here.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "idle-rss", "version": "1"}}


def resident(pid: int, binary: str) -> tuple[int, int]:
    """The process's resident KiB, and the part of it that is the binary's code."""
    total = code = 0
    mapping = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if not fields[0].endswith(":"):
            mapping = line
        elif fields[0] == "Rss:":
            kib = int(fields[1])
            total += kib
            if " r-xp " in mapping and mapping.endswith(binary):
                code += kib
    return total, code


def one_start(binary: str, workspace: str) -> tuple[int, int]:
    """One start of `binary` (an absolute path: it runs in `workspace`): resident and code KiB."""
    server = subprocess.Popen(
        [binary, "serve", "--root", workspace],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=workspace,
        text=True,
    )
    assert server.stdin and server.stdout
    try:
        for ident, method in ((1, "initialize"), (2, "tools/list")):
            params = INIT if method == "initialize" else {}
            server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}) + "\n")
            server.stdin.flush()
            reply = json.loads(server.stdout.readline())
            if reply.get("id") != ident or "result" not in reply:
                raise SystemExit(f"idle_rss: unexpected reply to {method}: {reply}")
            if method == "initialize":
                server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        time.sleep(0.5)
        return resident(server.pid, binary)
    finally:
        server.stdin.close()
        server.wait(timeout=10)


def main(binary: str, max_mib: float) -> int:
    # The server runs in its workspace: a path relative to here must not be read from there.
    found = Path(binary).resolve()
    if not found.is_file():
        print(f"idle_rss: no binary at `{binary}`: build it first (see .ci/run)", file=sys.stderr)
        return 2
    binary = str(found)
    with tempfile.TemporaryDirectory(prefix="toolbelt-idle-") as workspace:
        starts = [one_start(binary, workspace) for _ in range(5)]
    total = statistics.median(kib for kib, _ in starts) / 1024
    code = statistics.median(kib for _, kib in starts) / 1024
    print(f"idle RSS after tools/list: {total:.1f} MiB (of it the binary's code {code:.1f} MiB), median of 5; limit {max_mib} MiB")
    if total > max_mib:
        print(f"idle_rss: FAIL: {total:.1f} MiB > {max_mib} MiB", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) == 3 else 8.0))
