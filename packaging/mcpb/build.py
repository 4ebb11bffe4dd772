#!/usr/bin/env python3
"""Builds `toolbelt-mcp.mcpb`, the MCP Bundle Claude Desktop installs with a double click, from
the npm platform packages `npm/pack.sh` writes (the same binaries npm ships).

Usage: python3 packaging/mcpb/build.py OUT.mcpb NPM_DIR...

Each NPM_DIR holds `toolbelt-mcp-<platform>-<version>.tgz` tarballs. The bundle carries every
platform found: `darwin` (one universal binary of `darwin-arm64` and `darwin-x64`, both needed:
a bundle picks its entry by OS only, not by CPU), `win32-x64` and `linux-x64`. Its tool list is
read from the binary of this machine's platform (it must be among them). Then the official CLI
(`@anthropic-ai/mcpb`, pinned in `packaging/package.json`: `npm ci --prefix packaging`)
validates the manifest and packs the bundle; `mcpb info` prints its size.
"""

import asyncio
import glob
import json
import os
import platform
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MCPB = os.path.join(REPO, "packaging", "node_modules", ".bin", "mcpb")
# Where each npm platform's binary goes in the bundle (the manifest names these paths).
PLACES = {
    "linux-x64": "server/linux-x64/toolbelt-mcp",
    "win32-x64": "server/win32-x64/toolbelt-mcp.exe",
}
DARWIN = ("darwin-arm64", "darwin-x64")
DARWIN_PLACE = "server/darwin/toolbelt-mcp"


class BuildError(Exception):
    """A bundle that cannot be built, with what to do."""


def cargo_version():
    with open(os.path.join(REPO, "Cargo.toml")) as cargo:
        for line in cargo:
            if line.startswith("version = "):
                return line.split('"')[1]
    raise BuildError("no `version = ` line in Cargo.toml")


def binaries(npm_dirs, version, scratch):
    """{platform: path of its extracted binary} from the platform tarballs in `npm_dirs`,
    extracted under `scratch`."""
    found = {}
    for npm_dir in npm_dirs:
        for tgz in glob.glob(os.path.join(npm_dir, f"toolbelt-mcp-*-{version}.tgz")):
            name = os.path.basename(tgz)[len("toolbelt-mcp-") : -len(f"-{version}.tgz")]
            out = os.path.join(scratch, name)
            with tarfile.open(tgz) as archive:
                archive.extractall(out, filter="data")
            exe = ".exe" if name.startswith("win32") else ""
            found[name] = os.path.join(out, "package", "bin", "toolbelt-mcp" + exe)
    if not found:
        raise BuildError(f"no `toolbelt-mcp-<platform>-{version}.tgz` in {npm_dirs}: run `npm/pack.sh DIR [TARGET]` first")
    return found


def universal_macho(slices, out):
    """Writes the fat (universal) Mach-O `lipo -create` makes from thin 64-bit Mach-O files:
    a big-endian header, one `fat_arch` per slice (CPU type and subtype copied from the
    slice), each slice at an offset aligned to its page size (16 KiB for arm64, 4 KiB for
    x86-64, as lipo aligns them). Each slice is copied byte for byte, so its signature holds."""
    thin = []
    for path in slices:
        with open(path, "rb") as file:
            data = file.read()
        magic, cputype, cpusubtype = struct.unpack_from("<III", data)
        if magic != 0xFEEDFACF:
            raise BuildError(f"`{path}` is not a thin 64-bit Mach-O file (magic {magic:#x})")
        align = 14 if cputype == 0x0100000C else 12
        thin.append((cputype, cpusubtype, align, data))
    header = struct.pack(">II", 0xCAFEBABE, len(thin))
    offset = len(header) + 20 * len(thin)
    entries, body = [], b""
    for cputype, cpusubtype, align, data in thin:
        start = -(-offset // (1 << align)) * (1 << align)
        body += b"\0" * (start - offset) + data
        entries.append(struct.pack(">iiIII", cputype, cpusubtype, start, len(data), align))
        offset = start + len(data)
    with open(out, "wb") as file:
        file.write(header + b"".join(entries) + body)
    os.chmod(out, 0o755)


def host_platform():
    system = {"Linux": "linux", "Darwin": "darwin", "Windows": "win32"}.get(platform.system(), "")
    cpu = {"x86_64": "x64", "AMD64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), "")
    return f"{system}-{cpu}"


async def listed_tools(binary):
    """The tools this build offers (name and first sentence), asked of the binary itself."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    root = tempfile.mkdtemp(prefix="toolbelt-mcpb-root-")
    env = dict(os.environ, XDG_STATE_HOME=os.path.join(root, ".state"), TOOLBELT_AUDIT_LOG="off")
    params = StdioServerParameters(command=binary, args=["serve", "--root", root], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
    shutil.rmtree(root, ignore_errors=True)
    first = lambda text: text.split("\n")[0].split(". ")[0].rstrip(".") + "."
    return [{"name": tool.name, "description": first(tool.description)} for tool in tools]


def run(cmd, **kwargs):
    result = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise BuildError(f"`{' '.join(cmd)}` failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return result.stdout


def build(out, npm_dirs):
    version = cargo_version()
    with open(os.path.join(HERE, "manifest.json")) as file:
        manifest = json.load(file)
    if manifest["version"] != version:
        raise BuildError(f"packaging/mcpb/manifest.json has version {manifest['version']}, Cargo.toml {version}: make them equal")
    if not os.path.exists(MCPB):
        raise BuildError(f"`{MCPB}` is missing: run `npm ci --prefix packaging` first")
    with tempfile.TemporaryDirectory(prefix="toolbelt-mcpb-") as scratch:
        stage = os.path.join(scratch, "stage")
        os.mkdir(stage)
        found = binaries(npm_dirs, version, scratch)
        platforms = assemble(manifest, found, stage)
        print(run([MCPB, "validate", os.path.join(stage, "manifest.json")]).strip())
        out = os.path.abspath(out)
        if os.path.exists(out):
            os.remove(out)
        print(run([MCPB, "pack", stage, out]).strip().splitlines()[-1])
    print(run([MCPB, "info", out]).strip())
    print(f"{out}: {os.path.getsize(out)} bytes, platforms {', '.join(platforms)}")


def assemble(manifest, found, stage):
    """Stages the bundle's files in `stage`: the icon, each platform's entry, the manifest
    naming exactly those platforms and the tools. Returns the platforms."""
    shutil.copy(os.path.join(HERE, "icon.png"), stage)

    platforms = []
    darwin = [found[name] for name in DARWIN if name in found]
    if darwin and len(darwin) != len(DARWIN):
        raise BuildError("a bundle for macOS needs both `darwin-arm64` and `darwin-x64` (it cannot pick by CPU): pack both")
    if darwin:
        os.makedirs(os.path.join(stage, os.path.dirname(DARWIN_PLACE)))
        universal_macho(darwin, os.path.join(stage, DARWIN_PLACE))
        platforms.append("darwin")
    overrides = manifest["server"]["mcp_config"]["platform_overrides"]
    for name, place in PLACES.items():
        os_name = name.split("-")[0]
        if name not in found:
            overrides.pop(os_name, None)
            continue
        os.makedirs(os.path.join(stage, os.path.dirname(place)))
        shutil.copy(found[name], os.path.join(stage, place))
        os.chmod(os.path.join(stage, place), 0o755)
        platforms.append(os_name)
    if "darwin" not in platforms:
        # The base entry is macOS's: without it, the first other platform's becomes the base.
        first = next(iter(overrides))
        manifest["server"]["mcp_config"]["command"] = overrides.pop(first)["command"]
        manifest["server"]["entry_point"] = manifest["server"]["mcp_config"]["command"].replace("${__dirname}/", "")
    manifest["compatibility"]["platforms"] = platforms

    host = host_platform()
    if host not in found:
        raise BuildError(f"the tool list is read from this machine's binary ({host}), which is not among {sorted(found)}: pack it too")
    manifest["tools"] = asyncio.run(listed_tools(found[host]))
    with open(os.path.join(stage, "manifest.json"), "w") as file:
        json.dump(manifest, file, indent=2)
        file.write("\n")
    return platforms


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    try:
        build(sys.argv[1], sys.argv[2:])
    except BuildError as error:
        sys.exit(f"packaging/mcpb/build.py: {error}")


if __name__ == "__main__":
    main()
