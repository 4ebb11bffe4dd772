#!/usr/bin/env bash
# npm/pack.sh OUT_DIR [TARGET]: builds the release binary (cargo skips it when it is up to
# date) and writes two `npm pack` tarballs into OUT_DIR: the launcher package `toolbelt-mcp`
# and the platform package of this machine (`toolbelt-mcp-linux-x64`, …) holding the binary.
# TARGET is a Rust target triple for this OS and CPU, e.g. `x86_64-unknown-linux-musl` for a
# static binary (`rustup target add` it, and install musl-tools); default: the host's.
# `npm install OUT_DIR/*.tgz` then gives a working `toolbelt-mcp` command, offline.
set -euo pipefail

out="${1:?usage: npm/pack.sh OUT_DIR [TARGET]}"
target="${2:-}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) platform=linux-x64 os=linux cpu=x64 ;;
  Linux-aarch64) platform=linux-arm64 os=linux cpu=arm64 ;;
  Darwin-x86_64) platform=darwin-x64 os=darwin cpu=x64 ;;
  Darwin-arm64) platform=darwin-arm64 os=darwin cpu=arm64 ;;
  *) echo "npm/pack.sh: no npm platform package for $(uname -s) $(uname -m)" >&2; exit 1 ;;
esac

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

if [ -n "$target" ]; then
  (cd "$repo" && cargo build --release --locked --target "$target")
  binary="$repo/target/$target/release/toolbelt-mcp"
else
  (cd "$repo" && cargo build --release --locked)
  binary="$repo/target/release/toolbelt-mcp"
fi
built="$("$binary" --version)"
if [ "$built" != "toolbelt-mcp $version" ]; then
  echo "npm/pack.sh: $binary says \`$built\`, expected \`toolbelt-mcp $version\`" >&2
  exit 1
fi

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

# The platform package: the binary and a package.json npm only installs on this os and cpu.
mkdir -p "$stage/platform/bin"
cp "$binary" "$stage/platform/bin/toolbelt-mcp"
chmod 755 "$stage/platform/bin/toolbelt-mcp"
node -e '
  const [dir, name, version, os, cpu] = process.argv.slice(1);
  const pkg = {
    name, version,
    description: `The ${os}-${cpu} binary of toolbelt-mcp (installed by the \`toolbelt-mcp\` package)`,
    license: "Apache-2.0",
    os: [os], cpu: [cpu],
    files: ["bin/toolbelt-mcp"],
    preferUnplugged: true,
  };
  require("fs").writeFileSync(`${dir}/package.json`, JSON.stringify(pkg, null, 2) + "\n");
' "$stage/platform" "toolbelt-mcp-$platform" "$version" "$os" "$cpu"

cp -R "$launcher" "$stage/launcher"
(cd "$stage/platform" && npm pack --silent --pack-destination "$out" >/dev/null)
(cd "$stage/launcher" && npm pack --silent --pack-destination "$out" >/dev/null)
echo "$out/toolbelt-mcp-$platform-$version.tgz"
echo "$out/toolbelt-mcp-$version.tgz"
