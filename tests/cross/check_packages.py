#!/usr/bin/env python3
"""CI check of npm platform packages built for another OS (cross builds that cannot run here).

tests/cross/check_packages.py OUT_DIR PLATFORM...: for each PLATFORM (`darwin-arm64`,
`darwin-x64`, `win32-x64`, `linux-arm64`), OUT_DIR holds `toolbelt-mcp-PLATFORM-VERSION.tgz`,
whose package.json installs on that OS and CPU only, and whose binary is an executable for them:
- macOS: `bin/toolbelt-mcp`, a Mach-O executable of that CPU, signed on arm64 (arm64 Macs run
  nothing unsigned), linking only system libraries and frameworks by their install paths;
- Windows: `bin/toolbelt-mcp.exe`, a PE32+ console executable for x86-64 importing only DLLs
  every Windows has (none of mingw's runtime DLLs, which a user would not have);
- Linux: `bin/toolbelt-mcp`, a static ELF executable (no interpreter, no shared library) of
  that CPU.
And the launcher, installed with the platform package as on that OS and CPU (`npm install --os
--cpu --force`, offline, from the tarballs), names that package's binary.
"""
import json
import os
import struct
import subprocess
import sys
import tarfile
import tempfile

VERSION = json.load(open(os.path.join(os.path.dirname(__file__), "../../npm/toolbelt-mcp/package.json")))["version"]
CPU_TYPES = {"arm64": 0x0100000C, "x64": 0x01000007}
LC_LOAD_DYLIB, LC_CODE_SIGNATURE, MH_EXECUTE = 0xC, 0x1D, 0x2
ELF_MACHINES = {"arm64": 183, "x64": 62}
PE_MACHINES = {"x64": 0x8664}
PE32_PLUS, CONSOLE = 0x20B, 3
# DLLs of Windows itself (lowercase); `api-ms-win-*` API sets resolve to them too.
WINDOWS_DLLS = {
    "advapi32.dll", "bcrypt.dll", "bcryptprimitives.dll", "crypt32.dll", "kernel32.dll", "msvcrt.dll",
    "ntdll.dll", "ole32.dll", "oleaut32.dll", "psapi.dll", "rpcrt4.dll", "secur32.dll", "shell32.dll",
    "user32.dll", "userenv.dll", "ws2_32.dll", "iphlpapi.dll", "ncrypt.dll",
}


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


def check_pe(data: bytes, cpu: str) -> list[str]:
    assert data[:2] == b"MZ", "not a PE file (no MZ header)"
    pe = struct.unpack_from("<I", data, 0x3C)[0]
    assert data[pe:pe + 4] == b"PE\0\0", "not a PE file (no PE signature)"
    machine, sections, _, _, _, optional_size, _ = struct.unpack_from("<HHIIIHH", data, pe + 4)
    assert machine == PE_MACHINES[cpu], f"machine {machine:#x}, expected {cpu}"
    optional = pe + 24
    magic, subsystem = struct.unpack_from("<H", data, optional)[0], struct.unpack_from("<H", data, optional + 68)[0]
    assert magic == PE32_PLUS, f"optional header magic {magic:#x}, expected PE32+"
    assert subsystem == CONSOLE, f"subsystem {subsystem}, expected a console program (stdio is the protocol)"
    imports_rva = struct.unpack_from("<I", data, optional + 120)[0]
    table = []
    for i in range(sections):
        header = optional + optional_size + 40 * i
        virtual_size, address, raw_size, raw_offset = struct.unpack_from("<IIII", data, header + 8)
        table.append((address, max(virtual_size, raw_size), raw_offset))

    def at(rva: int) -> int:
        for address, size, raw in table:
            if address <= rva < address + size:
                return rva - address + raw
        raise AssertionError(f"rva {rva:#x} is in no section")

    dlls, entry = [], at(imports_rva)
    while True:
        name_rva = struct.unpack_from("<IIIII", data, entry)[3]
        if name_rva == 0:
            break
        start = at(name_rva)
        dlls.append(data[start:data.index(b"\0", start)].decode().lower())
        entry += 20
    for dll in dlls:
        assert dll in WINDOWS_DLLS or dll.startswith("api-ms-win-"), f"imports {dll}, which Windows does not ship"
    return sorted(set(dlls))


def check_elf(data: bytes, cpu: str) -> list[str]:
    assert data[:4] == b"\x7fELF" and data[4] == 2, "not a 64-bit ELF file"
    elf_type, machine = struct.unpack_from("<HH", data, 16)
    assert machine == ELF_MACHINES[cpu], f"machine {machine}, expected {cpu}"
    assert elf_type in (2, 3), f"ELF type {elf_type}, expected an executable"
    program_headers, entry_size, count = struct.unpack_from("<Q", data, 32)[0], *struct.unpack_from("<HH", data, 54)
    pt_interp, pt_dynamic, dt_needed = 3, 2, 1
    dynamic = False
    for i in range(count):
        header = program_headers + i * entry_size
        kind = struct.unpack_from("<I", data, header)[0]
        assert kind != pt_interp, "has an interpreter (a dynamic executable): the package must be static"
        if kind == pt_dynamic:
            dynamic = True
            offset, size = struct.unpack_from("<Q", data, header + 8)[0], struct.unpack_from("<Q", data, header + 32)[0]
            tags = [struct.unpack_from("<q", data, offset + j)[0] for j in range(0, size, 16)]
            assert dt_needed not in tags, "needs shared libraries: the package must be static"
    return ["nothing (static-pie)" if dynamic else "nothing (static)"]


def check_launcher(out: str, platform: str) -> str:
    """Installs the launcher and the platform package as npm on `platform` would, and asks the
    launcher which binary it runs there: the package's, which must exist."""
    os_name, cpu = platform.split("-")
    tarballs = [os.path.join(out, f"toolbelt-mcp-{VERSION}.tgz"), os.path.join(out, f"toolbelt-mcp-{platform}-{VERSION}.tgz")]
    with tempfile.TemporaryDirectory(prefix="toolbelt-launcher-") as prefix:
        env = dict(os.environ, npm_config_offline="true", npm_config_cache=os.path.join(prefix, ".cache"),
                   npm_config_audit="false", npm_config_fund="false", npm_config_update_notifier="false")
        # `--force`: npm refuses a package of another platform named directly (not as an
        # optional dependency), even with `--os` and `--cpu`.
        subprocess.run(["npm", "install", "--prefix", prefix, f"--os={os_name}", f"--cpu={cpu}", "--force", *tarballs],
                       env=env, check=True, capture_output=True)
        launcher = os.path.join(prefix, "node_modules", "toolbelt-mcp", "bin", "toolbelt-mcp.js")
        ask = "process.stdout.write(require(process.argv[1]).binary(process.argv[2], process.argv[3]))"
        named = subprocess.run(["node", "-e", ask, launcher, os_name, cpu], check=True, capture_output=True, text=True).stdout
        binary = "toolbelt-mcp.exe" if os_name == "win32" else "toolbelt-mcp"
        expected = os.path.join(prefix, "node_modules", f"toolbelt-mcp-{platform}", "bin", binary)
        assert named == expected, f"the launcher runs {named}, expected {expected}"
        assert os.path.isfile(named), f"{named} is not installed"
    return named[len(prefix):]


def main() -> int:
    out, platforms = sys.argv[1], sys.argv[2:]
    for platform in platforms:
        os_name, cpu = platform.split("-")
        path = os.path.join(out, f"toolbelt-mcp-{platform}-{VERSION}.tgz")
        with tarfile.open(path) as tar:
            pkg = json.load(tar.extractfile("package/package.json"))
            assert pkg["name"] == f"toolbelt-mcp-{platform}" and pkg["version"] == VERSION, pkg
            assert pkg["os"] == [os_name] and pkg["cpu"] == [cpu], pkg
            member = tar.getmember("package/bin/toolbelt-mcp" + (".exe" if os_name == "win32" else ""))
            assert member.mode & 0o111, "the binary is not executable"
            check = {"darwin": check_macho, "win32": check_pe, "linux": check_elf}[os_name]
            dylibs = check(tar.extractfile(member).read(), cpu)
        print(f"{platform}: {os.path.basename(path)} ok ({member.size // 1024} KiB, links {', '.join(dylibs)})")
        print(f"{platform}: the launcher installed as on {platform} runs <prefix>{check_launcher(out, platform)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
