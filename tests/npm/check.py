#!/usr/bin/env python3
"""CI check of the npm packages that `npm/pack.sh OUT_DIR` wrote: they install offline from the
tarballs, `npx -y toolbelt-mcp serve` works under the official Python MCP SDK client, signals
sent to the launcher (or to npx) reach the server and leave no process behind, exit codes and
signals come back through the launcher, and a missing platform package is a clear error.

Usage: python3 tests/npm/check.py OUT_DIR
"""

import asyncio
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

OUT = os.path.abspath(sys.argv[1])
VERSION = json.load(open(os.path.join(os.path.dirname(__file__), "../../npm/toolbelt-mcp/package.json")))["version"]
LAUNCHER_TGZ = os.path.join(OUT, f"toolbelt-mcp-{VERSION}.tgz")
PLATFORM_TGZ = [t for t in glob.glob(os.path.join(OUT, f"toolbelt-mcp-*-{VERSION}.tgz"))]
TMP = tempfile.mkdtemp(prefix="toolbelt-npm-")
# Offline, with a private cache: everything must come from the tarballs.
ENV = dict(
    os.environ,
    npm_config_offline="true",
    npm_config_cache=os.path.join(TMP, "cache"),
    npm_config_audit="false",
    npm_config_fund="false",
    npm_config_update_notifier="false",
)
for name in ("TOOLBELT_ROOT", "TOOLBELT_STATE_DIR", "RUST_LOG"):
    ENV.pop(name, None)
ENV["XDG_CONFIG_HOME"] = os.path.join(TMP, "config")
ENV["XDG_STATE_HOME"] = os.path.join(TMP, "state")

failures = []
passed = 0


def field(obj, *names):
    """The first of `names` that `obj` has (the SDK's field names changed case across versions)."""
    for name in names:
        if hasattr(obj, name):
            return getattr(obj, name)
    return None


def check(name, ok, detail=""):
    global passed
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else f": {detail}"), flush=True)
    if ok:
        passed += 1
    else:
        failures.append(name)


def install(prefix, tarballs, *extra):
    os.makedirs(prefix, exist_ok=True)
    return subprocess.run(["npm", "install", "--prefix", prefix, *extra, *tarballs], env=ENV, capture_output=True, text=True)


def processes_naming(needle):
    """Pids of live processes whose command line holds `needle`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle.encode() in cmdline and state != "Z":
            found.append(int(pid))
    return found


def wait_gone(needle, secs=10):
    deadline = time.time() + secs
    while time.time() < deadline and processes_naming(needle):
        time.sleep(0.05)
    return processes_naming(needle)


def workspace(name):
    root = os.path.join(TMP, name)
    os.makedirs(root)
    with open(os.path.join(root, "hello.txt"), "w") as f:
        f.write("hello from npm\n")
    return root


def example_npx_args(root):
    """The npx config of mcp.json.example, pointed at `root`."""
    with open(os.path.join(os.path.dirname(__file__), "../../mcp.json.example")) as f:
        servers = json.load(f)["mcpServers"]
    config = next(s for s in servers.values() if s.get("command") == "npx")
    return [a.replace("/absolute/path/to/your/project", root) for a in config["args"]]


async def mcp_session(prefix, root):
    # The npx config of mcp.json.example, as a host would run it.
    params = StdioServerParameters(command="npx", args=example_npx_args(root), env=ENV, cwd=prefix)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            info = field(init, "server_info", "serverInfo")
            check("npx: initialize", info.name == "toolbelt-mcp" and info.version == VERSION, info)
            tools = await session.list_tools()
            names = sorted(t.name for t in tools.tools)
            check("npx: tools/list", names == ["file_operations", "memory_operations", "terminal_operations", "todo_operations"], names)
            result = await session.call_tool("file_operations", {"operation": "read_file", "path": "hello.txt"})
            text = result.content[0].text
            check("npx: read_file", not field(result, "is_error", "isError") and "hello from npm" in text, text)


def started_server(command, root, cwd):
    """Starts `command` (a launcher) serving `root`, and waits for its initialize answer."""
    proc = subprocess.Popen(command + ["serve", "--root", root], cwd=cwd, env=ENV, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "npm-check", "version": "0"}}}
    proc.stdin.write((json.dumps(init) + "\n").encode())
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    assert answer["result"]["serverInfo"]["name"] == "toolbelt-mcp", answer
    return proc


def stops_on_signal(name, command, sig, prefix, exit_code):
    """Starts a server through `command`, sends it `sig`, and checks that everything ends (with
    `exit_code`, unless it is None)."""
    root = workspace(name.replace(":", "").replace(" ", "-"))
    proc = started_server(command, root, prefix)
    proc.send_signal(sig)
    code = proc.wait(timeout=20)
    left = wait_gone(root)
    ok = not left and (exit_code is None or code == exit_code)
    check(f"{name} stops the server, no process left", ok, f"exit {code}, left {left}")


def main():
    check("pack: two tarballs", os.path.exists(LAUNCHER_TGZ) and len(PLATFORM_TGZ) == 1, os.listdir(OUT))
    prefix = os.path.join(TMP, "prefix")
    done = install(prefix, [LAUNCHER_TGZ, *PLATFORM_TGZ])
    check("npm install offline from the tarballs", done.returncode == 0, done.stderr)
    launcher = [os.path.join(prefix, "node_modules", ".bin", "toolbelt-mcp")]

    version = subprocess.run(["npx", "-y", "toolbelt-mcp", "--version"], cwd=prefix, env=ENV, capture_output=True, text=True)
    check("npx: --version", version.stdout.strip() == f"toolbelt-mcp {VERSION}", version)
    doctor = subprocess.run(["npx", "-y", "toolbelt-mcp", "doctor", "--root", prefix], cwd=prefix, env=ENV, capture_output=True, text=True)
    launched = next((l for l in doctor.stdout.splitlines() if l.startswith("launched by:")), "")
    check("npx: doctor names the npm launcher", f"npm launcher toolbelt-mcp@{VERSION}" in launched and "toolbelt-mcp-" in launched, doctor.stdout + doctor.stderr)

    asyncio.run(mcp_session(prefix, workspace("mcp")))

    # Signals reach the server: it shuts down, the launcher passes its exit code 0 on, and no
    # process is left. SIGINT off a terminal (a host's pipes) is forwarded too. npx itself dies
    # of SIGTERM; the launcher then sees it was orphaned and stops the server.
    stops_on_signal("launcher: SIGTERM", launcher, signal.SIGTERM, prefix, exit_code=0)
    stops_on_signal("launcher: SIGINT off a terminal", launcher, signal.SIGINT, prefix, exit_code=0)
    stops_on_signal("npx: SIGTERM", ["npx", "-y", "toolbelt-mcp"], signal.SIGTERM, prefix, exit_code=None)

    # A server killed by a signal: the launcher dies of the same signal.
    root = workspace("kill-server")
    proc = started_server(launcher, root, prefix)
    servers = [p for p in processes_naming(root) if p != proc.pid]
    for pid in servers:
        os.kill(pid, signal.SIGKILL)
    code = proc.wait(timeout=20)
    check("launcher: a server killed by SIGKILL gives the same signal back", code == -signal.SIGKILL and servers, f"exit {code}, servers {servers}")

    # Exit codes come back: a usage error is 2, a failed agent setup is 1.
    usage = subprocess.run(launcher + ["doctor", "--no-such-flag"], cwd=prefix, env=ENV, capture_output=True, text=True)
    check("launcher: exit code 2 of a usage error", usage.returncode == 2 and "--no-such-flag" in usage.stderr, usage)
    agent_env = {k: v for k, v in ENV.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    agent = subprocess.run(launcher + ["agent", "-p", "hi"], cwd=prefix, env=agent_env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    check("launcher: exit code 1 of an agent without a provider", agent.returncode == 1 and "no model provider" in agent.stderr, agent)

    # Without the platform package: a clear error naming it.
    bare = os.path.join(TMP, "bare")
    done = install(bare, [LAUNCHER_TGZ], "--omit=optional")
    check("npm install of the launcher alone", done.returncode == 0, done.stderr)
    missing = subprocess.run([os.path.join(bare, "node_modules", ".bin", "toolbelt-mcp"), "--version"], env=ENV, capture_output=True, text=True)
    platform_pkg = os.path.basename(PLATFORM_TGZ[0]).rsplit("-", 1)[0] if PLATFORM_TGZ else "?"
    check("launcher: a missing platform package is named", missing.returncode == 1 and f"`{platform_pkg}`" in missing.stderr and "--omit=optional" in missing.stderr, missing)

    print(f"{passed} passed, {len(failures)} failed" + (f": {', '.join(failures)}" if failures else ""))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    try:
        main()
    finally:
        # The prefixes, the npm cache and the servers' state: this run's own temp dir.
        shutil.rmtree(TMP, ignore_errors=True)
