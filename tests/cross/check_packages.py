#!/usr/bin/env python3
"""CI check of npm platform packages built for another OS (cross builds that cannot run here).

tests/cross/check_packages.py OUT_DIR PLATFORM...: for each PLATFORM (`darwin-arm64`,
`darwin-x64`), OUT_DIR holds `toolbelt-mcp-PLATFORM-VERSION.tgz`, whose package.json installs
on that OS and CPU only, and whose `bin/toolbelt-mcp` is an executable for them: a Mach-O
executable of that CPU, signed on arm64 (arm64 Macs run nothing unsigned), linking only system
libraries and frameworks by their install paths.
"""
import json
import os
import struct
import sys
import tarfile

VERSION = json.load(open(os.path.join(os.path.dirname(__file__), "../../npm/toolbelt-mcp/package.json")))["version"]
CPU_TYPES = {"arm64": 0x0100000C, "x64": 0x01000007}
LC_LOAD_DYLIB, LC_CODE_SIGNATURE, MH_EXECUTE = 0xC, 0x1D, 0x2


def check_macho(data: bytes, cpu: str) -> list[str]:
    magic, cputype, _, filetype, ncmds, _, _, _ = struct.unpack("<IiiIIIII", data[:32])
    assert magic == 0xFEEDFACF, f"not a 64-bit Mach-O (magic {magic:#x})"
    assert cputype == CPU_TYPES[cpu], f"cpu type {cputype:#x}, expected {cpu}"
    assert filetype == MH_EXECUTE, f"file type {filetype}, expected an executable"
    offset, commands, dylibs = 32, [], []
    for _ in range(ncmds):
        cmd, size = struct.unpack("<II", data[offset:offset + 8])
        commands.append(cmd)
        if cmd == LC_LOAD_DYLIB:
            name_offset = struct.unpack("<I", data[offset + 8:offset + 12])[0]
            dylibs.append(data[offset + name_offset:offset + size].split(b"\0")[0].decode())
        offset += size
    # arm64 Macs run nothing unsigned (the linker signs ad hoc); x86-64 Macs do not ask.
    if cpu == "arm64":
        assert LC_CODE_SIGNATURE in commands, "not signed (no LC_CODE_SIGNATURE)"
    for dylib in dylibs:
        assert dylib.startswith(("/usr/lib/", "/System/Library/Frameworks/")), f"links a non-system library {dylib}"
    return dylibs


def main() -> int:
    out, platforms = sys.argv[1], sys.argv[2:]
    for platform in platforms:
        os_name, cpu = platform.split("-")
        path = os.path.join(out, f"toolbelt-mcp-{platform}-{VERSION}.tgz")
        with tarfile.open(path) as tar:
            pkg = json.load(tar.extractfile("package/package.json"))
            assert pkg["name"] == f"toolbelt-mcp-{platform}" and pkg["version"] == VERSION, pkg
            assert pkg["os"] == [os_name] and pkg["cpu"] == [cpu], pkg
            member = tar.getmember("package/bin/toolbelt-mcp")
            assert member.mode & 0o111, "the binary is not executable"
            dylibs = check_macho(tar.extractfile(member).read(), cpu)
        print(f"{platform}: {os.path.basename(path)} ok ({member.size // 1024} KiB, links {', '.join(dylibs)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
