#!/usr/bin/env python3
"""CI check of the MCP Registry entry: `server.json` (and, given a bundle, the release entry
`packaging/registry_entry.py` makes from it) against the registry's published JSON Schema,
pinned in `schemas/mcp-registry/` (see SOURCE.md there), with formats checked. Entries the
schema must refuse (a name without a namespace, a version range as `latest`, a bundle without
its hash) are refused, so a validator that accepts everything fails here.

Usage: python3 tests/packaging/check_server_json.py [BUNDLE.mcpb]
"""

import copy
import json
import os
import subprocess
import sys
import tempfile

import jsonschema

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
failures = []


def check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else f": {detail}"), flush=True)
    if not ok:
        failures.append(name)


def errors(validator, entry):
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(entry)]


def main():
    with open(os.path.join(REPO, "schemas", "mcp-registry", "server.schema.json")) as file:
        schema = json.load(file)
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    with open(os.path.join(REPO, "server.json")) as file:
        server = json.load(file)
    found = errors(validator, server)
    check("server.json is valid against the registry's schema", not found, found)
    check("server.json names the schema it is valid against", server.get("$schema") == schema["$id"], server.get("$schema"))

    bad_name, latest, unhashed = copy.deepcopy(server), copy.deepcopy(server), copy.deepcopy(server)
    bad_name["name"] = "toolbelt-mcp"
    latest["packages"][0]["version"] = "latest"
    unhashed["packages"].append({"registryType": "mcpb", "identifier": "https://github.com/o/r/releases/download/v1/x.mcpb",
                                 "transport": {"type": "stdio"}, "fileSha256": "not-a-hash"})
    for what, entry in (("a name without a namespace", bad_name), ("`latest` as a version", latest),
                        ("a bundle whose hash is not one", unhashed)):
        check(f"the schema refuses {what}", bool(errors(validator, entry)))

    if len(sys.argv) > 1:
        version = server["version"]
        url = f"{server['repository']['url']}/releases/download/v{version}/toolbelt-mcp-{version}.mcpb"
        out = os.path.join(tempfile.mkdtemp(prefix="toolbelt-registry-"), "server.json")
        subprocess.run([sys.executable, os.path.join(REPO, "packaging", "registry_entry.py"), sys.argv[1], url, out], check=True)
        with open(out) as file:
            release = json.load(file)
        found = errors(validator, release)
        bundle = [p for p in release["packages"] if p["registryType"] == "mcpb"]
        check("the release entry with the bundle is valid, its hash that of the bundle built",
              not found and len(bundle) == 1 and len(bundle[0]["fileSha256"]) == 64, found or bundle)

    print(f"{len(failures)} failed" if failures else "all passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
