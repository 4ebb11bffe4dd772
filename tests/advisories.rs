//! Every package of `Cargo.lock` against the RustSec advisory database (the snapshot in
//! `audit/advisory-db`, or the copy `TOOLBELT_ADVISORY_DB` names): an advisory that applies
//! fails the suite, with what fixes it.

use std::path::PathBuf;

use rustsec::advisory::Informational;
use rustsec::database::Query;
use rustsec::{Database, Lockfile};

fn database() -> (Database, PathBuf) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let path = std::env::var_os("TOOLBELT_ADVISORY_DB").map_or_else(|| root.join("audit/advisory-db"), PathBuf::from);
    let database = Database::open(&path).unwrap_or_else(|err| panic!("cannot open `{}`: {err}", path.display()));
    (database, root.join("Cargo.lock"))
}

#[test]
fn no_dependency_has_an_advisory_that_applies() {
    let (database, lock) = database();
    assert!(database.iter().count() > 500, "the advisory database looks empty");
    let lockfile = Lockfile::load(&lock).unwrap();
    let mut found: Vec<String> = database
        .vulnerabilities(&lockfile)
        .iter()
        .map(|v| {
            let patched: Vec<String> = v.versions.patched().iter().map(ToString::to_string).collect();
            format!(
                "{} {} {}: {} (patched: {})",
                v.advisory.id,
                v.package.name,
                v.package.version,
                v.advisory.title,
                if patched.is_empty() { "none".into() } else { patched.join(", ") }
            )
        })
        .collect();
    // Unsound code is a vulnerability waiting for a caller; unmaintained crates are listed.
    let informational = Query::crate_scope().informational(true);
    for package in &lockfile.packages {
        for advisory in database.query(&informational.clone().package(package)) {
            let line =
                format!("{} {} {}: {}", advisory.metadata.id, package.name, package.version, advisory.metadata.title);
            match advisory.metadata.informational {
                Some(Informational::Unsound) => found.push(line),
                _ => eprintln!("note (not failed): {line}"),
            }
        }
    }
    assert!(found.is_empty(), "advisories apply to dependencies we use:\n{}", found.join("\n"));
}
