#!/usr/bin/env python3
"""CI check of the MCP Bundle `packaging/mcpb/build.py` made: unpacked by the official CLI
(`mcpb unpack`), its entries checked by format (a universal macOS binary of arm64 and x86-64,
a Windows PE, the Linux binary executable), its launch line resolved by the official package's
own code (`getMcpConfigForManifest`, what the README of `@anthropic-ai/mcpb` says Claude
Desktop runs) from a `user_config` as the app's form gives it, and that line run here through
the official Python MCP SDK: two project folders (one with a space) are the roots, the sandbox
and approval fields take effect, and a form missing the required folders starts nothing.

Usage: python3 tests/packaging/check_mcpb.py BUNDLE.mcpb [PLATFORMS]   (after `npm ci --prefix packaging`)
PLATFORMS (e.g. `darwin,linux,win32`): the platforms the bundle must carry.
"""

import asyncio
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGING = os.path.join(REPO, "packaging")
MCPB = os.path.join(PACKAGING, "node_modules", ".bin", "mcpb")
BUNDLE = os.path.abspath(sys.argv[1])
EXPECTED = sorted(sys.argv[2].split(",")) if len(sys.argv) > 2 else []
TMP = tempfile.mkdtemp(prefix="toolbelt-mcpb-check-")
failures = []


def check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else f": {detail}"), flush=True)
    if not ok:
        failures.append(name)
    return ok


# The official package's resolution of a bundle's launch line, on this OS (`process.platform`).
RESOLVE = """
import { getMcpConfigForManifest } from "@anthropic-ai/mcpb";
import { readFileSync } from "node:fs";
const [manifestPath, extensionPath, userConfig] = process.argv.slice(1);
const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
const config = await getMcpConfigForManifest({
  manifest, extensionPath, systemDirs: { HOME: process.env.HOME }, userConfig: JSON.parse(userConfig),
  pathSeparator: "/", logger: { warn() {}, log() {}, error() {} },
});
process.stdout.write(JSON.stringify(config ?? null));
"""


def resolve(unpacked, user_config):
    out = subprocess.run(
        ["node", "--input-type=module", "-e", RESOLVE, "--", os.path.join(unpacked, "manifest.json"), unpacked,
         json.dumps(user_config)],
        cwd=PACKAGING, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def check_entries(unpacked, manifest):
    platforms = manifest["compatibility"]["platforms"]
    linux = os.path.join(unpacked, "server/linux-x64/toolbelt-mcp")
    check("the Linux entry is there and executable after `mcpb unpack`", os.access(linux, os.X_OK), linux)
    if "darwin" in platforms:
        with open(os.path.join(unpacked, "server/darwin/toolbelt-mcp"), "rb") as file:
            data = file.read()
        magic, count = struct.unpack_from(">II", data)
        arches = [struct.unpack_from(">iiIII", data, 8 + 20 * i) for i in range(count)]
        cpus = sorted(cputype for cputype, *_ in arches)
        thin = all(struct.unpack_from("<I", data, offset)[0] == 0xFEEDFACF for _, _, offset, _, _ in arches)
        check("macOS: one universal binary, arm64 and x86-64 slices, each a 64-bit Mach-O",
              magic == 0xCAFEBABE and cpus == [0x01000007, 0x0100000C] and thin, f"magic {magic:#x}, cpus {cpus}")
    if "win32" in platforms:
        with open(os.path.join(unpacked, "server/win32-x64/toolbelt-mcp.exe"), "rb") as file:
            check("Windows: a PE executable", file.read(2) == b"MZ")
    entries = {"darwin": "server/darwin/toolbelt-mcp", "win32": "server/win32-x64/toolbelt-mcp.exe",
               "linux": "server/linux-x64/toolbelt-mcp"}
    carried = sorted(name for name, entry in entries.items() if os.path.exists(os.path.join(unpacked, entry)))
    check("the bundle names exactly the platforms whose entries it carries", sorted(platforms) == carried,
          f"names {platforms}, carries {carried}")
    if EXPECTED:
        check(f"the bundle carries {', '.join(EXPECTED)}", carried == EXPECTED, carried)


async def serve(config, folders):
    env = dict(config.get("env") or {}, PATH=os.environ["PATH"], HOME=TMP, XDG_STATE_HOME=os.path.join(TMP, "state"))
    params = StdioServerParameters(command=config["command"], args=config["args"], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            files = {}
            for folder in folders:
                res = await session.call_tool("file_operations", {"operation": "read_file", "path": os.path.join(folder, "marker.txt")})
                files[folder] = "\n".join(getattr(c, "text", "") for c in res.content)
            write = await session.call_tool("file_operations", {
                "operation": "create_file", "path": os.path.join(folders[1], "written.txt"), "content": "from the bundle\n"})
            return files, write


def main():
    unpacked = os.path.join(TMP, "unpacked")
    subprocess.run([MCPB, "unpack", BUNDLE, unpacked], check=True, stdin=subprocess.DEVNULL, capture_output=True)
    with open(os.path.join(unpacked, "manifest.json")) as file:
        manifest = json.load(file)
    check_entries(unpacked, manifest)
    check("the manifest lists the server's four tools",
          [t["name"] for t in manifest["tools"]] == ["file_operations", "terminal_operations", "todo_operations", "memory_operations"],
          manifest["tools"])

    folders = [os.path.join(TMP, "project one"), os.path.join(TMP, "project-two")]
    for folder in folders:
        os.makedirs(folder)
        with open(os.path.join(folder, "marker.txt"), "w") as file:
            file.write(f"marker of {os.path.basename(folder)}\n")

    missing = resolve(unpacked, {})
    check("a form without the required project folders starts nothing", missing is None, missing)

    config = resolve(unpacked, {"project_dirs": folders})
    check("defaults fill the sandbox and approval, each folder one argument after `--root`",
          config and config["args"] == ["serve", "--sandbox", "workspace-write", "--approval", "on-request", "--root", *folders],
          config)
    files, write = asyncio.run(serve(config, folders))
    for folder in folders:
        check(f"reads a file in `{os.path.basename(folder)}` (each folder is a root)",
              f"marker of {os.path.basename(folder)}" in files[folder], files[folder][:300])
    written = os.path.join(folders[1], "written.txt")
    check("workspace-write: a file written in a project folder lands there",
          os.path.exists(written) and open(written).read() == "from the bundle\n", write)

    config = resolve(unpacked, {"project_dirs": folders[:1], "sandbox": "read-only", "approval": "never"})
    files, write = asyncio.run(serve(config, folders[:1] * 2))
    check("read-only: still reads", "marker of project one" in files[folders[0]], files)
    check("read-only: the write is refused and nothing is written",
          bool(getattr(write, "isError", False) or getattr(write, "is_error", False))
          and not os.path.exists(os.path.join(folders[0], "written.txt")), write)

    print(f"{len(failures)} failed, kept {TMP}" if failures else "all passed")
    if not failures:
        shutil.rmtree(TMP, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
