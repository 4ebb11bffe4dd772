#!/usr/bin/env python3
"""Checks that code compiled only for some CPUs lives in the sandbox crate's Linux module.

    python3 tests/cross/arch_confined.py [REPO]

CI runs clippy over the whole workspace for x86-64 Linux, arm64 macOS and x64 Windows; for arm64
Linux only over the crate that holds the code that differs by CPU (`crates/sandbox`, its seccomp
filter's syscall numbers), and for x64 macOS not at all (its sandbox code has no such
difference): every other line compiles the same there. That holds only while `target_arch` (and
the other CPU-dependent cfgs) gate items in that crate's `src/linux/` alone. A `cfg!(...)`
expression is fine anywhere: both of its branches compile on every CPU. A build script reading
`CARGO_CFG_TARGET_ARCH` (and the like) and a `cfg(...)` target table in any TOML file count.
Exits 1 naming each place that breaks this, with what to do.

Python 3 standard library only.
"""
import pathlib
import re
import sys

KEYS = r"target_arch|target_env|target_pointer_width|target_endian|target_feature"
ANY = re.compile(rf"\b(?:{KEYS})\b")
# What a build script reads to learn the same (`CARGO_CFG_TARGET_ARCH`, ...).
BUILD_ENV = re.compile(rf"CARGO_CFG_(?:{KEYS.upper()})\b")
ALLOWED = ("crates/sandbox/src/linux/",)
SKIP = {"target", "node_modules", ".git"}


def without_expressions(code: str) -> str:
    """`code` with every `cfg!( ... )` (its parentheses balanced on the line) taken out."""
    out, at = [], 0
    while (start := code.find("cfg!(", at)) != -1:
        out.append(code[at:start])
        depth, end = 0, start + 4
        for end in range(start + 4, len(code)):
            depth += {"(": 1, ")": -1}.get(code[end], 0)
            if depth == 0:
                break
        at = end + 1
    return "".join(out) + code[at:]


def places(repo: pathlib.Path):
    """Every line outside the allowed module that gates items on the CPU: (path, line no, text)."""
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if SKIP.intersection(path.relative_to(repo).parts) or not path.is_file():
            continue
        lines = enumerate(path.read_text(errors="replace").splitlines(), 1) if path.suffix in (".rs", ".toml") else ()
        for number, line in lines:
            if path.suffix == ".toml":
                # A `[target.'cfg(target_arch = ...)'.dependencies]` table (Cargo.toml, .cargo/config.toml).
                hit = line.lstrip().startswith("[") and ANY.search(line)
            elif rel.startswith(ALLOWED):
                continue
            else:
                code = line.split("//", 1)[0]
                hit = ANY.search(without_expressions(code)) or BUILD_ENV.search(code)
            if hit:
                yield rel, number, line.strip()


def main() -> int:
    repo = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[2]).resolve()
    found = list(places(repo))
    for rel, number, text in found:
        print(f"{rel}:{number}: `{text}` depends on the CPU outside `{ALLOWED[0]}`")
    if found:
        print("arch_confined: CI lints arm64 Linux only through `-p toolbelt-mcp-sandbox` and x64 macOS "
              "not at all (.ci/run): move this code into the sandbox crate's `src/linux/`, use a "
              "`cfg!(...)` expression, or widen those clippy runs to the crates that now hold such code")
        return 1
    print("arch_confined: code that differs by CPU is confined to " + ", ".join(ALLOWED))
    return 0


if __name__ == "__main__":
    sys.exit(main())
