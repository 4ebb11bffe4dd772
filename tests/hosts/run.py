#!/usr/bin/env python3
"""Real hosts against toolbelt-mcp: what does the model get back from our tools?

    python3 tests/hosts/run.py [BINARY] [--hosts NAME,...] [--transports stdio,http] [--keep]

Installs pinned versions of real coding hosts from npm (each into a directory of its own
under the cache dir), points each at the scripted model endpoint of `model.py` on loopback,
and has the "model" run one task through our server, over stdio and over streamable HTTP:
read a file, grep, edit, `git diff`, write todos, store and search a memory, read a missing
file, read a 2 MB file. Then it checks what the host sent back to the model in its next
request, for every step: the file's text, the matching line with its number, the diff, the
command's output, the todo titles, the memory, the error text, and a cut (not offloaded)
large result. One table row per host × transport × step, PASS or FAIL with what the model
actually saw; exit 1 on any failure.

When no host can be installed (no registry and nothing in the cache), it says SKIP and exits
0. A host that cannot be installed while the registry answers is a failure.

BINARY defaults to `$TOOLBELT_BIN`, else `target/release/toolbelt-mcp`. The cache dir is
`$TOOLBELT_HOSTS_CACHE`, else `$XDG_CACHE_HOME/toolbelt-hosts` (`~/.cache/toolbelt-hosts`).
Every run gets a throwaway HOME, workspace and state dir under a temp dir; every program is
pointed at loopback (the model endpoint, our HTTP server) and any other traffic at a dead
proxy on 127.0.0.1:9.

Python 3.11 standard library only (plus node and npm, and git).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SERVER = "toolbelt"
MARKER = "HOSTCHECK-TASK"
HOST_TIMEOUT_S = 120
INSTALL_TIMEOUT_S = 600
DEAD_PROXY = "http://127.0.0.1:9"

# --------------------------------------------------------------------------------------------
# Hosts
# --------------------------------------------------------------------------------------------


@dataclass
class Host:
    key: str  # what --hosts names
    package: str
    version: str
    bin: str  # the command in node_modules/.bin
    kind: str  # "claude", "codex", "qwen"
    model: str | None = None  # the model the host is told to use (None: its default)
    # Claude Code only: an `Elicitation` hook answers our server's questions ("allow_once"),
    # the config the README gives for headless runs.
    answers_questions: bool = False
    # Codex only: the thread's sandbox (`sandbox_mode`); Codex sends it to our server with each
    # call, and a `read-only` thread must get read-only tools from us too.
    sandbox: str = "workspace-write"
    # Claude Code only: tool search on (`ENABLE_TOOL_SEARCH`; off by default against an endpoint
    # that is not Anthropic's), so every MCP tool is deferred unless it asks to stay loaded.
    tool_search: bool = False

    @property
    def label(self) -> str:
        return self.key


# Pinned. Claude Code: the version first measured, and the newest 2.1.x on the registry (2.1.332
# on 2026-11-28; since 2.1.330 it defers MCP tools behind ToolSearch when tool search is on). Codex
# CLI: an older version and the newest, the newest three ways: with its default model it works in
# "code mode" (MCP tools are deferred functions of a JavaScript `exec` tool, and the model sees
# what its script prints); with a model it does not know (a local or third-party one) MCP tools are
# plain function tools in a namespace `mcp__toolbelt`; and in a read-only thread. Qwen Code, the
# newest: it defers MCP tools behind `tool_search`.
HOSTS = [
    Host("claude-2.1.197", "@anthropic-ai/claude-code", "2.1.197", "claude", "claude"),
    Host("claude-2.1.332", "@anthropic-ai/claude-code", "2.1.332", "claude", "claude"),
    Host("claude-2.1.332-hook", "@anthropic-ai/claude-code", "2.1.332", "claude", "claude", answers_questions=True),
    Host("claude-2.1.332-search", "@anthropic-ai/claude-code", "2.1.332", "claude", "claude", tool_search=True),
    Host("codex-0.169.0", "@openai/codex", "0.169.0", "codex", "codex"),
    Host("codex-0.171.0", "@openai/codex", "0.171.0", "codex", "codex"),
    Host("codex-0.171.0-fn", "@openai/codex", "0.171.0", "codex", "codex", model=model.MODEL_ID),
    Host("codex-0.171.0-ro", "@openai/codex", "0.171.0", "codex", "codex", model=model.MODEL_ID, sandbox="read-only"),
    Host("qwen-0.24.4", "@qwen-code/qwen-code", "0.24.4", "qwen", "qwen"),
    Host("opencode-1.18.33", "opencode-ai", "1.18.33", "opencode", "opencode"),
    Host("copilot-1.0.102", "@github/copilot", "1.0.102", "copilot", "copilot"),
]


def cache_dir() -> Path:
    if os.environ.get("TOOLBELT_HOSTS_CACHE"):
        return Path(os.environ["TOOLBELT_HOSTS_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "toolbelt-hosts"


def installed_bin(host: Host, cache: Path) -> Path | None:
    """The host's command if this exact version is installed in the cache."""
    d = cache / f"{host.package.replace('/', '+')}@{host.version}"
    exe = d / "node_modules" / ".bin" / host.bin
    pkg = d / "node_modules" / host.package / "package.json"
    try:
        if exe.exists() and json.loads(pkg.read_text())["version"] == host.version:
            return exe
    except (OSError, ValueError, KeyError):
        pass
    return None


def npm_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("npm_config_update_notifier", "false")
    env.setdefault("npm_config_fund", "false")
    env.setdefault("npm_config_audit", "false")
    return env


def registry_reachable() -> bool:
    try:
        r = subprocess.run(["npm", "ping", "--fetch-retries=1", "--fetch-timeout=30000"], capture_output=True,
                           text=True, timeout=90, env=npm_env())
        return r.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def install(host: Host, cache: Path) -> tuple[Path | None, str]:
    """Install the host into its own directory (with its own package.json, so npm puts the
    platform package there and not into some parent). Returns (command, log)."""
    exe = installed_bin(host, cache)
    if exe:
        return exe, "cached"
    d = cache / f"{host.package.replace('/', '+')}@{host.version}"
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    (d / "package.json").write_text(json.dumps({"name": "toolbelt-hosts-cache", "version": "0.0.0",
                                                 "private": True}) + "\n")
    cmd = ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", f"{host.package}@{host.version}"]
    try:
        r = subprocess.run(cmd, cwd=d, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, env=npm_env())
        log = (r.stdout + r.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{' '.join(cmd)}: {exc}"
    exe = installed_bin(host, cache)
    if exe is None:
        return None, f"{' '.join(cmd)} exited {r.returncode}: {log[-2000:]}"
    return exe, "installed"


# --------------------------------------------------------------------------------------------
# The task and its checks
# --------------------------------------------------------------------------------------------

Check = Callable[[str], "tuple[bool, str, int | None]"]  # (ok, what was checked, where it matched)


def contains(needle: str) -> Check:
    def check(text: str) -> tuple[bool, str, int | None]:
        i = text.find(needle)
        return i >= 0, f"has {needle!r}", (i if i >= 0 else None)
    return check


def matches(pattern: str, what: str, flags: int = 0) -> Check:
    rx = re.compile(pattern, flags)

    def check(text: str) -> tuple[bool, str, int | None]:
        m = rx.search(text)
        return m is not None, what, (m.start() if m else None)
    return check


def at_most(n: int) -> Check:
    def check(text: str) -> tuple[bool, str, int | None]:
        return len(text) <= n, f"at most {n:,} chars (got {len(text):,})", None
    return check


def lacks(pattern: str, what: str) -> Check:
    rx = re.compile(pattern, re.I)

    def check(text: str) -> tuple[bool, str, int | None]:
        m = rx.search(text)
        return m is None, what, (m.start() if m else None)
    return check


@dataclass
class TaskStep:
    name: str
    tool: str
    args: dict[str, Any]
    checks: list[Check]
    info: bool = False  # reported, not judged


LIB_RS = """//! Demo crate for the host test.
pub fn greet(name: &str) -> String {
    format!("Hello, {name}!")
}

pub const ANSWER: u32 = 41;
"""
MAIN_RS = """fn main() {
    println!("{} {}", demo::greet("world"), demo::ANSWER);
}
"""
MEMORY = "The deploy script lives in scripts/deploy.sh and needs VAULT_ADDR set."
BIG_LINE = "big line {:06d}: " + "lorem ipsum dolor sit amet " * 3 + "\n"
BIG_BYTES = 2 * 1024 * 1024

# What hosts say when they cut a result themselves or move it out of the model's sight:
# Claude Code (`<persisted-output>` preview, or "exceeds maximum allowed tokens" and a file),
# Qwen Code (the same preview; "[CONTENT TRUNCATED]" head and tail), Codex ("…N tokens truncated…",
# and in code mode "Warning: truncated output").
OFFLOAD = (r"<persisted-output>|Full output saved to|Output has been saved to|exceeds maximum allowed tokens"
           r"|Tool output was too large|\[CONTENT TRUNCATED\]|\d+ tokens truncated|Warning: truncated output")
NOT_CUT_BY_HOST = lacks(OFFLOAD, "not cut or moved to a file by the host")

STEPS = [
    TaskStep("read_file", "file_operations", {"operation": "read_file", "path": "src/lib.rs"}, [
        contains("pub const ANSWER: u32 = 41;"),
        contains("Hello, {name}!"),
    ]),
    TaskStep("list_dir", "file_operations", {"operation": "list_dir", "path": "src"}, [
        contains("main.rs"),
        # lib.rs with its size (text `lib.rs (N B)`, or the JSON entry)
        matches(rf"lib\.rs \({len(LIB_RS.encode())} B\)"
                rf"|\"src/lib\.rs\"[^{{}}]{{0,60}}\"size\"\s*:\s*{len(LIB_RS.encode())}\b",
                "lib.rs with its size"),
    ]),
    TaskStep("grep_search", "file_operations", {"operation": "grep_search", "pattern": "ANSWER"}, [
        contains("src/lib.rs"),
        contains("pub const ANSWER: u32 = 41"),
        # the line number beside the matching line (text `src/lib.rs:6:pub …`, or JSON fields)
        matches(r"\b6\b[^\n]{0,40}pub const ANSWER|pub const ANSWER[^\n]{0,80}\"line(?:_number)?\"\s*:\s*6\b",
                "line number 6 with the matching line"),
    ]),
    TaskStep("replace_string", "file_operations", {
        "operation": "replace_string", "path": "src/lib.rs",
        "old_string": "pub const ANSWER: u32 = 41;", "new_string": "pub const ANSWER: u32 = 42;"}, [
        contains("-pub const ANSWER: u32 = 41;"),
        contains("+pub const ANSWER: u32 = 42;"),
    ]),
    TaskStep("git_diff", "terminal_operations", {"operation": "run_command", "command": "git diff"}, [
        contains("diff --git a/src/lib.rs b/src/lib.rs"),
        contains("-pub const ANSWER: u32 = 41;"),
        contains("+pub const ANSWER: u32 = 42;"),
    ]),
    TaskStep("todo_write", "todo_operations", {"operation": "write", "todos": [
        {"title": "Read the greeting code", "status": "completed"},
        {"title": "Bump the answer to 42", "status": "in_progress"},
        {"title": "Run the tests", "status": "not_started"}]}, [
        contains("Read the greeting code"),
        contains("Bump the answer to 42"),
        contains("Run the tests"),
    ]),
    TaskStep("memory_store", "memory_operations", {
        "operation": "store", "content": MEMORY, "title": "Deploy how-to", "tags": ["deploy"]}, [
        matches(r"(?i)\"id\"\s*:\s*\d+|memory\s+#?\d+|\bid\s*[:=#]?\s*\d+", "the new memory's id"),
    ]),
    TaskStep("memory_search", "memory_operations", {"operation": "search", "query": "deploy script"}, [
        contains("Deploy how-to"),
        contains("VAULT_ADDR"),
    ]),
    TaskStep("read_missing", "file_operations", {"operation": "read_file", "path": "missing.txt"}, [
        contains("missing.txt"),
        matches(r"(?i)does not exist|not found|no such file", "says the file does not exist"),
    ]),
    TaskStep("read_2mb", "file_operations", {"operation": "read_file", "path": "big.txt"}, [
        contains("big line 000001: lorem ipsum"),
        matches(r"(?i)truncat|budget|\bcut\b", "says it was cut"),
        matches(r"(?i)offset", "says where to go on (offset)"),
        at_most(125_000),  # our cut: Claude Code's budget is 100,000 (hinted), the others' far less
    ]),
    # A protected path: the server asks the user. A headless host answers without a person
    # (or cannot ask): the model must hear that nobody was asked and how to allow it, never
    # "the user denied it". With Claude Code's `Elicitation` hook the question is answered.
    TaskStep("ask_user", "file_operations", {
        "operation": "create_file", "path": ".git/hooks/pre-commit", "content": "#!/bin/sh\nexit 0\n"}, [
        matches(r"nobody was asked|cannot ask the user", "says nobody was asked"),
        contains("approval_fallback"),
        lacks(r"the user denied it", "does not claim the user denied it"),
    ]),
]

# `ask_user` with a host that answers questions (`answers_questions`): the write is done.
ASK_ANSWERED = [contains(".git/hooks/pre-commit"), matches(r"\bcreated\b", "says the file was created")]

# A host thread that may not write (Codex `read-only`): what our server answers instead. The
# edit and the hook are refused as read-only, and the command sees the file unchanged.
READ_ONLY = {
    "replace_string": [matches(r"read-only", "refused as read-only"),
                       lacks(r"\+pub const ANSWER: u32 = 42;", "does not show the edit as made")],
    "git_diff": [lacks(r"diff --git", "shows no change (nothing was written)")],
    "ask_user": [matches(r"read-only", "refused as read-only")],
}

PROMPT = (f"{MARKER}: with the {SERVER} MCP tools, read src/lib.rs, list src, grep for ANSWER, bump ANSWER to 42, "
          "show `git diff`, write the plan as todos, remember and recall where the deploy script is, "
          "try missing.txt, read big.txt, and add a pre-commit hook.")


def script() -> model.Script:
    return model.Script(steps=[model.Step(s.name, s.tool, s.args) for s in STEPS], marker=MARKER,
                        server=SERVER, final="Done: every step ran.")


def make_workspace(ws: Path) -> None:
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "lib.rs").write_text(LIB_RS)
    (ws / "src" / "main.rs").write_text(MAIN_RS)
    (ws / "README.md").write_text("# demo\n\nA workspace for the host test.\n")
    with open(ws / "big.txt", "w") as f:
        n, i = 0, 0
        while n < BIG_BYTES:
            i += 1
            line = BIG_LINE.format(i)
            f.write(line)
            n += len(line)
    git = ["git", "-c", "user.name=hostcheck", "-c", "user.email=hostcheck@localhost",
           "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "initial"]):
        subprocess.run(git + cmd, cwd=ws, check=True, capture_output=True,
                       env=dict(os.environ, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1"))


# --------------------------------------------------------------------------------------------
# One run: a host, a transport
# --------------------------------------------------------------------------------------------


@dataclass
class StepResult:
    step: str
    ok: bool
    detail: str
    snippet: str
    info: bool = False


@dataclass
class RunResult:
    host: Host
    transport: str
    steps: list[StepResult] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    dir: Path | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and all(s.ok for s in self.judged)

    @property
    def judged(self) -> list[StepResult]:
        return [s for s in self.steps if not s.info]


def base_env(home: Path) -> dict[str, str]:
    """A clean environment: a throwaway HOME, loopback only."""
    keep = ("PATH", "LANG", "LC_ALL", "TERM", "TZ", "USER", "LOGNAME", "SHELL")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update({
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "TMPDIR": str(home / "tmp"),
        # Anything not meant for loopback goes to a dead proxy.
        "HTTPS_PROXY": DEAD_PROXY, "HTTP_PROXY": DEAD_PROXY, "ALL_PROXY": DEAD_PROXY,
        "https_proxy": DEAD_PROXY, "http_proxy": DEAD_PROXY, "all_proxy": DEAD_PROXY,
        "NO_PROXY": "127.0.0.1,localhost,::1", "no_proxy": "127.0.0.1,localhost,::1",
        "NO_COLOR": "1",
    })
    if "CI" in os.environ:
        env["CI"] = os.environ["CI"]
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    return env


class HttpServer:
    """`toolbelt-mcp serve --http 127.0.0.1:0`, its URL read from stderr."""

    def __init__(self, binary: str, ws: Path, state: Path, env: dict[str, str], log: Path):
        self.log = open(log, "w")
        self.proc = subprocess.Popen(
            [binary, "serve", "--http", "127.0.0.1:0", "--root", str(ws), "--state-dir", str(state)],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.PIPE, text=True, env=env,
            start_new_session=True)
        self.url: str | None = None
        # The token the server generated into its state dir (printed in its config lines).
        self.token: str | None = None
        found = threading.Event()

        def drain() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.log.write(line)
                self.log.flush()
                m = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line)
                if m and self.url is None:
                    self.url = m.group(1)
                t = re.search(r"Authorization: Bearer ([0-9a-f]{64})", line)
                if t and self.token is None:
                    self.token = t.group(1)
                if self.url and self.token:
                    found.set()
            found.set()

        self.thread = threading.Thread(target=drain, daemon=True)
        self.thread.start()
        found.wait(20)
        if self.url is None or self.token is None:
            self.stop()
            raise RuntimeError(f"`serve --http` printed no URL and token (see {log})")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.thread.join(5)
        self.log.close()


def server_args(binary: str, ws: Path, state: Path) -> tuple[str, list[str]]:
    return binary, ["serve", "--root", str(ws), "--state-dir", str(state)]


def toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid TOML basic string


def host_command(host: Host, exe: Path, transport: str, binary: str, http: "HttpServer | None", ws: Path,
                 state: Path, home: Path, model_url: str, run_dir: Path,
                 env: dict[str, str]) -> list[str]:
    """Configure the host in its throwaway HOME and return its command line."""
    cmd, args = server_args(binary, ws, state)
    url = http.url if http else None
    bearer = {"Authorization": f"Bearer {http.token}"} if http else {}
    if http:
        env["TOOLBELT_AUTH_TOKEN"] = http.token or ""
    if host.kind == "claude":
        if transport == "stdio":
            server = {"type": "stdio", "command": cmd, "args": args}
        else:
            server = {"type": "http", "url": url, "headers": bearer}
        cfg = run_dir / "mcp.json"
        cfg.write_text(json.dumps({"mcpServers": {SERVER: server}}, indent=2))
        if host.answers_questions:
            # The README's config: an Elicitation hook that allows this server's questions once.
            answer = {"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept",
                                             "content": {"decision": "allow_once"}}}
            hook = {"type": "command", "command": f"echo '{json.dumps(answer)}'"}
            settings = {"hooks": {"Elicitation": [{"matcher": SERVER, "hooks": [hook]}]}}
            (home / ".claude").mkdir(parents=True, exist_ok=True)
            (home / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2))
        env.update({
            "ANTHROPIC_BASE_URL": model_url,
            "ANTHROPIC_API_KEY": "sk-ant-hostcheck",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_ENABLE_TELEMETRY": "0", "MCP_TIMEOUT": "30000",
        })
        if host.tool_search:
            env["ENABLE_TOOL_SEARCH"] = "true"
        return [str(exe), "-p", PROMPT, "--mcp-config", str(cfg), "--strict-mcp-config",
                "--allowedTools", f"mcp__{SERVER}__*", "--output-format", "stream-json", "--verbose",
                "--max-turns", str(len(STEPS) * 2 + 5)]
    if host.kind == "codex":
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        if transport == "stdio":
            server = (f"command = {toml_str(cmd)}\n"
                      f"args = [{', '.join(toml_str(a) for a in args)}]\n")
        else:
            server = (f"url = {toml_str(url or '')}\n"
                      'bearer_token_env_var = "TOOLBELT_AUTH_TOKEN"\n')
        # Without `model`, Codex's default model and its limits (10,000 tokens of tool output);
        # a model it does not know gets plain function tools and about 10 KB of tool output.
        (codex_home / "config.toml").write_text((f'model = "{host.model}"\n' if host.model else "")
                                                + textwrap.dedent(f"""\
            model_provider = "hostcheck"
            approval_policy = "never"
            sandbox_mode = "{host.sandbox}"

            [model_providers.hostcheck]
            name = "hostcheck"
            base_url = "{model_url}/v1"
            wire_api = "responses"
            env_key = "HOSTCHECK_API_KEY"
            request_max_retries = 0
            stream_max_retries = 0

            [mcp_servers.{SERVER}]
            """) + server + textwrap.dedent("""\
            default_tools_approval_mode = "approve"
            startup_timeout_sec = 30
            tool_timeout_sec = 600
            """))
        env.update({"CODEX_HOME": str(codex_home), "HOSTCHECK_API_KEY": "sk-hostcheck"})
        return [str(exe), "exec", "--skip-git-repo-check", "--json", "-C", str(ws), PROMPT]
    if host.kind == "qwen":
        qwen_dir = home / ".qwen"
        qwen_dir.mkdir(parents=True, exist_ok=True)
        if transport == "stdio":
            server = {"command": cmd, "args": args, "trust": True, "timeout": 120000}
        else:
            server = {"httpUrl": url, "headers": bearer, "trust": True, "timeout": 120000}
        settings = {
            "mcpServers": {SERVER: server},
            "security": {"auth": {"selectedType": "openai"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
            "model": {"name": model.MODEL_ID},
        }
        (qwen_dir / "settings.json").write_text(json.dumps(settings, indent=2))
        env.update({"OPENAI_API_KEY": "sk-hostcheck", "OPENAI_BASE_URL": f"{model_url}/v1",
                    "OPENAI_MODEL": model.MODEL_ID})
        return [str(exe), "--auth-type", "openai", "--openai-base-url", f"{model_url}/v1",
                "--openai-api-key", "sk-hostcheck", "--model", model.MODEL_ID, "--approval-mode", "yolo",
                "--output-format", "json", "--max-session-turns", str(len(STEPS) * 2 + 5), PROMPT]
    if host.kind == "opencode":
        if transport == "stdio":
            server = {"type": "local", "command": [cmd, *args], "enabled": True, "timeout": 120000}
        else:
            server = {"type": "remote", "url": url, "headers": bearer, "enabled": True, "timeout": 120000}
        config = {
            "$schema": "https://opencode.ai/config.json",
            # Its bundled OpenAI-compatible provider, pointed at the scripted endpoint.
            "provider": {"hostcheck": {
                "npm": "@ai-sdk/openai-compatible", "name": "hostcheck",
                "options": {"baseURL": f"{model_url}/v1", "apiKey": "sk-hostcheck"},
                "models": {model.MODEL_ID: {"name": "hostcheck", "tool_call": True}},
            }},
            "model": f"hostcheck/{model.MODEL_ID}",
            "mcp": {SERVER: server},
            "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny"},
            "autoupdate": False,
            "share": "disabled",
        }
        cfg_dir = home / ".config" / "opencode"
        cfg_dir.mkdir(parents=True, exist_ok=True)
        (cfg_dir / "opencode.json").write_text(json.dumps(config, indent=2))
        env.update({"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "true",
                    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "true"})
        return [str(exe), "run", "--model", f"hostcheck/{model.MODEL_ID}", PROMPT]
    if host.kind == "copilot":
        if transport == "stdio":
            server = {"type": "local", "command": cmd, "args": args, "tools": ["*"], "timeout": 120000}
        else:
            server = {"type": "http", "url": url, "headers": bearer, "tools": ["*"], "timeout": 120000}
        cfg_dir = home / ".copilot"
        cfg_dir.mkdir(parents=True, exist_ok=True)
        (cfg_dir / "mcp-config.json").write_text(json.dumps({"mcpServers": {SERVER: server}}, indent=2))
        # Its own model provider (BYOK), offline: no GitHub sign-in, nothing sent to GitHub.
        env.update({"COPILOT_PROVIDER_BASE_URL": f"{model_url}/v1", "COPILOT_PROVIDER_TYPE": "openai",
                    "COPILOT_PROVIDER_API_KEY": "sk-hostcheck", "COPILOT_MODEL": model.MODEL_ID,
                    "COPILOT_OFFLINE": "true", "XDG_CONFIG_HOME": str(home / ".config")})
        return [str(exe), "-p", PROMPT, "--allow-all-tools", "--no-color"]
    raise ValueError(host.kind)


def snippet_of(text: str, at: int | None, width: int = 110) -> str:
    if at is None:
        at = 0
    start = max(0, at - 20)
    s = text[start:start + width]
    s = s.replace("\\n", "⏎").replace("\n", "⏎").replace("\t", " ")
    return ("…" if start else "") + s + ("…" if start + width < len(text) else "")


def judge(records: list[dict[str, Any]], host: Host, audit: list[dict[str, Any]]) -> list[StepResult]:
    seen = model.results_seen(records)
    out = []
    kind = host.kind
    id_fmt = model.ANTHROPIC_ID if kind == "claude" else model.OPENAI_ID
    for i, step in enumerate(STEPS):
        res = seen.get(id_fmt.format(i))
        if res is None:
            out.append(StepResult(step.name, False, "the host never handed the model this call's result",
                                  "", step.info))
            continue
        text = res["text"]
        if step.info:
            asked = [a for a in audit if a.get("operation") == step.args.get("operation")
                     and a.get("decided_by") not in (None, "policy")]
            how = "server audit: " + (", ".join(
                f"{a.get('decision')} by {a.get('decided_by')} ({a.get('outcome')}, {a.get('duration_ms')} ms)"
                for a in asked) or "no question recorded")
            out.append(StepResult(step.name, True, how, snippet_of(text, None), True))
            continue
        failed = []
        first_hit: int | None = None
        checks = ASK_ANSWERED if step.name == "ask_user" and host.answers_questions else step.checks
        if host.sandbox == "read-only":
            checks = READ_ONLY.get(step.name, checks)
        for check in checks + [NOT_CUT_BY_HOST]:
            ok, what, at = check(text)
            if not ok:
                failed.append(what)
            elif first_hit is None and at is not None:
                first_hit = at
        detail = "ok" if not failed else "missing: " + "; ".join(failed)
        out.append(StepResult(step.name, not failed, detail,
                              snippet_of(text, first_hit if not failed else None)))
    return out


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return model.read_log(str(path))


def _ours(tools: list[Any]) -> list[tuple[str | None, str, dict[str, Any]]]:
    return [(ns, name, d) for ns, name, d in model._flat_tools(tools)
            if (ns and SERVER in ns) or name.startswith((f"mcp__{SERVER}__", f"{SERVER}_", f"{SERVER}-"))]


def _describe(ns: str | None, name: str, d: dict[str, Any]) -> str:
    fn = d.get("function") or {}
    desc = d.get("description") or fn.get("description") or ""
    params = d.get("input_schema") or d.get("parameters") or fn.get("parameters") or {}
    n_desc = json.dumps(params).count('"description"')
    cut = " (cut: ends " + repr(desc[-14:]) + ")" if desc.rstrip().endswith(("[truncated]", "…", "...")) else ""
    return (f"{ns + '.' if ns else ''}{name}: description {len(desc):,} chars{cut}, input schema "
            f"{len(json.dumps(params)):,} B with {n_desc} descriptions"
            f"{', defer_loading' if d.get('defer_loading') else ''}")


def notes_on_tools(records: list[dict[str, Any]], instructions: str | None,
                   steps: list[StepResult]) -> list[str]:
    """How our tools reached the model: from the first and the last main-loop request."""
    notes: list[str] = []
    main = [r for r in records if (r.get("answer") or {}).get("main") and isinstance(r.get("body"), dict)]
    if not main:
        return ["no main-loop request reached the model endpoint"]
    first, last = main[0]["body"], main[-1]["body"]
    code_tool = model.code_mode_tool(model.responses_tools(first))
    if code_tool:
        notes.append(f"code mode: our tools are deferred functions of the `{code_tool}` script tool; the "
                     "model sees what its script prints (here `text(r)`, the whole CallToolResult)")
    elif _ours(first.get("tools") or []):
        notes.append("our tools offered in the first request")
    elif f"mcp__{SERVER}__" in json.dumps(first):
        notes.append("our tools deferred: the first request names them only in the prompt")
    for s in [r["answer"] for r in records if (r.get("answer") or {}).get("kind") == "search"]:
        notes.append(f"the model called {s.get('tool')} {json.dumps(s.get('args'))}")
    later = _ours(last.get("tools") or [])
    if later:
        for ns, name, d in later:
            notes.append("last request: " + _describe(ns, name, d))
    seen = model.results_seen(records)
    if not later and not code_tool:
        worked = any(st.ok for st in steps if not st.info)
        notes.append("the last request lists none of our tools"
                     + (" (calls by name worked all the same)" if worked else ""))
    for call_id, res in seen.items():
        if model.SEARCH_RE.match(call_id) and re.search(OFFLOAD, res["text"], re.I):
            notes.append(f"the host cut the tool search's own result ({len(res['text']):,} chars seen): "
                         "the model does not get every schema of our tools")
    if instructions:
        probe = instructions[:60]
        where = [k for k in ("system", "instructions", "messages", "input", "tools")
                 if probe in json.dumps(last.get(k, ""), ensure_ascii=False)]
        notes.append(f"server instructions: {'in ' + ', '.join(where) if where else 'not sent to the model'}")
    side = [r for r in records if r.get("method") == "POST" and not (r.get("answer") or {}).get("main")]
    if side:
        notes.append(f"{len(side)} side request(s): " + ", ".join(sorted({r['path'] for r in side})))
    return notes


def server_listing(binary: str, tmp: Path) -> tuple[str | None, list[dict[str, Any]]]:
    """The `instructions` our server sends in `initialize` (to see whether hosts pass them on)
    and its `tools/list` (to see whether hosts cut descriptions or strip field docs)."""
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "hostcheck", "version": "0"}}}
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    tmp.mkdir(parents=True, exist_ok=True)
    instructions, tools = None, []
    try:
        lines = "\n".join(json.dumps(m) for m in (init, initialized, listing)) + "\n"
        r = subprocess.run([binary, "serve", "--root", str(tmp), "--state-dir", str(tmp / "state")],
                           input=lines, capture_output=True, text=True, timeout=20, env=base_env(tmp / "home"))
        for line in r.stdout.splitlines():
            msg = json.loads(line)
            if msg.get("id") == 0:
                instructions = (msg.get("result") or {}).get("instructions")
            if msg.get("id") == 1:
                tools = (msg.get("result") or {}).get("tools") or []
    except (OSError, ValueError, subprocess.TimeoutExpired):
        pass
    return instructions, tools


def loaded_check(records: list[dict[str, Any]]) -> StepResult:
    """With the host's tool search on: our tools reach the model whole in its first request
    (`anthropic/alwaysLoad`), and it never has to search for them."""
    main = [r for r in records if (r.get("answer") or {}).get("main") and isinstance(r.get("body"), dict)]
    first = _ours(main[0]["body"].get("tools") or []) if main else []
    deferred = [name for _, name, d in first if d.get("defer_loading")]
    searches = [r["answer"].get("tool") for r in records if (r.get("answer") or {}).get("kind") == "search"]
    ok = len(first) == 4 and not deferred and not searches
    detail = (f"{len(first)} of our tools in the first request"
              + (f", deferred: {', '.join(deferred)}" if deferred else "")
              + (f"; the model searched ({', '.join(map(str, searches))})" if searches else "; no tool search"))
    return StepResult("loaded", ok, detail, detail)


PROMPTS = ("review_changes", "plan", "recall")


def slash_check(host_out: Path) -> StepResult:
    """Claude Code: our prompts are among its slash commands (`/mcp__toolbelt__plan`, …), as its
    stream-json `init` message lists them."""
    commands: list[str] = []
    if host_out.exists():
        for line in host_out.read_text(errors="replace").splitlines():
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if message.get("type") == "system" and message.get("subtype") == "init":
                commands = [c for c in message.get("slash_commands") or [] if f"mcp__{SERVER}__" in c]
                break
    wanted = [f"mcp__{SERVER}__{p}" for p in PROMPTS]
    missing = [w for w in wanted if w not in commands]
    detail = ("slash commands: " + ", ".join("/" + c for c in commands)) if commands else "no slash command of ours"
    return StepResult("prompts", not missing, detail + (f"; missing {', '.join(missing)}" if missing else ""), detail)


def listing_check(records: list[dict[str, Any]], served: list[dict[str, Any]]) -> StepResult | None:
    """Whether the host handed the model our tools whole: every description as served, and a
    description for every field. `None` when the host never listed them (deferred, code mode)."""
    main = [r for r in records if (r.get("answer") or {}).get("main") and isinstance(r.get("body"), dict)]
    listed = _ours((main[-1]["body"].get("tools") or []) if main else [])
    if not listed or not served:
        return None
    problems = []
    for _ns, name, d in listed:
        ours = next((t for t in served if name.endswith(t["name"])), None)
        if ours is None:
            continue
        fn = d.get("function") or {}
        desc = d.get("description") or fn.get("description") or ""
        params = d.get("input_schema") or d.get("parameters") or fn.get("parameters") or {}
        if desc.strip() != ours["description"].strip():
            problems.append(f"{ours['name']}: description cut or changed ({len(desc)} of {len(ours['description'])} chars)")
        fields = len(ours["inputSchema"].get("properties", {}))
        documented = sum(1 for f in (params.get("properties") or {}).values() if isinstance(f, dict) and f.get("description"))
        if documented < fields:
            problems.append(f"{ours['name']}: {documented} of {fields} fields documented")
    detail = "ok" if not problems else "; ".join(problems)
    return StepResult("listing", not problems, detail, f"{len(listed)} tools as served" if not problems else "")


def run_one(host: Host, exe: Path, transport: str, binary: str, root: Path, verbose: bool,
            instructions: str | None = None, served: list[dict[str, Any]] | None = None) -> RunResult:
    result = RunResult(host, transport)
    run_dir = root / f"{host.key}-{transport}"
    run_dir.mkdir(parents=True)
    result.dir = run_dir
    ws, state, home = run_dir / "ws", run_dir / "state", run_dir / "home"
    log = run_dir / "requests.jsonl"
    srv: model.ModelServer | None = None
    http: HttpServer | None = None
    t0 = time.monotonic()
    try:
        state.mkdir()
        home.mkdir()
        make_workspace(ws)
        env = base_env(home)
        srv = model.ModelServer(script(), str(log))
        model_url = srv.start()
        if transport == "http":
            http = HttpServer(binary, ws, state, dict(env), run_dir / "server.log")
        cmd = host_command(host, exe, transport, binary, http, ws, state, home, model_url, run_dir, env)
        (run_dir / "command.json").write_text(json.dumps({"cmd": cmd, "env": env}, indent=2))
        with open(run_dir / "host.out", "w") as out, open(run_dir / "host.err", "w") as err:
            proc = subprocess.Popen(cmd, cwd=ws, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    start_new_session=True)
            try:
                rc = proc.wait(HOST_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                rc = None
        if rc is None:
            result.error = f"the host did not finish within {HOST_TIMEOUT_S} s"
        elif rc != 0:
            result.notes.append(f"host exited {rc}: {tail(run_dir / 'host.err', run_dir / 'host.out')}")
    except Exception as exc:  # noqa: BLE001 - reported as this run's failure
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        if http:
            http.stop()
        if srv:
            srv.stop()
        result.seconds = time.monotonic() - t0
        # processes the host left behind in its session (an MCP server it started)
        kill_leftovers(run_dir)
    records = model.read_log(str(log))
    result.steps = judge(records, host, read_jsonl(state / "audit.jsonl"))
    if host.tool_search:
        result.steps.append(loaded_check(records))
    if host.kind == "claude":
        result.steps.append(slash_check(run_dir / "host.out"))
    listing = listing_check(records, served or [])
    if listing is not None:
        result.steps.append(listing)
    hook = ws / ".git" / "hooks" / "pre-commit"
    if host.answers_questions and not hook.exists():
        result.error = "the Elicitation hook's answer did not let the server write .git/hooks/pre-commit"
    if not host.answers_questions and hook.exists():
        result.error = ".git/hooks/pre-commit was written although nobody was asked"
    result.notes = notes_on_tools(records, instructions, result.steps) + result.notes
    if verbose:
        for s in result.steps:
            print(f"  {host.key} {transport} {s.step}: {s.detail}")
    return result


def kill_leftovers(run_dir: Path) -> None:
    """End any process still running from this run's directory (our server started by a host)."""
    mine = str(run_dir)
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit():
            continue
        try:
            cmdline = (pid_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if mine in cmdline and int(pid_dir.name) != os.getpid():
            try:
                os.kill(int(pid_dir.name), signal.SIGTERM)
            except OSError:
                pass


def tail(*paths: Path, n: int = 400) -> str:
    for p in paths:
        try:
            t = p.read_text(errors="replace").strip()
        except OSError:
            continue
        if t:
            return t[-n:].replace("\n", " | ")
    return "(no output)"


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def print_table(results: list[RunResult]) -> None:
    rows = [("host", "transport", "step", "result", "what the model saw")]
    for r in results:
        if r.error and not any(s.ok for s in r.steps):
            rows.append((r.host.label, r.transport, "(run)", "FAIL", r.error))
        for s in r.steps:
            if s.info:
                rows.append((r.host.label, r.transport, s.step, "INFO", f"{s.detail} | saw: {s.snippet}"))
                continue
            text = s.snippet if s.ok else f"{s.detail} | saw: {s.snippet or '(nothing)'}"
            rows.append((r.host.label, r.transport, s.step, "PASS" if s.ok else "FAIL", text))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(row[i].ljust(widths[i]) for i in range(4)) + "  " + row[4])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary", nargs="?", default=os.environ.get("TOOLBELT_BIN") or
                    str(REPO / "target" / "release" / "toolbelt-mcp"))
    ap.add_argument("--hosts", default=",".join(h.key for h in HOSTS),
                    help="comma-separated: " + ", ".join(h.key for h in HOSTS))
    ap.add_argument("--transports", default="stdio,http")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir even when everything passed")
    ap.add_argument("--report", help="also write the results as JSON here")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    binary = os.path.abspath(args.binary)
    if not os.access(binary, os.X_OK):
        print(f"hosts: {binary} is not an executable server binary (pass BINARY or set TOOLBELT_BIN)")
        return 2
    wanted = [k.strip() for k in args.hosts.split(",") if k.strip()]
    unknown = [k for k in wanted if k not in {h.key for h in HOSTS}]
    if unknown:
        print(f"hosts: unknown host(s) {', '.join(unknown)}; known: {', '.join(h.key for h in HOSTS)}")
        return 2
    hosts = [h for h in HOSTS if h.key in wanted]
    transports = [t.strip() for t in args.transports.split(",") if t.strip()]
    if shutil.which("npm") is None or shutil.which("node") is None:
        print("SKIP hosts: node and npm are needed to install the hosts and are not on PATH")
        return 0

    t_start = time.monotonic()
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    exes: dict[str, Path] = {}
    install_failures: dict[str, str] = {}  # the registry answered, the install failed
    unreachable: list[str] = []  # not in the cache, and the registry cannot be reached
    reachable: bool | None = None
    for h in hosts:
        exe = installed_bin(h, cache)
        if exe is None:
            if reachable is None:
                reachable = registry_reachable()
            if not reachable:
                unreachable.append(h.key)
                continue
            t0 = time.monotonic()
            exe, log = install(h, cache)
            if exe is None:
                install_failures[h.key] = log
                continue
            print(f"hosts: installed {h.package}@{h.version} in {time.monotonic() - t0:.0f} s")
        exes[h.key] = exe
    for k in unreachable:
        print(f"SKIP {k}: not in the cache ({cache}) and the npm registry cannot be reached (`npm ping` failed)")
    if not exes and not install_failures:
        print("SKIP hosts: no host could be installed from npm (the registry cannot be reached and the "
              f"cache {cache} is empty); nothing was tested")
        return 0

    root = Path(tempfile.mkdtemp(prefix="toolbelt-hosts-"))
    print(f"hosts: server {binary}; cache {cache}; runs in {root}")
    results: list[RunResult] = []
    instructions, served = server_listing(binary, root / "probe")
    for h in hosts:
        if h.key not in exes:
            continue
        for t in transports:
            r = run_one(h, exes[h.key], t, binary, root, args.verbose, instructions, served)
            passed = sum(s.ok for s in r.judged)
            print(f"hosts: {h.label} over {t}: {passed}/{len(r.judged)} steps passed in {r.seconds:.1f} s"
                  + (f" ({r.error})" if r.error else ""))
            results.append(r)

    print()
    print_table(results)
    print()
    for r in results:
        if r.notes:
            print(f"{r.host.label} over {r.transport}:")
            for n in r.notes:
                print(f"  - {n}")
    failed_installs = dict(install_failures)
    for k, v in failed_installs.items():
        print(f"FAIL {k}: could not be installed while the registry answered: {v}")

    n_pass = sum(s.ok for r in results for s in r.judged)
    n_fail = sum(not s.ok for r in results for s in r.judged) + sum(1 for r in results if r.error and not r.steps)
    n_fail += len(failed_installs)
    if args.report:
        Path(args.report).write_text(json.dumps([{
            "host": r.host.label, "transport": r.transport, "seconds": round(r.seconds, 2), "error": r.error,
            "notes": r.notes, "steps": [s.__dict__ for s in r.steps]} for r in results], indent=2))
    ok = n_fail == 0
    if ok and not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"hosts: logs kept in {root} (requests.jsonl: every request the model got)")
    print(f"hosts: {time.monotonic() - t_start:.0f} s in all")
    print(f"hosts: {n_pass} passed, {n_fail} failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
