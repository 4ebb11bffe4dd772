"""Checks shared by the cross-platform smoke tests (`wine_smoke.py`, `qemu_smoke.py`): each
check prints PASS or FAIL with its name, and the run ends with the counts and an exit code."""

from __future__ import annotations

import os
from typing import Any, Awaitable, Callable

import anyio

PASSED: list[str] = []
FAILED: list[str] = []


def check(name: str, ok: bool, detail: str = "") -> None:
    (PASSED if ok else FAILED).append(name)
    print(f"{'PASS' if ok else 'FAIL'} {name}" + (f" -- {detail}" if not ok and detail else ""), flush=True)


def field(obj: Any, *names: str) -> Any:
    """The first of `names` that `obj` has (the SDK's snake_case or the wire's camelCase)."""
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
    return None


def text(res: Any) -> str:
    return "\n".join(getattr(c, "text", "") or "" for c in (res.content or []))


def failed(res: Any) -> bool:
    return bool(field(res, "is_error", "isError"))


def run_smoke(smoke: Callable[..., Awaitable[None]], *args: Any, timeout_env: str, default_s: float) -> None:
    """Runs `smoke(*args)` within `$timeout_env` seconds (else `default_s`); any exception is a
    failed check, reported."""

    async def within_time() -> None:
        with anyio.fail_after(float(os.environ.get(timeout_env, str(default_s)))):
            await smoke(*args)

    try:
        anyio.run(within_time)
    except Exception as err:  # noqa: BLE001 -- any failure is a failed check, reported
        check("the smoke run completes", False, f"{type(err).__name__}: {err}")


def report() -> int:
    """Prints the counts; the exit code: 1 if any check failed."""
    print(f"{len(PASSED)} passed, {len(FAILED)} failed")
    return 1 if FAILED else 0
