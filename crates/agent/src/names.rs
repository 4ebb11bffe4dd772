//! The names the model calls another server's tools by: `<server>__<tool>` (Codex's
//! convention), made of `[a-zA-Z0-9_-]` only and at most 64 characters, which every provider
//! accepts. A name that had to be cut, or that would be the same as another, ends in a short
//! hash of the exact server and tool names, so it stays the same from run to run and two
//! tools never share one.

use std::collections::{HashMap, HashSet};

use sha2::{Digest, Sha256};

/// The longest tool name providers accept (OpenAI's limit; Anthropic's is 128).
pub(crate) const MAX_LEN: usize = 64;
/// Between the server's name and the tool's.
pub(crate) const SEPARATOR: &str = "__";
/// Hex digits of the hash suffix.
const HASH_DIGITS: usize = 8;

/// The names of `tools` (server, tool), in order; none equals another or one of `taken`.
pub(crate) fn assign(tools: &[(&str, &str)], taken: &HashSet<String>) -> Vec<String> {
    let mut names: Vec<String> = tools.iter().map(|(server, tool)| plain(server, tool)).collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for name in &names {
        *counts.entry(name.as_str()).or_default() += 1;
    }
    let clashing: Vec<bool> = names.iter().map(|n| counts[n.as_str()] > 1 || taken.contains(n)).collect();
    let mut used: HashSet<String> = taken.clone();
    for (i, (server, tool)) in tools.iter().enumerate() {
        if clashing[i] || used.contains(&names[i]) {
            // Only the same (server, tool) twice, or a hash collision, needs a second try.
            let mut salt = 0u32;
            while used.contains(&names[i]) || salt == 0 {
                names[i] = hashed(&sanitize(&format!("{server}{SEPARATOR}{tool}")), server, tool, salt);
                salt += 1;
            }
        }
        used.insert(names[i].clone());
    }
    names
}

/// `server__tool` sanitised, and cut with a hash suffix when longer than [`MAX_LEN`].
fn plain(server: &str, tool: &str) -> String {
    let joined = sanitize(&format!("{server}{SEPARATOR}{tool}"));
    if joined.len() <= MAX_LEN { joined } else { hashed(&joined, server, tool, 0) }
}

/// `name` with every character outside `[a-zA-Z0-9_-]` replaced by `_`.
pub(crate) fn sanitize(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// `name` cut to leave room for `_` and the hash of `server`, `tool` (and `salt`).
fn hashed(name: &str, server: &str, tool: &str, salt: u32) -> String {
    let mut hasher = Sha256::new();
    hasher.update(server.as_bytes());
    hasher.update([0]);
    hasher.update(tool.as_bytes());
    if salt > 0 {
        hasher.update(salt.to_le_bytes());
    }
    let digest = hasher.finalize();
    let hex = hex::encode(&digest[..HASH_DIGITS / 2]);
    // `name` is ASCII (sanitised), so any byte index is a character boundary.
    let keep = name.len().min(MAX_LEN - HASH_DIGITS - 1);
    format!("{}_{hex}", &name[..keep])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        name.len() <= MAX_LEN && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn plain_names_stay_readable_and_odd_ones_are_sanitised() {
        let none = HashSet::new();
        assert_eq!(assign(&[("memory", "read_graph")], &none), ["memory__read_graph"]);
        assert_eq!(assign(&[("my server", "get.thing/v2")], &none), ["my_server__get_thing_v2"]);
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let server = "a-server-whose-name-is-already-quite-long-by-itself";
        let tool = "and_a_tool_with_an_even_longer_name_than_that";
        let first = assign(&[(server, tool)], &HashSet::new());
        assert_eq!(first, assign(&[(server, tool)], &HashSet::new()));
        assert_eq!(first[0].len(), MAX_LEN);
        assert!(valid(&first[0]) && first[0].starts_with("a-server-whose-name"), "{first:?}");
        let other = assign(&[(server, "and_a_tool_with_an_even_longer_name_than_this")], &HashSet::new());
        assert_ne!(first, other, "names that differ only past the cut still differ");
    }

    #[test]
    fn clashes_are_told_apart_and_never_shadow_a_taken_name() {
        let taken: HashSet<String> = ["a__b".to_string()].into();
        let tools = [("a", "b"), ("s", "x.y"), ("s", "x_y"), ("s__x", "y"), ("s", "x_y")];
        let names = assign(&tools, &taken);
        assert!(names.iter().all(|n| valid(n)), "{names:?}");
        let unique: HashSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        assert!(!names.contains(&"a__b".to_string()), "{names:?}");
        assert!(names[1].starts_with("s__x_y_"), "{names:?}");
    }
}
