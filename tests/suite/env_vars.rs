//! The `TOOLBELT_*` variables: every one anything in the repository reads is declared in
//! `toolbelt_mcp_core::env_vars`, and the README's table is that list, word for word.

use std::collections::BTreeSet;
use std::path::Path;

use toolbelt_mcp_core::env_vars;

/// The README's table, between its markers.
fn readme_table(readme: &str) -> &str {
    let start = "<!-- env-vars: begin -->\n";
    let from = readme.find(start).expect("the README marks its table of environment variables") + start.len();
    let to = readme[from..].find("<!-- env-vars: end -->").expect("the table's end marker") + from;
    &readme[from..to]
}

#[test]
fn readme_table_is_the_registry() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert_eq!(
        readme_table(&readme),
        env_vars::readme_table(),
        "README.md's table of environment variables differs from `crates/core/src/env_vars.rs`: paste `env_vars::readme_table()` between the markers"
    );
}

/// Every `TOOLBELT_…` name in the files under `dir` with one of `extensions`.
fn names_in(dir: &Path, extensions: &[&str], found: &mut BTreeSet<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !["target", "node_modules", ".git", "audit"].contains(&name.as_str()) {
                names_in(&path, extensions, found);
            }
            continue;
        }
        if extensions.iter().any(|ext| name.ends_with(ext)) || name == "run" {
            names_in_file(&path, found);
        }
    }
}

#[test]
fn every_variable_read_is_declared() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = BTreeSet::new();
    for dir in ["crates", "src", "tests", "npm", ".ci", "docs"] {
        names_in(&root.join(dir), &[".rs", ".py", ".js", ".sh", ".md", ".toml"], &mut found);
    }
    names_in_file(&root.join("README.md"), &mut found);
    let declared: BTreeSet<&str> = env_vars::ALL.iter().map(|var| var.name).collect();
    let unknown: Vec<_> = found.iter().filter(|(name, _)| !declared.contains(name.as_str())).collect();
    assert!(
        unknown.is_empty(),
        "declare these in `crates/core/src/env_vars.rs` (with the README's table): {unknown:?}"
    );
    for var in env_vars::ALL {
        assert!(
            found
                .iter()
                .any(|(name, file)| name == var.name && !file.ends_with("env_vars.rs") && !file.ends_with(".md")),
            "`{}` is declared but nothing reads it: remove it from `env_vars.rs`",
            var.name
        );
    }
}

/// Every `TOOLBELT_…` name in one file, with the file.
fn names_in_file(path: &Path, found: &mut BTreeSet<(String, String)>) {
    let Ok(text) = std::fs::read_to_string(path) else { return };
    for (at, _) in text.match_indices("TOOLBELT_") {
        let tail = &text[at..];
        let end =
            tail.find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')).unwrap_or(tail.len());
        let word = tail[..end].trim_end_matches('_');
        if word.len() > "TOOLBELT_".len() {
            found.insert((word.to_string(), path.display().to_string()));
        }
    }
}
