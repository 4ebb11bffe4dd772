#!/usr/bin/env python3
"""Writes the macOS framework stubs a cross-link needs, where no Apple SDK can be had.

tests/cross/macos_sdk_stubs.py OUT_DIR TARGET: for every crate that the build of TARGET (an
Apple triple) uses and that links a system framework (`#[link(name = "Security", kind =
"framework")]`: security-framework-sys, core-foundation-sys, for the agent's TLS trust
store), writes OUT_DIR/System/Library/Frameworks/NAME.framework/NAME.tbd, a text stub (TAPI
v4) that names the framework's install path and the symbols the crate's `extern "C"` blocks
declare. Then `SDKROOT=OUT_DIR cargo zigbuild --target TARGET` links: zig's linker binds the
symbols to the real framework at its install path, which dyld opens on the Mac. Nothing of
Apple's is copied; only names that the -sys crates' own sources give.
"""
import json
import pathlib
import re
import subprocess
import sys

LINK = re.compile(r'link\(\s*name\s*=\s*"([A-Za-z0-9_]+)"\s*,\s*kind\s*=\s*"framework"')
EXTERN = re.compile(r'extern\s+"C"\s*\{(.*?)\n\}', re.S)
ITEM = re.compile(r'pub\s+(?:fn|static(?:\s+mut)?)\s+([A-Za-z_][A-Za-z0-9_]*)')


def main() -> int:
    out, target = pathlib.Path(sys.argv[1]), sys.argv[2]
    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked", "--filter-platform", target],
        check=True, capture_output=True, text=True).stdout)
    used = {node["id"] for node in meta["resolve"]["nodes"]}
    frameworks: dict[str, set[str]] = {}
    for package in meta["packages"]:
        if package["id"] not in used:
            continue
        sources = list(pathlib.Path(package["manifest_path"]).parent.glob("src/**/*.rs"))
        texts = [path.read_text(errors="replace") for path in sources]
        named = {name for text in texts for name in LINK.findall(text)}
        if not named:
            continue
        if len(named) > 1:
            print(f"macos_sdk_stubs: {package['name']} links {sorted(named)}: one framework per crate expected",
                  file=sys.stderr)
            return 1
        symbols = frameworks.setdefault(named.pop(), set())
        for text in texts:
            for block in EXTERN.findall(text):
                symbols.update("_" + name for name in ITEM.findall(block))
    for name, symbols in sorted(frameworks.items()):
        folder = out / "System/Library/Frameworks" / f"{name}.framework"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.tbd").write_text(
            "--- !tapi-tbd\n"
            "tbd-version:     4\n"
            "targets:         [ x86_64-macos, arm64-macos ]\n"
            f"install-name:    '/System/Library/Frameworks/{name}.framework/Versions/A/{name}'\n"
            "exports:\n"
            "  - targets:         [ x86_64-macos, arm64-macos ]\n"
            f"    symbols:         [ {', '.join(sorted(symbols))} ]\n"
            "...\n")
        print(f"{name}: {len(symbols)} symbols")
    return 0


if __name__ == "__main__":
    sys.exit(main())
