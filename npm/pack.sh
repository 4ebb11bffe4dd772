#!/usr/bin/env bash
# npm/pack.sh OUT_DIR [TARGET]: builds the `dist` binary (cargo skips it when it is up to
# date) and writes two `npm pack` tarballs into OUT_DIR: the launcher package `toolbelt-mcp`
# and the platform package of this machine (`toolbelt-mcp-linux-x64`, …) holding the binary.
# TARGET is a Rust target triple, e.g. `x86_64-unknown-linux-musl` for a static binary
# (`rustup target add` it, and install musl-tools); `aarch64-unknown-linux-musl`,
# `aarch64-apple-darwin` or `x86_64-apple-darwin`, cross-built with cargo-zigbuild (pip install
# ziglang cargo-zigbuild); or `x86_64-pc-windows-gnu`, linked by mingw-w64 (Debian's
# `mingw-w64`), whose binary is `bin/toolbelt-mcp.exe`. Default: the host's. A binary of another
# platform is not run (`--version`) here.
# `npm install OUT_DIR/*.tgz` then gives a working `toolbelt-mcp` command, offline.
set -euo pipefail

out="${1:?usage: npm/pack.sh OUT_DIR [TARGET]}"
target="${2:-}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
# Where cargo builds: `CARGO_TARGET_DIR` when set (relative to the repository, where cargo runs
# below), else the repository's `target/`.
build_dir="${CARGO_TARGET_DIR:-target}"
case "$build_dir" in /*) ;; *) build_dir="$repo/$build_dir" ;; esac
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# The platform: the target's when one is given (cross builds: macOS with cargo-zigbuild),
# else this machine's.
host="$(uname -s)-$(uname -m)"
case "${target:-$host}" in
  x86_64-unknown-linux-*|Linux-x86_64) platform=linux-x64 os=linux cpu=x64 ;;
  aarch64-unknown-linux-*|Linux-aarch64) platform=linux-arm64 os=linux cpu=arm64 ;;
  x86_64-apple-darwin|Darwin-x86_64) platform=darwin-x64 os=darwin cpu=x64 ;;
  aarch64-apple-darwin|Darwin-arm64) platform=darwin-arm64 os=darwin cpu=arm64 ;;
  x86_64-pc-windows-gnu) platform=win32-x64 os=win32 cpu=x64 ;;
  *) echo "npm/pack.sh: no npm platform package for ${target:-$host}" >&2; exit 1 ;;
esac
# Windows runs `.exe` files only.
exe=""
[ "$os" = win32 ] && exe=.exe
# The packages ship the `dist` profile (fat LTO, see Cargo.toml); PROFILE=release packs the
# release build, PROFILE=debug the debug build (CI's cross builds).
profile="${PROFILE:-dist}"
profile_flag=(--profile "$profile")
[ "$profile" = debug ] && profile_flag=()

version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/Cargo.toml" | head -n 1)"
launcher="$repo/npm/toolbelt-mcp"
# The launcher's version and its platform dependencies must be the binary's version.
node -e '
  const [file, version] = process.argv.slice(1);
  const pkg = require(file);
  const wrong = [["version", pkg.version], ...Object.entries(pkg.optionalDependencies)].filter(([, v]) => v !== version);
  if (wrong.length) {
    console.error(`npm/pack.sh: ${file} has ${wrong.map(([k, v]) => `${k} ${v}`).join(", ")}, but Cargo.toml says ${version}: make them equal`);
    process.exit(1);
  }
' "$launcher/package.json" "$version"

# Linux builds linked here (not zig's) get their start-up code laid out together, so an idle
# server keeps about 1 MiB of code resident instead of 7-8 (npm/link-ordered.py): the wrapper
# is the target's linker. Not for debug builds, which are CI's cross checks.
triple="${target:-$(rustc -vV | sed -n 's/^host: //p')}"
link_env=()
case "$profile-$triple" in
  debug-*) ;;
  *-x86_64-unknown-linux-*) link_env=(TOOLBELT_LAYOUT_STRICT=1 "CARGO_TARGET_$(tr 'a-z-' 'A-Z_' <<< "$triple")_LINKER=$repo/npm/link-ordered.py") ;;
esac

case "$target" in
  *-apple-darwin)
    # No Apple SDK on Linux: zig links against stubs of the frameworks the build uses.
    stubs="$repo/target/macos-sdk-stubs"
    (cd "$repo" && python3 tests/cross/macos_sdk_stubs.py "$stubs" "$target" >/dev/null \
      && SDKROOT="$stubs" cargo-zigbuild zigbuild ${profile_flag[@]+"${profile_flag[@]}"} --locked --target "$target")
    binary="$build_dir/$target/$profile/toolbelt-mcp" ;;
  aarch64-unknown-linux-*)
    # zig is the C toolchain and linker (a static binary with the musl target). A debug build
    # carries ~250 MB of DWARF: its package gets the binary without (the linker strips it).
    (cd "$repo" && CARGO_PROFILE_DEV_STRIP=debuginfo \
      cargo-zigbuild zigbuild ${profile_flag[@]+"${profile_flag[@]}"} --locked --target "$target")
    binary="$build_dir/$target/$profile/toolbelt-mcp" ;;
  x86_64-pc-windows-gnu)
    (cd "$repo" && CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER="${CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER:-x86_64-w64-mingw32-gcc}" \
      cargo build ${profile_flag[@]+"${profile_flag[@]}"} --locked --target "$target")
    binary="$build_dir/$target/$profile/toolbelt-mcp.exe" ;;
  "")
    (cd "$repo" && env ${link_env[@]+"${link_env[@]}"} cargo build ${profile_flag[@]+"${profile_flag[@]}"} --locked)
    binary="$build_dir/$profile/toolbelt-mcp" ;;
  *)
    (cd "$repo" && env ${link_env[@]+"${link_env[@]}"} cargo build ${profile_flag[@]+"${profile_flag[@]}"} --locked --target "$target")
    binary="$build_dir/$target/$profile/toolbelt-mcp" ;;
esac
if [ "$os-$cpu" = "$(node -p 'process.platform + "-" + process.arch')" ]; then
  built="$("$binary" --version)"
  if [ "$built" != "toolbelt-mcp $version" ]; then
    echo "npm/pack.sh: $binary says \`$built\`, expected \`toolbelt-mcp $version\`" >&2
    exit 1
  fi
fi

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

# The platform package: the binary and a package.json npm only installs on this os and cpu.
mkdir -p "$stage/platform/bin"
cp "$binary" "$stage/platform/bin/toolbelt-mcp$exe"
chmod 755 "$stage/platform/bin/toolbelt-mcp$exe"
# A debug build of the Windows binary carries ~300 MB of DWARF (release builds are stripped by
# their profile): the package gets it without.
if [ "$os" = win32 ] && [ "$profile" = debug ]; then
  "${STRIP_WINDOWS:-x86_64-w64-mingw32-strip}" --strip-debug "$stage/platform/bin/toolbelt-mcp$exe"
fi
node -e '
  const [dir, name, version, os, cpu, exe] = process.argv.slice(1);
  const pkg = {
    name, version,
    description: `The ${os}-${cpu} binary of toolbelt-mcp (installed by the \`toolbelt-mcp\` package)`,
    license: "Apache-2.0",
    os: [os], cpu: [cpu],
    files: [`bin/toolbelt-mcp${exe}`],
    preferUnplugged: true,
  };
  require("fs").writeFileSync(`${dir}/package.json`, JSON.stringify(pkg, null, 2) + "\n");
' "$stage/platform" "toolbelt-mcp-$platform" "$version" "$os" "$cpu" "$exe"

cp -R "$launcher" "$stage/launcher"
(cd "$stage/platform" && npm pack --silent --pack-destination "$out" >/dev/null)
(cd "$stage/launcher" && npm pack --silent --pack-destination "$out" >/dev/null)
echo "$out/toolbelt-mcp-$platform-$version.tgz"
echo "$out/toolbelt-mcp-$version.tgz"
