#!/usr/bin/env python3
"""CI check of the plugins in this repository, each by its host's own CLI, from npm, in a
throwaway HOME, against the scripted model endpoint on loopback (`tests/hosts/model.py`):

- Claude Code: `claude plugin validate --strict` of the plugin (`plugins/toolbelt`) and of the
  marketplace (the repository: `.claude-plugin/marketplace.json`); `claude plugin marketplace
  add REPO` and `claude plugin install toolbelt@toolbelt-mcp`; then `claude -p` with tool search
  on: the plugin's server is started by Claude Code (`npx -y toolbelt-mcp@VERSION serve`), its
  tools are loaded without a search (`alwaysLoad`), and the model reads a file through it.
- Codex CLI: `codex plugin marketplace add REPO` (`.agents/plugins/marketplace.json`), `codex
  plugin add toolbelt@toolbelt-mcp`, `codex plugin list`, `codex mcp list`, then `codex exec`:
  the model reads the file through the plugin's server.
- Gemini CLI: `gemini extensions validate`, `gemini extensions install` (consent given on the
  command line), `gemini extensions list`, then `gemini -p`: the model reads the file through
  the extension's server, whose workspace is the folder Gemini CLI runs in (no `--root`: the
  server takes it from the host and screens it as every host-named workspace).

`npx` finds the package offline: the workspace each host runs in is an npm project with the
packed tarballs installed (NPM_DIR: what `npm/pack.sh` wrote for this machine), as a published
package would be fetched. Skips a host only when npm cannot install it.

Usage: python3 tests/packaging/check_plugins.py NPM_DIR [--hosts claude,codex,gemini]
"""

import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "hosts"))
import model  # noqa: E402
import run as hosts  # noqa: E402

VERSION = json.loads((REPO / "npm" / "toolbelt-mcp" / "package.json").read_text())["version"]
MARKER = "PLUGINCHECK"
NOTE = "the plugin marker 7781 is in this file"
PROMPT = f"{MARKER}: read notes.md with the toolbelt tools and say what it says."
CLAUDE = hosts.Host("claude-2.1.332", "@anthropic-ai/claude-code", "2.1.332", "claude", "claude")
CODEX = hosts.Host("codex-0.171.0", "@openai/codex", "0.171.0", "codex", "codex")
GEMINI = hosts.Host("gemini-0.61.0", "@google/gemini-cli", "0.61.0", "gemini", "gemini")
failures = []


def check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else f": {str(detail)[-1500:]}"), flush=True)
    if not ok:
        failures.append(name)
    return ok


def sh(cmd, env, cwd=None, timeout=120):
    return subprocess.run(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)


def workspace(root, npm_dir):
    """An npm project with the packed packages installed (npx runs them offline), and a note."""
    ws = root / "ws"
    ws.mkdir()
    (ws / "package.json").write_text(json.dumps({"name": "plugin-check", "version": "0.0.0", "private": True}))
    tarballs = glob.glob(os.path.join(npm_dir, f"toolbelt-mcp*-{VERSION}.tgz"))
    env = dict(os.environ, npm_config_offline="true", npm_config_cache=str(root / "npm-cache"),
               npm_config_audit="false", npm_config_fund="false", npm_config_update_notifier="false")
    done = sh(["npm", "install", "--prefix", str(ws), *tarballs], env, timeout=300)
    if not check("the packed npm packages install offline into the workspace", done.returncode == 0, done.stderr):
        sys.exit(1)
    (ws / "notes.md").write_text(f"# Notes\n{NOTE}\n")
    return ws


def host_env(home):
    env = hosts.base_env(home)
    # npx must not reach for a registry: the package is the workspace's.
    env.update(npm_config_offline="true", npm_config_update_notifier="false", TOOLBELT_AUDIT_LOG="off")
    return env


def drive(command, env, ws, run_dir, server):
    """Runs one headless host session against the scripted endpoint; returns the request log.
    `command(url)` gives the host's command line and the environment it adds for that URL."""
    script = model.Script([model.Step("read", "file_operations", {"operation": "read_file", "path": "notes.md"})],
                          MARKER, server=server, final="The note was read.")
    run_dir.mkdir()
    srv = model.ModelServer(script, str(run_dir / "requests.jsonl"))
    url = srv.start()
    cmd, extra = command(url)
    try:
        with open(run_dir / "host.out", "w") as out, open(run_dir / "host.err", "w") as err:
            proc = subprocess.Popen(cmd, cwd=ws, env=dict(env, **extra), stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=err, start_new_session=True)
            try:
                proc.wait(hosts.HOST_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    finally:
        srv.stop()
        hosts.kill_leftovers(ws)
    return model.read_log(str(run_dir / "requests.jsonl"))


def read_through(records, what, run_dir):
    texts = [r.get("text") or "" for r in model.results_seen(records).values()]
    return check(f"{what}: the model read the file through the plugin's server", any(NOTE in t for t in texts),
                 texts or f"no tool result reached the model; {hosts.tail(run_dir / 'host.err', run_dir / 'host.out')}")


def first_main_tools(records, marker):
    first = next((r for r in records if marker in json.dumps(r.get("body")) and (r.get("answer") or {}).get("main")), None)
    return [t.get("name") for t in ((first or {}).get("body") or {}).get("tools", []) if isinstance(t, dict)]


def no_hints(root):
    config = root / "no-hints.toml"
    config.write_text("host_tool_hints = false\n")
    return config


def claude(exe, root, ws):
    home = root / "claude-home"
    home.mkdir()
    env = host_env(home)
    for target in (REPO / "plugins" / "toolbelt", REPO):
        done = sh([str(exe), "plugin", "validate", "--strict", str(target)], env)
        check(f"claude plugin validate --strict {target.relative_to(REPO) or '.'}", done.returncode == 0,
              done.stdout + done.stderr)
    done = sh([str(exe), "plugin", "marketplace", "add", str(REPO)], env)
    check("claude plugin marketplace add REPO", done.returncode == 0, done.stdout + done.stderr)
    done = sh([str(exe), "plugin", "install", "toolbelt@toolbelt-mcp"], env)
    check("claude plugin install toolbelt@toolbelt-mcp", done.returncode == 0, done.stdout + done.stderr)
    env.update({
        "ANTHROPIC_API_KEY": "sk-ant-plugincheck", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
        "MCP_TIMEOUT": "60000", "ENABLE_TOOL_SEARCH": "true",
        # The server's own keep-loaded hint off: only the plugin's `alwaysLoad` keeps the tools.
        "TOOLBELT_CONFIG": str(no_hints(root)),
    })
    server = "plugin_toolbelt_toolbelt"
    command = lambda url: ([str(exe), "-p", PROMPT, "--allowedTools", f"mcp__{server}__*", "--output-format",
                            "stream-json", "--verbose", "--max-turns", "6"], {"ANTHROPIC_BASE_URL": url})
    run_dir = root / "claude-run"
    records = drive(command, env, ws, run_dir, server)
    names = first_main_tools(records, MARKER)
    check("claude: the plugin's tools are in the first request with tool search on (its `alwaysLoad`)",
          f"mcp__{server}__file_operations" in names, names)
    read_through(records, "claude", run_dir)


def codex(exe, root, ws):
    home = root / "codex-home"
    home.mkdir()
    env = host_env(home)
    # Outside the system temp dir: Codex refuses to make its helper links under /tmp.
    env["CODEX_HOME"] = str(home / ".codex")
    (home / ".codex").mkdir()
    for cmd, what in ((["plugin", "marketplace", "add", str(REPO)], "codex plugin marketplace add REPO"),
                      (["plugin", "add", "toolbelt@toolbelt-mcp"], "codex plugin add toolbelt@toolbelt-mcp")):
        done = sh([str(exe), *cmd], env)
        check(what, done.returncode == 0, done.stdout + done.stderr)
    done = sh([str(exe), "plugin", "list"], env)
    check("codex plugin list: installed and enabled", "toolbelt@toolbelt-mcp" in done.stdout
          and "installed, enabled" in done.stdout, done.stdout + done.stderr)
    done = sh([str(exe), "mcp", "list"], env)
    check("codex mcp list: the plugin's server", f"toolbelt-mcp@{VERSION}" in done.stdout, done.stdout + done.stderr)

    config = home / ".codex" / "config.toml"
    installed = config.read_text()  # the marketplace and the plugin, as `codex plugin add` wrote them

    def command(url):
        # The model settings go first: TOML keys after a table header belong to that table.
        config.write_text(
            f'model = "{model.MODEL_ID}"\nmodel_provider = "plugincheck"\napproval_policy = "never"\n'
            'sandbox_mode = "workspace-write"\n\n[model_providers.plugincheck]\nname = "plugincheck"\n'
            f'base_url = "{url}/v1"\nwire_api = "responses"\nenv_key = "PLUGINCHECK_API_KEY"\n'
            "request_max_retries = 0\nstream_max_retries = 0\n\n" + installed)
        return ([str(exe), "exec", "--skip-git-repo-check", "--json", "-C", str(ws), PROMPT],
                {"PLUGINCHECK_API_KEY": "sk-plugincheck"})

    run_dir = root / "codex-run"
    records = drive(command, env, ws, run_dir, "toolbelt")
    read_through(records, "codex", run_dir)


def gemini(exe, root, ws):
    home = root / "gemini-home"
    (home / ".gemini").mkdir(parents=True)
    env = host_env(home)
    (home / ".gemini" / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True}}))
    env.update({"GEMINI_CLI_TRUST_WORKSPACE": "true", "GEMINI_API_KEY": "plugincheck"})
    extension = REPO / "plugins" / "toolbelt"
    done = sh([str(exe), "extensions", "validate", str(extension)], env)
    check("gemini extensions validate plugins/toolbelt", done.returncode == 0, done.stdout + done.stderr)
    done = sh([str(exe), "extensions", "install", str(extension), "--consent"], env)
    check("gemini extensions install plugins/toolbelt --consent", done.returncode == 0, done.stdout + done.stderr)
    done = sh([str(exe), "extensions", "list", "-o", "json"], env, cwd=ws)
    listing = done.stdout + done.stderr  # 0.61.0 writes the list on stderr
    try:
        listed = json.loads(listing[listing.index("["):])
        servers = {e["name"]: e.get("mcpServers", {}) for e in listed}
    except (ValueError, KeyError, TypeError):
        servers = {}
    check("gemini extensions list: toolbelt and its server",
          (servers.get("toolbelt", {}).get("toolbelt", {}).get("args") or []) == ["-y", f"toolbelt-mcp@{VERSION}", "serve"],
          servers or listing[-1500:])
    command = lambda url: ([str(exe), "-p", PROMPT, "--skip-trust", "--approval-mode", "yolo", "--output-format",
                            "json", "-m", "gemini-2.5-flash"], {"GOOGLE_GEMINI_BASE_URL": url})
    run_dir = root / "gemini-run"
    records = drive(command, env, ws, run_dir, "toolbelt")
    read_through(records, "gemini", run_dir)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("npm_dir")
    ap.add_argument("--hosts", default="claude,codex,gemini")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="toolbelt-plugins-"))
    ws = workspace(root, args.npm_dir)
    runs = {"claude": (CLAUDE, claude), "codex": (CODEX, codex), "gemini": (GEMINI, gemini)}
    cache = hosts.cache_dir()
    for key in args.hosts.split(","):
        host, run = runs[key]
        exe, log = hosts.install(host, cache)
        if exe is None:
            if hosts.registry_reachable():
                check(f"{host.key}: npm installs it", False, log)
            else:
                print(f"SKIP {host.key}: npm cannot reach its registry ({log[-300:]})")
            continue
        started = time.monotonic()
        run(exe, root, ws)
        print(f"     {host.key}: {time.monotonic() - started:.0f} s", flush=True)
    print(f"{len(failures)} failed" if failures else "all passed")
    if not args.keep and not failures:
        shutil.rmtree(root, ignore_errors=True)
    elif failures:
        print(f"kept: {root}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
