#!/usr/bin/env python3
"""A linker wrapper that lays out toolbelt-mcp's start-up code together (ELF targets).

The server touches about 1 MB of its 16 MB of code to start and answer `tools/list`, but that
code is spread over the whole text segment, and the kernel maps every page in a 64 KB window
around each page fault: the idle server kept 7-8 MiB of code resident. Linked with the
functions of `link-order.txt` first (lld's `--symbol-ordering-file`), it keeps 3-3.5 MiB
(the static build, `tests/interop/idle_rss.py`).

Use it as the linker of a target (`npm/pack.sh` and `.ci/run` do, for the packaged Linux builds):

    TOOLBELT_LAYOUT_STRICT=1 \
    CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_LINKER=npm/link-ordered.py cargo build --profile dist ...

`.cargo/config.toml` makes it (through `npm/link-ordered.sh`, which links plainly where there is
no python3) the linker of x86-64 glibc Linux builds, so `cargo build --release` and `cargo run
--release` in this checkout get the same layout. Debug builds link plainly (the output's profile
directory is `debug`). Without TOOLBELT_LAYOUT_STRICT=1, a layout that cannot be made (no lld, a
stale list) is reported on stderr and the program linked plainly: a user's build never fails for
want of a faster start; the packaged builds set it, so theirs does.

`link-order.txt` names functions without their mangling hashes (as `nm -C` prints them), so it
stays true across builds and dependency updates; at each link the names are matched to the
symbols of this build: the program is linked once to read its symbol table, then again with
the order. Other links (build scripts) pass through unchanged. The real linker is `cc`, or
TOOLBELT_REAL_LINKER; lld is used (Rust's own `rust-lld`) when the link does not already.
Regenerate the list with `npm/collect-link-order.py` when the check below says it is stale;
with TOOLBELT_KEEP_SYMBOLS=PATH the first link's output (the same program, its symbols kept) is
copied to PATH, which is what that script needs, without a second, unstripped build.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = HERE / "link-order.txt"
# Below this share of the list found in the build, the list is stale: the build fails and says
# how to regenerate it, rather than ship a binary that silently lost its layout.
MIN_FOUND = 0.5
# What rustc passes to strip the output: dropped from the first link, which reads symbols.
STRIP_FLAGS = {"-s", "-Wl,-s", "-Wl,--strip-all", "-Wl,--strip-debug", "-Wl,-S"}


def fail(message: str, real: str, args: list[str]) -> int:
    """Strict: the link fails with `message`. Otherwise it is a note and the link is plain."""
    print(f"npm/link-ordered.py: {message}", file=sys.stderr)
    if os.environ.get("TOOLBELT_LAYOUT_STRICT") == "1":
        return 1
    print("npm/link-ordered.py: linking without the start-up layout", file=sys.stderr)
    return subprocess.call([real, *args])


def lld_flags(args: list[str]) -> list[str]:
    """The flags that make `cc` link with Rust's own lld, unless the link already uses lld."""
    if any(arg.startswith("-fuse-ld=") for arg in args):
        return []
    sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True, check=True).stdout
    host = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    triple = next(line.split(": ", 1)[1] for line in host.splitlines() if line.startswith("host: "))
    gcc_ld = Path(sysroot.strip()) / "lib" / "rustlib" / triple / "bin" / "gcc-ld"
    if not (gcc_ld / "ld.lld").exists():
        raise FileNotFoundError(f"no `ld.lld` in `{gcc_ld}`: install the toolchain's rust-lld (rustup)")
    return [f"-B{gcc_ld}", "-fuse-ld=lld"]


# The crate disambiguators v0 mangling names crates with (`core[6cdcc5c448ae7c26]::ptr`): they
# differ between builds and profiles, so a name is kept without them.
DISAMBIGUATOR = re.compile(r"\[[0-9a-f]{1,16}\]")


def symbols(binary: str) -> dict[str, list[str]]:
    """Each function's demangled name (no hashes) and the symbols that carry it, from `nm`.

    With v0 mangling (`.cargo/config.toml`) a name tells the instances of a generic function
    apart (`drop_in_place::<String>`); with the legacy one they share one name, and a list of
    names would lay out hundreds of instances for the one a server runs."""
    def listing(*flags: str) -> list[str]:
        nm = ["nm", "-p", "--defined-only", *flags, binary]
        return subprocess.run(nm, capture_output=True, text=True, check=True).stdout.splitlines()

    named: dict[str, list[str]] = {}
    for raw, shown in zip(listing(), listing("-C"), strict=True):
        raw_fields, shown_fields = raw.split(" ", 2), shown.split(" ", 2)
        if len(raw_fields) == 3 and raw_fields[1] in "tTwW":
            named.setdefault(DISAMBIGUATOR.sub("", shown_fields[2]), []).append(raw_fields[2])
    return named


def packed_relocations(args: list[str]) -> list[str]:
    """`-z pack-relative-relocs` for a dynamic glibc program where the C library reads it.

    A position-independent program's relative relocations take 24 bytes each in `.rela.dyn`
    (1 MB here), all read at start and kept resident; packed (DT_RELR) they take a few KB. glibc
    reads them from 2.36 on, and a program linked so needs it: the layout is for the machine that
    builds it, so the check is of that machine's glibc. Static (musl) links are left as they are."""
    if any(arg.startswith(("-static", "-Wl,-static")) for arg in args):
        return []
    try:
        name, version = (os.confstr("CS_GNU_LIBC_VERSION") or "").split(" ", 1)
        major, minor = (int(part) for part in version.split(".")[:2])
    except (ValueError, OSError):
        return []
    return ["-Wl,-z,pack-relative-relocs"] if name == "glibc" and (major, minor) >= (2, 36) else []


def wanted() -> list[str]:
    """The names in `link-order.txt`, in order (comments and blank lines skipped)."""
    lines = ORDER.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def main(argv: list[str]) -> int:
    real = os.environ.get("TOOLBELT_REAL_LINKER", "cc")
    args = argv[1:]
    out = args[args.index("-o") + 1] if "-o" in args[:-1] else ""
    # `target/[TRIPLE/]PROFILE/deps/toolbelt_mcp-HASH`: build scripts, tests and debug builds
    # link as they would without this wrapper.
    output = Path(out)
    if not output.name.startswith("toolbelt_mcp-") or output.parent.parent.name == "debug":
        return subprocess.call([real, *args])
    try:
        lld = lld_flags(args)
    except (OSError, subprocess.CalledProcessError, StopIteration) as err:
        return fail(f"cannot find Rust's lld for the ordered link: {err}", real, args)
    try:
        names = wanted()
    except OSError as err:
        return fail(f"cannot read the list of start-up functions `{ORDER}`: {err}", real, args)
    with tempfile.TemporaryDirectory(prefix="toolbelt-link-") as scratch:
        probe = str(Path(scratch) / "probe")
        first = [arg for arg in args if arg not in STRIP_FLAGS]
        first[first.index("-o") + 1] = probe
        if subprocess.call([real, *first, *lld]) != 0:
            return fail("the first link (to read the symbols) failed: see the linker's output above", real, args)
        if keep := os.environ.get("TOOLBELT_KEEP_SYMBOLS"):
            shutil.copy2(probe, keep)
        try:
            found = symbols(probe)
        except (OSError, subprocess.CalledProcessError, ValueError) as err:
            return fail(f"cannot read the symbols of the first link with `nm`: {err}", real, args)
        ordered = [symbol for name in names for symbol in found.get(name, [])]
        matched = sum(1 for name in names if name in found)
        if names and matched < MIN_FOUND * len(names):
            return fail(
                f"only {matched} of the {len(names)} functions in `{ORDER}` are in this build: the list is "
                "stale. Regenerate it: link again with TOOLBELT_KEEP_SYMBOLS=PATH set and run "
                "`python3 npm/collect-link-order.py PATH` (see its header)",
                real,
                args,
            )
        order_file = Path(scratch) / "order.txt"
        order_file.write_text("\n".join(ordered) + "\n", encoding="utf-8")
        layout = [f"-Wl,--symbol-ordering-file={order_file}", "-Wl,--no-warn-symbol-ordering"]
        return subprocess.call([real, *args, *lld, *layout, *packed_relocations(args)])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
