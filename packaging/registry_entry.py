#!/usr/bin/env python3
"""Writes the MCP Registry entry of a release: `server.json` with the MCP Bundle added as a
package (its download URL on the release and its SHA-256, which the registry requires of a
bundle and a client checks before running it). See docs/RELEASING.md.

Usage: python3 packaging/registry_entry.py BUNDLE.mcpb URL OUT.json
"""

import hashlib
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def entry(bundle, url):
    with open(os.path.join(REPO, "server.json")) as file:
        server = json.load(file)
    with open(bundle, "rb") as file:
        sha256 = hashlib.sha256(file.read()).hexdigest()
    server["packages"] = [p for p in server["packages"] if p["registryType"] != "mcpb"] + [{
        "registryType": "mcpb",
        "identifier": url,
        "version": server["version"],
        "fileSha256": sha256,
        "transport": {"type": "stdio"},
    }]
    return server


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    bundle, url, out = sys.argv[1:]
    if not url.startswith("https://github.com/") or not url.endswith(".mcpb"):
        sys.exit(f"packaging/registry_entry.py: `{url}` is not a GitHub release asset ending in `.mcpb`: the registry takes bundles from GitHub or GitLab releases only")
    with open(out, "w") as file:
        json.dump(entry(bundle, url), file, indent=2)
        file.write("\n")


if __name__ == "__main__":
    main()
