//! The workspace's layers, read from the crates' manifests: each crate depends only on the
//! crates below it, and each heavy or sensitive external crate appears only where it belongs.
//! Cargo already refuses a cycle among normal dependencies; this holds the order to the
//! design (a dev-dependency upward, or a new edge sideways, fails here).

use std::collections::BTreeMap;
use std::path::Path;

/// Each crate (directory under `crates/`) and the workspace crates it may depend on.
const LAYERS: &[(&str, &[&str])] = &[
    ("unify", &[]),
    ("unify-http", &[]),
    ("sandbox", &["unify"]),
    ("core", &["sandbox"]),
    ("store", &["core", "sandbox"]),
    ("policy", &["core", "sandbox"]),
    ("terminal", &["core", "sandbox"]),
    ("tools", &["policy", "terminal", "store", "core", "sandbox"]),
    ("agent", &["core", "sandbox", "unify-http"]),
    ("server", &["agent", "tools", "policy", "terminal", "store", "core", "sandbox", "unify-http"]),
];

/// External crates and the only crates that may name them (the root package may hold any of
/// them as a dev-dependency: the integration suite's client and fixtures).
const PLACES: &[(&str, &[&str])] = &[
    ("rmcp", &["server", "agent"]),
    ("axum", &["server"]),
    ("rusqlite", &["store"]),
    ("tokio-postgres", &["store"]),
    ("deadpool-postgres", &["store"]),
    ("reqwest", &["agent", "unify-http"]),
    ("rustls", &["agent", "unify-http"]),
    ("eventsource-stream", &["agent"]),
    ("tree-sitter", &["policy"]),
    ("tree-sitter-bash", &["policy"]),
    ("landlock", &["sandbox"]),
    ("seccompiler", &["sandbox"]),
    ("nix", &["sandbox"]),
    ("fork", &["sandbox"]),
    ("cap-std", &["sandbox"]),
    ("cap-fs-ext", &["sandbox"]),
    ("pty-process", &["terminal"]),
    ("vt100", &["terminal"]),
    ("vte", &["terminal"]),
    ("win32job", &["terminal"]),
];

/// Every dependency a manifest names, in any table (normal, dev, build, per target), with the
/// table it is in.
fn dependencies(manifest: &toml::Table) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut tables: Vec<(String, &toml::Table)> = vec![("".into(), manifest)];
    if let Some(targets) = manifest.get("target").and_then(toml::Value::as_table) {
        for (cfg, table) in targets {
            tables.extend(table.as_table().map(|t| (format!("target.{cfg}."), t)));
        }
    }
    for (prefix, table) in tables {
        for kind in ["dependencies", "dev-dependencies", "build-dependencies"] {
            for name in table.get(kind).and_then(toml::Value::as_table).into_iter().flat_map(|t| t.keys()) {
                found.push((name.clone(), format!("{prefix}{kind}")));
            }
        }
    }
    found
}

/// What in one crate's manifest breaks the layers: a workspace crate it may not depend on,
/// or an external crate that belongs elsewhere.
fn misplaced(name: &str, allowed: &[&str], manifest: &toml::Table, places: &BTreeMap<&str, &[&str]>) -> Vec<String> {
    let mut wrong = Vec::new();
    for (dependency, table) in dependencies(manifest) {
        if let Some(other) = dependency.strip_prefix("toolbelt-mcp-") {
            if !allowed.contains(&other) {
                wrong.push(format!("`{name}` depends on `{other}` ({table}); it may depend on {allowed:?}"));
            }
        } else if let Some(owners) = places.get(dependency.as_str())
            && !owners.contains(&name)
        {
            wrong.push(format!("`{name}` names `{dependency}` ({table}); only {owners:?} may"));
        }
    }
    wrong
}

fn read(path: &Path) -> toml::Table {
    std::fs::read_to_string(path).unwrap().parse().unwrap()
}

#[test]
fn each_crate_depends_only_downward_and_heavy_crates_stay_in_their_place() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let layers: BTreeMap<&str, &[&str]> = LAYERS.iter().copied().collect();
    let places: BTreeMap<&str, &[&str]> = PLACES.iter().copied().collect();
    let mut on_disk: Vec<String> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| root.join("crates").join(name).join("Cargo.toml").is_file())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = layers.keys().map(|name| name.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "every crate under crates/ has its place in LAYERS, and only those");
    let mut wrong = Vec::new();
    for (name, allowed) in &layers {
        let manifest = read(&root.join("crates").join(name).join("Cargo.toml"));
        let package = manifest["package"].as_table().unwrap();
        assert_eq!(package["name"].as_str(), Some(format!("toolbelt-mcp-{name}").as_str()));
        assert!(
            package.get("version").and_then(|v| v.get("workspace")).and_then(toml::Value::as_bool) == Some(true),
            "`{name}` takes the workspace's version (one version compiled into server, agent and doctor)"
        );
        assert!(
            manifest.get("lints").and_then(|l| l.get("workspace")).and_then(toml::Value::as_bool) == Some(true),
            "`{name}` keeps the workspace's lints (unsafe_code, unwrap_used, print_stdout, …)"
        );
        wrong.extend(misplaced(name, allowed, &manifest, &places));
    }
    // The binary's package: heavy crates only as the suite's dev-dependencies.
    for (dependency, table) in dependencies(&read(&root.join("Cargo.toml"))) {
        if places.contains_key(dependency.as_str()) && !table.ends_with("dev-dependencies") {
            wrong.push(format!("the binary names `{dependency}` ({table}); it reaches it through its crate"));
        }
    }
    assert!(wrong.is_empty(), "layers broken:\n{}", wrong.join("\n"));
}

#[test]
fn an_edge_upward_or_a_heavy_crate_out_of_place_is_caught() {
    // The check itself, on a manifest that breaks it twice: the sandbox naming the tools crate
    // (as a dev-dependency, which Cargo allows), and rmcp for one target.
    let manifest: toml::Table = concat!(
        "[package]\nname = \"toolbelt-mcp-sandbox\"\n",
        "[dev-dependencies]\ntoolbelt-mcp-tools = { path = \"../tools\" }\n",
        "[target.'cfg(unix)'.dependencies]\nrmcp = \"1\"\nlibc = \"0.2\"\n",
    )
    .parse()
    .unwrap();
    let places: BTreeMap<&str, &[&str]> = PLACES.iter().copied().collect();
    let wrong = misplaced("sandbox", &[], &manifest, &places);
    assert_eq!(wrong.len(), 2, "{wrong:?}");
    assert!(
        wrong[0].contains("`tools` (dev-dependencies)") || wrong[1].contains("`tools` (dev-dependencies)"),
        "{wrong:?}"
    );
    assert!(wrong.iter().any(|w| w.contains("`rmcp` (target.cfg(unix).dependencies)")), "{wrong:?}");
    assert!(misplaced("agent", &["core", "sandbox"], &manifest, &places).len() == 1, "rmcp is the agent's to name");
}

/// The top-level modules of `src` (a crate's) and which others each names (`crate::x`), test
/// modules left out (after a file's first `#[cfg(test)]`).
fn module_edges(src: &Path) -> BTreeMap<String, std::collections::BTreeSet<String>> {
    let modules: std::collections::BTreeSet<String> = std::fs::read_dir(src)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().trim_end_matches(".rs").to_string())
        .filter(|name| name != "lib" && name != "main")
        .collect();
    let mut edges: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let top = path.strip_prefix(src).unwrap().components().next().unwrap().as_os_str().to_string_lossy();
            let top = top.trim_end_matches(".rs").to_string();
            if !modules.contains(&top) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let body = text.split("#[cfg(test)]").next().unwrap_or_default();
            let mut named = |name: &str| {
                if name != top && modules.contains(name) {
                    edges.entry(top.clone()).or_default().insert(name.to_string());
                }
            };
            for (at, _) in body.match_indices("crate::") {
                let rest = &body[at + "crate::".len()..];
                if let Some(group) = rest.strip_prefix('{') {
                    for part in group.split('}').next().unwrap_or_default().split(',') {
                        named(part.trim().split("::").next().unwrap_or_default());
                    }
                } else {
                    named(rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or_default());
                }
            }
        }
    }
    edges
}

/// A cycle among `edges`, if there is one (as the path that closes it).
fn cycle(edges: &BTreeMap<String, std::collections::BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, std::collections::BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_string());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, edges, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = std::collections::BTreeSet::new();
    edges.keys().find_map(|node| visit(node, edges, &mut Vec::new(), &mut done))
}

#[test]
fn no_crate_has_a_cycle_among_its_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = vec![root.join("src")];
    sources.extend(LAYERS.iter().map(|(name, _)| root.join("crates").join(name).join("src")));
    for src in sources {
        let edges = module_edges(&src);
        assert!(!edges.is_empty() || src.ends_with("src"), "{} names no module", src.display());
        if let Some(found) = cycle(&edges) {
            panic!("modules of `{}` form a cycle: {}", src.display(), found.join(" → "));
        }
    }
    // The check itself finds one.
    let mut looped: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    looped.entry("a".into()).or_default().insert("b".into());
    looped.entry("b".into()).or_default().insert("a".into());
    assert_eq!(cycle(&looped), Some(vec!["a".to_string(), "b".into(), "a".into()]));
}

/// Dependencies whose features may differ when one crate is built alone: the sandbox's own
/// `clap` (the settings crate turns it on).
const DRIFT_ALLOWED: &[&str] = &["toolbelt-mcp-sandbox"];

/// Each package (`name vX.Y.Z`) in `cargo tree`'s output for `selection`, with its features.
fn features(cargo: &std::ffi::OsStr, selection: &[&str]) -> BTreeMap<String, std::collections::BTreeSet<String>> {
    let output = std::process::Command::new(cargo)
        .args(["tree", "--offline", "--locked", "-e", "normal,dev,build", "--prefix", "none", "-f", "{p}|{f}"])
        .args(selection)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(output.status.success(), "cargo tree: {}", String::from_utf8_lossy(&output.stderr));
    let mut found: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Some((package, names)) = line.split_once('|') else { continue };
        let package = package.split(" (").next().unwrap_or_default().to_string();
        let names = names.trim_end_matches(" (*)");
        found.entry(package).or_default().extend(names.split(',').filter(|n| !n.is_empty()).map(str::to_string));
    }
    found
}

#[test]
fn a_crate_tested_alone_builds_its_dependencies_with_the_workspaces_features() {
    // Run by cargo (`cargo test`), which says where it is; the suite's binary run by hand (the
    // unprivileged run) may have no cargo to ask.
    let Some(cargo) = std::env::var_os("CARGO") else {
        eprintln!("not run by cargo (no `CARGO` in the environment): the features check needs `cargo tree`");
        return;
    };
    let whole = features(&cargo, &["--workspace"]);
    assert!(whole.len() > 100, "cargo tree listed {} packages", whole.len());
    let mut drift = Vec::new();
    // The unify crates have no tests of their own to build.
    for (name, _) in LAYERS.iter().filter(|(name, _)| !name.starts_with("unify")) {
        for (package, alone) in features(&cargo, &["-p", &format!("toolbelt-mcp-{name}")]) {
            let base = package.split(' ').next().unwrap_or_default();
            if DRIFT_ALLOWED.contains(&base) {
                continue;
            }
            let wide = whole.get(&package).cloned().unwrap_or_default();
            if alone != wide {
                let missing: Vec<&String> = wide.difference(&alone).collect();
                drift.push(format!("`cargo test -p toolbelt-mcp-{name}` builds `{package}` without {missing:?}"));
            }
        }
    }
    assert!(
        drift.is_empty(),
        "name these features in crates/unify/Cargo.toml, or the crate tested alone rebuilds them:\n{}",
        drift.join("\n")
    );
}

#[test]
fn the_unify_crates_hold_no_code() {
    // They may name any crate (reqwest and rustls above) because nothing can use it through them.
    for name in ["unify", "unify-http"] {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates").join(name);
        let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
        assert!(lib.lines().all(|line| line.starts_with("//!")), "crates/{name}/src/lib.rs is doc lines only:\n{lib}");
        assert_eq!(std::fs::read_dir(root.join("src")).unwrap().count(), 1, "crates/{name}/src has lib.rs alone");
        if let Ok(build) = std::fs::read_to_string(root.join("build.rs")) {
            let code: Vec<&str> = build.lines().filter(|l| !l.starts_with("//") && !l.trim().is_empty()).collect();
            assert_eq!(code, ["fn main() {}"], "crates/{name}/build.rs does nothing");
        }
    }
}
