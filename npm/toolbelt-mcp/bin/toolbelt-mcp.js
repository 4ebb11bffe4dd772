#!/usr/bin/env node
// The npm launcher of toolbelt-mcp: finds the native binary in the platform package npm
// installed (toolbelt-mcp-<os>-<cpu>, an optional dependency) and runs it with the same
// arguments and stdio, forwarding signals and passing its exit code (or signal) on.
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");

const PLATFORMS = {
  "linux-x64": "toolbelt-mcp-linux-x64",
  "linux-arm64": "toolbelt-mcp-linux-arm64",
  "darwin-x64": "toolbelt-mcp-darwin-x64",
  "darwin-arm64": "toolbelt-mcp-darwin-arm64",
  "win32-x64": "toolbelt-mcp-win32-x64",
};

function fail(message) {
  process.stderr.write(`toolbelt-mcp (npm launcher): ${message}\n`);
  process.exit(1);
}

/** The path of the native binary for `platform` (`process.platform`) and `arch`, or exit with why not. */
function binary(platform = process.platform, arch = process.arch) {
  const key = `${platform}-${arch}`;
  const pkg = PLATFORMS[key];
  if (!pkg) {
    fail(
      `there is no prebuilt binary for ${key} (there are: ${Object.keys(PLATFORMS).join(", ")}); ` +
        "build it from source with `cargo install --git <repository>` and put it in your MCP config instead of npx",
    );
  }
  try {
    const name = platform === "win32" ? "toolbelt-mcp.exe" : "toolbelt-mcp";
    return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "bin", name);
  } catch {
    fail(
      `the package \`${pkg}\`, which holds the ${key} binary, is not installed. npm skips optional ` +
        "dependencies under `--omit=optional` (or `--no-optional`): install again without it, or install " +
        `\`${pkg}\` next to \`toolbelt-mcp\``,
    );
  }
}

/** Runs the binary of this platform in the launcher's place. */
function main() {
  const version = require("../package.json").version;
  const program = binary();
  let child = null;

  // Signals sent to the launcher go to the binary. On a terminal, Ctrl-C already reaches both
  // (they share the foreground process group): forwarding it too would count twice, and the
  // agent reads a second Ctrl-C as "stop now". The handlers are in place before the binary
  // starts, so no signal can arrive in between and kill the launcher alone. Windows knows only
  // a few (listening to SIGQUIT there throws); its console sends Ctrl-C and Ctrl-Break to both.
  const FORWARDED = process.platform === "win32" ? ["SIGHUP"] : ["SIGTERM", "SIGHUP", "SIGQUIT", "SIGINT"];
  for (const signal of FORWARDED) {
    process.on(signal, () => {
      if (signal === "SIGINT" && process.stdin.isTTY) return;
      if (child && child.exitCode === null && child.signalCode === null) child.kill(signal);
    });
  }

  child = spawn(program, process.argv.slice(2), {
    stdio: "inherit",
    // No console window of its own when a GUI host (Claude Desktop on Windows) starts npx.
    windowsHide: true,
    env: { ...process.env, TOOLBELT_LAUNCHER: `npm launcher toolbelt-mcp@${version} (${__filename})` },
  });

  child.on("error", (err) => fail(`cannot start \`${program}\`: ${err.message}`));

  // Whoever started the launcher is gone (npx, for one, dies of SIGTERM without passing it on
  // through its shell): the host went away, so the binary stops too.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent && child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  }, 500).unref();

  child.on("exit", (code, signal) => {
    if (signal) {
      // End the same way, so whoever started the launcher sees the signal.
      for (const s of FORWARDED) process.removeAllListeners(s);
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code === null ? 1 : code);
  });
}

// `require`d (the package check asks `binary()` about other platforms), it runs nothing.
if (require.main === module) main();
module.exports = { binary, PLATFORMS };
