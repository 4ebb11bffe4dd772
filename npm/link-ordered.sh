#!/bin/sh
# The linker of x86-64 glibc Linux builds (.cargo/config.toml): npm/link-ordered.py lays out the
# program's start-up code together; without python3 the link is plain, as it would be with `cc`.
here=${0%/*}
if command -v python3 >/dev/null 2>&1; then
  exec python3 "$here/link-ordered.py" "$@"
fi
exec "${TOOLBELT_REAL_LINKER:-cc}" "$@"
