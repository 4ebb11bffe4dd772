#!/usr/bin/env python3
"""What the model reads: our tools against Claude Code's own, the same five steps, the same run.

    python3 tests/hosts/lean_table.py [BINARY] [--host claude-2.1.332] [--budget 1.5] [--keep]

Claude Code, headless against the scripted model endpoint of `model.py`, does five small
steps twice in one workspace each: once with our tools (over stdio, the lean view), once with
its own `Read`, `Grep`, `Edit` and `Bash`. Every step's size is the characters of the tool
result Claude Code handed the model in its next request. Prints the table, the ratio of the
totals, and exits 1 when ours is over `--budget` times Claude Code's own (or a step did not
give the model what it asked for: the text, the lines, the diff, the output, the error).

Claude Code's `Edit` refuses a file it has not read, so its run reads `src/app.py` first; that
read is shown but, as in the issue that set the target, not counted. Its `Grep` is asked for
the matching lines with their numbers (`output_mode: content`, `-n`), what our `grep_search`
gives; its default (the names of the files that match) would not show the lines.

Needs what `run.py` needs (Python 3.11, node, npm, git); the host comes from its cache. When
no host can be installed it says SKIP and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model  # noqa: E402
import run  # noqa: E402

MARKER = "LEANTABLE-TASK"
README = "# Demo\nREADME-MARKER-5521\nSee src/app.py.\n"
APP_PY = "def widget():\n    return 1\n\n# the widget factory\n"


@dataclass
class Row:
    name: str
    ours: dict[str, Any] | None  # None: a step only Claude Code's own tools need
    own: dict[str, Any]
    must_see: Callable[[str], bool]  # what both must hand the model
    counted: bool = True


def rows(ws: Path) -> list[Row]:
    app = str(ws / "src" / "app.py")

    def has(*needles: str) -> Callable[[str], bool]:
        return lambda text: all(n in text for n in needles)

    return [
        Row("read a 3-line README",
            {"tool": "file_operations", "args": {"operation": "read_file", "path": "README.md"}},
            {"tool": "Read", "args": {"file_path": str(ws / "README.md")}},
            has("README-MARKER-5521", "See src/app.py.")),
        Row("grep `widget` (2 matches)",
            {"tool": "file_operations", "args": {"operation": "grep_search", "pattern": "widget"}},
            {"tool": "Grep", "args": {"pattern": "widget", "output_mode": "content", "-n": True}},
            has("def widget():", "# the widget factory")),
        Row("(Claude Code's Edit needs the file read first)",
            None,
            {"tool": "Read", "args": {"file_path": app}},
            has("return 1"), counted=False),
        Row("replace one string in `src/app.py`",
            {"tool": "file_operations", "args": {"operation": "replace_string", "path": "src/app.py",
                                                 "old_string": "return 1", "new_string": "return 2"}},
            {"tool": "Edit", "args": {"file_path": app, "old_string": "return 1", "new_string": "return 2"}},
            has("app.py")),
        Row("run `git diff --stat`",
            {"tool": "terminal_operations", "args": {"operation": "run_command", "command": "git diff --stat"}},
            {"tool": "Bash", "args": {"command": "git diff --stat", "description": "Show the diff stat"}},
            has("1 file changed")),
        Row("read a missing file",
            {"tool": "file_operations", "args": {"operation": "read_file", "path": "missing.txt"}},
            {"tool": "Read", "args": {"file_path": str(ws / "missing.txt")}},
            has("does not exist")),
    ]


def make_workspace(ws: Path) -> None:
    (ws / "src").mkdir(parents=True)
    (ws / "README.md").write_text(README)
    (ws / "src" / "app.py").write_text(APP_PY)
    git = ["git", "-c", "user.name=leantable", "-c", "user.email=leantable@localhost",
           "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "initial"]):
        subprocess.run(git + cmd, cwd=ws, check=True, capture_output=True,
                       env=dict(os.environ, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1"))


def one_run(side: str, exe: Path, binary: str, root: Path) -> tuple[list[str | None], str | None]:
    """Run Claude Code through the steps of `side` ("ours" or "own"); what the model got per row."""
    run_dir = root / side
    ws, state, home = run_dir / "ws", run_dir / "state", run_dir / "home"
    for d in (state, home):
        d.mkdir(parents=True)
    make_workspace(ws)
    table = rows(ws)
    picked = [(i, getattr(r, side)) for i, r in enumerate(table) if getattr(r, side)]
    steps = [model.Step(f"{side}-{i}", s["tool"], s["args"]) for i, s in picked]
    log = run_dir / "requests.jsonl"
    srv = model.ModelServer(model.Script(steps=steps, marker=MARKER, server=run.SERVER, final="Done."), str(log))
    env = run.base_env(home)
    error = None
    try:
        url = srv.start()
        env.update({
            "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-leantable",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
            "MCP_TIMEOUT": "30000",
        })
        cmd, args = run.server_args(binary, ws, state)
        cfg = run_dir / "mcp.json"
        cfg.write_text(json.dumps({"mcpServers": {run.SERVER: {"type": "stdio", "command": cmd, "args": args}}}))
        allowed = f"mcp__{run.SERVER}__*" if side == "ours" else "Read,Grep,Edit,Bash"
        prompt = f"{MARKER}: read README.md, grep for widget, change `return 1` to `return 2` in src/app.py, " \
                 "run git diff --stat, read missing.txt."
        argv = [str(exe), "-p", prompt, "--mcp-config", str(cfg), "--strict-mcp-config", "--allowedTools",
                allowed, "--output-format", "stream-json", "--verbose", "--max-turns", str(len(steps) * 2 + 5)]
        with open(run_dir / "host.out", "w") as out, open(run_dir / "host.err", "w") as err:
            proc = subprocess.Popen(argv, cwd=ws, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    start_new_session=True)
            try:
                proc.wait(run.HOST_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
                error = f"Claude Code did not finish within {run.HOST_TIMEOUT_S} s"
    finally:
        srv.stop()
        run.kill_leftovers(run_dir)
    seen = model.results_seen(model.read_log(str(log)))
    texts: list[str | None] = [None] * len(table)
    for k, (i, _) in enumerate(picked):
        got = seen.get(model.ANTHROPIC_ID.format(k))
        texts[i] = got["text"] if got else None
    return texts, error


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("binary", nargs="?", default=os.environ.get("TOOLBELT_BIN") or
                    str(run.REPO / "target" / "release" / "toolbelt-mcp"))
    ap.add_argument("--host", default="claude-2.1.332", help="a Claude Code host of run.py")
    ap.add_argument("--budget", type=float, default=1.5, help="the ratio of the totals not to exceed")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    ap.add_argument("--json", help="also write the table as JSON here")
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    hosts = {h.key: h for h in run.HOSTS if h.kind == "claude" and not h.answers_questions}
    host = hosts.get(args.host)
    if host is None:
        print(f"lean table: unknown host `{args.host}`; one of: {', '.join(hosts)}")
        return 2
    if not os.access(binary, os.X_OK):
        print(f"lean table: {binary} is not an executable server binary (pass BINARY or set TOOLBELT_BIN)")
        return 2
    cache = run.cache_dir()
    exe = run.installed_bin(host, cache)
    if exe is None:
        if shutil.which("npm") is None or not run.registry_reachable():
            print(f"SKIP lean table: {host.key} is not in the cache ({cache}) and npm cannot install it")
            return 0
        cache.mkdir(parents=True, exist_ok=True)
        exe, log = run.install(host, cache)
        if exe is None:
            print(f"lean table: {host.key} could not be installed: {log}")
            return 1
    root = Path(tempfile.mkdtemp(prefix="toolbelt-lean-"))
    t0 = time.monotonic()
    ours, err_ours = one_run("ours", exe, binary, root)
    own, err_own = one_run("own", exe, binary, root)
    table = rows(root / "ours" / "ws")
    failures = [e for e in (err_ours, err_own) if e]
    lines = [f"Characters of the tool result {host.key} handed the model, per step (same run):", "",
             "| step | ours | Claude Code's own | ratio |", "|---|---:|---:|---:|"]
    sum_ours = sum_own = 0
    record = []
    for r, a, b in zip(table, ours, own):
        for side, text, wanted in (("ours", a, r.ours), ("own", b, r.own)):
            if wanted and (text is None or not r.must_see(text)):
                failures.append(f"{r.name}, {side}: the model did not get what it needs; it got {text!r}")
        na = len(a) if a is not None else None
        nb = len(b) if b is not None else None
        ratio = f"{na / nb:.1f}×" if na and nb else ""
        lines.append(f"| {r.name} | {'' if na is None else f'{na:,}'} | {'' if nb is None else f'{nb:,}'} | {ratio} |")
        record.append({"step": r.name, "ours": na, "own": nb, "counted": r.counted, "ours_text": a, "own_text": b})
        if r.counted:
            sum_ours += na or 0
            sum_own += nb or 0
    total = sum_ours / sum_own if sum_own else float("inf")
    lines.append(f"| **five small steps together** | {sum_ours:,} | {sum_own:,} | **{total:.2f}×** |")
    print("\n".join(lines))
    print()
    for rec in record:
        print(f"{rec['step']}:\n  ours: {rec['ours_text']!r}\n  own:  {rec['own_text']!r}")
    if args.json:
        Path(args.json).write_text(json.dumps({"host": host.key, "rows": record, "ratio": total}, indent=2))
    if total > args.budget:
        failures.append(f"ours is {total:.2f}× Claude Code's own, over the budget of {args.budget}×")
    print(f"lean table: {time.monotonic() - t0:.0f} s")
    if failures or args.keep:
        print(f"lean table: logs kept in {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    for f in failures:
        print(f"FAIL {f}")
    print(f"lean table: ours {total:.2f}× Claude Code's own (budget {args.budget}×): "
          + ("FAIL" if failures else "PASS"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
