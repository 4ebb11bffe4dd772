//! The one-click install manifests (the MCP Registry's `server.json`, the MCP Bundle's manifest,
//! the Claude Code, Codex and Gemini CLI plugins and their marketplaces, the npm launcher) agree
//! with the crate and with each other: one version, one registry name, one repository, the
//! flags and values the binary takes, and the Skills document the server serves. Each format
//! is checked by its own official tool in CI (`tests/packaging/`); this keeps them in step.

use std::path::Path;

use clap::ValueEnum;
use serde_json::Value;
use toolbelt_mcp_core::config::args::Approval;
use toolbelt_mcp_sandbox::mode::SandboxMode;

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn json(path: &str) -> Value {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

fn text(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

fn strings(value: &Value) -> Vec<String> {
    value.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
}

fn values<T: ValueEnum>() -> Vec<String> {
    T::value_variants().iter().map(|v| v.to_possible_value().unwrap().get_name().to_string()).collect()
}

#[test]
fn every_manifest_carries_the_crate_version() {
    let versions = [
        ("server.json", json("server.json")["version"].clone()),
        ("server.json npm package", json("server.json")["packages"][0]["version"].clone()),
        ("npm launcher", json("npm/toolbelt-mcp/package.json")["version"].clone()),
        ("MCP Bundle", json("packaging/mcpb/manifest.json")["version"].clone()),
        ("Claude Code plugin", json("plugins/toolbelt/.claude-plugin/plugin.json")["version"].clone()),
        ("Claude Code marketplace", json(".claude-plugin/marketplace.json")["plugins"][0]["version"].clone()),
        ("Codex plugin", json("plugins/toolbelt/.codex-plugin/plugin.json")["version"].clone()),
        ("Gemini CLI extension", json("plugins/toolbelt/gemini-extension.json")["version"].clone()),
    ];
    for (what, version) in versions {
        assert_eq!(version, VERSION, "{what} says {version}, Cargo.toml {VERSION}");
    }
}

#[test]
fn plugins_run_exactly_this_version_from_npm() {
    let pinned = format!("toolbelt-mcp@{VERSION}");
    let configs = [
        ("Claude Code", json("plugins/toolbelt/.mcp.json")["mcpServers"]["toolbelt"].clone()),
        ("Codex", json("plugins/toolbelt/.codex-mcp.json")["mcpServers"]["toolbelt"].clone()),
        ("Gemini CLI", json("plugins/toolbelt/gemini-extension.json")["mcpServers"]["toolbelt"].clone()),
    ];
    for (host, server) in configs {
        assert_eq!(server["command"], "npx", "{host}");
        // No `--root`: the workspace is the host's, screened by the server like every workspace a
        // host names (a `--root` would be taken as the user's own choice, home or not).
        assert_eq!(strings(&server["args"]), ["-y".to_string(), pinned.clone(), "serve".into()], "{host}");
    }
    assert_eq!(json("plugins/toolbelt/.mcp.json")["mcpServers"]["toolbelt"]["alwaysLoad"], true);
    let codex = json("plugins/toolbelt/.codex-plugin/plugin.json");
    assert_eq!(codex["mcpServers"], "./.codex-mcp.json", "Codex would read Claude Code's `.mcp.json`");
}

#[test]
fn one_name_and_one_repository_everywhere() {
    let server = json("server.json");
    let name = server["name"].as_str().unwrap();
    assert_eq!(json("npm/toolbelt-mcp/package.json")["mcpName"], name, "npm's `mcpName` proves the registry name");
    let repository = server["repository"]["url"].as_str().unwrap();
    assert_eq!(name, format!("io.github.{}", repository.trim_start_matches("https://github.com/")));
    assert_eq!(json("packaging/mcpb/manifest.json")["repository"]["url"], repository);
    assert_eq!(json("plugins/toolbelt/.claude-plugin/plugin.json")["repository"], repository);
    let plugin = json("plugins/toolbelt/.claude-plugin/plugin.json")["name"].clone();
    assert_eq!(json(".claude-plugin/marketplace.json")["plugins"][0]["name"], plugin);
    assert_eq!(json(".agents/plugins/marketplace.json")["plugins"][0]["name"], plugin);
    assert_eq!(json("plugins/toolbelt/.codex-plugin/plugin.json")["name"], plugin);
    assert_eq!(json("plugins/toolbelt/gemini-extension.json")["name"], plugin);
    assert_eq!(json(".agents/plugins/marketplace.json")["name"], json(".claude-plugin/marketplace.json")["name"]);
}

#[test]
fn registry_and_bundle_offer_the_values_the_binary_takes() {
    let args = &json("server.json")["packages"][0]["packageArguments"];
    let choices = |flag: &str| {
        let arg = args.as_array().unwrap().iter().find(|a| a["name"] == flag).unwrap();
        (strings(&arg["choices"]), arg["default"].as_str().unwrap().to_string())
    };
    let (sandbox, sandbox_default) = choices("--sandbox");
    let (approval, approval_default) = choices("--approval");
    assert_eq!(sandbox, values::<SandboxMode>());
    assert_eq!(approval, values::<Approval>());
    assert_eq!(sandbox_default, SandboxMode::default().to_possible_value().unwrap().get_name());
    assert_eq!(approval_default, Approval::default().to_possible_value().unwrap().get_name());

    let manifest = json("packaging/mcpb/manifest.json");
    let config = &manifest["user_config"];
    assert_eq!(config["sandbox"]["default"], sandbox_default.as_str());
    assert_eq!(config["approval"]["default"], approval_default.as_str());
    for value in sandbox.iter().chain(&approval) {
        let described = format!("{}{}", config["sandbox"]["description"], config["approval"]["description"]);
        assert!(described.contains(value.as_str()), "the bundle's form does not name `{value}`");
    }
    // The app expands a list of folders only as a whole argument, each folder one argument:
    // after one `--root` (which takes several), last.
    let args = strings(&manifest["server"]["mcp_config"]["args"]);
    assert_eq!(args[args.len() - 2..], ["--root".to_string(), "${user_config.project_dirs}".into()]);
    assert_eq!(config["project_dirs"]["multiple"], true);
}

#[test]
fn the_plugins_skill_is_the_one_the_server_serves() {
    assert_eq!(
        text("plugins/toolbelt/skills/toolbelt/SKILL.md"),
        text("crates/server/skills/toolbelt/SKILL.md"),
        "copy crates/server/skills/toolbelt/SKILL.md to plugins/toolbelt/skills/toolbelt/"
    );
}
