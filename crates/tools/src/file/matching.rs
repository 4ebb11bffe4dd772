//! Exact string replacement with diagnostics a model can act on: where the closest
//! candidates are when nothing matches, and where the matches are when several do.

/// Windows compared when looking for near misses (bounds the work on huge files).
const MAX_WINDOWS: usize = 20_000;

/// Replaces `old` by `new` in `body`: exactly one occurrence, or all with `replace_all`.
/// Returns the new body and the number of replacements, or a message saying what to do.
pub(super) fn replace(body: &str, old: &str, new: &str, replace_all: bool) -> Result<(String, u64), String> {
    if old.is_empty() {
        return Err("`old_string` is empty; to add text use `insert_lines`, to write a whole file `create_file`".into());
    }
    if old == new {
        return Err("`old_string` and `new_string` are the same; nothing would change".into());
    }
    let starts: Vec<usize> = body.match_indices(old).map(|(i, _)| i).collect();
    match (starts.len(), replace_all) {
        (0, _) => Err(no_match(body, old)),
        (1, _) | (_, true) => Ok((body.replace(old, new), starts.len() as u64)),
        (n, false) => {
            let mut lines: Vec<String> = starts.iter().map(|&i| line_of(body, i).to_string()).collect();
            lines.dedup();
            Err(format!(
                "`old_string` occurs {n} times (at lines {}); add surrounding lines to make it unique, or set `replace_all: true`",
                lines.join(", ")
            ))
        }
    }
}

/// 1-based line number of a byte offset.
fn line_of(body: &str, offset: usize) -> usize {
    body[..offset].matches('\n').count() + 1
}

/// The "not found" message: a hint when only whitespace or line endings differ, and the
/// closest regions by similarity with numbered previews.
fn no_match(body: &str, old: &str) -> String {
    let mut message = String::from("`old_string` was not found");
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    if old.contains('\r') {
        message.push_str("; it contains `\\r`, but the file is matched with `\\n` line endings: send plain `\\n`");
    } else if squash(body).contains(&squash(old)) {
        message.push_str("; the same text exists with different whitespace or indentation: copy it exactly from `read_file` (without the line-number prefix)");
    }
    let lines: Vec<&str> = body.lines().collect();
    let want = old.lines().count().max(1);
    let mut scored: Vec<(f32, usize)> = Vec::new();
    for start in 0..lines.len().saturating_sub(want - 1).min(MAX_WINDOWS) {
        let window = lines[start..start + want].join("\n");
        let ratio = similar::TextDiff::from_chars(window.as_str(), old).ratio();
        if ratio >= 0.5 {
            scored.push((ratio, start));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut shown: Vec<usize> = Vec::new();
    for (ratio, start) in scored {
        if shown.len() == 3 {
            break;
        }
        if shown.iter().any(|&s| s.abs_diff(start) < want) {
            continue;
        }
        shown.push(start);
        message.push_str(&format!("\nclosest, lines {}-{} ({:.0}% similar):", start + 1, start + want, ratio * 100.0));
        for (i, line) in lines[start..start + want].iter().enumerate() {
            message.push_str(&format!("\n{:>6}\t{line}", start + i + 1));
        }
    }
    if shown.is_empty() {
        message.push_str("; nothing similar either: read the file again (`read_file`) and copy the text exactly");
    }
    message
}

#[cfg(test)]
mod tests {
    use super::replace;

    #[test]
    fn unique_all_and_errors() {
        assert_eq!(replace("a b a", "b", "c", false).unwrap(), ("a c a".into(), 1));
        assert_eq!(replace("a b a", "a", "x", true).unwrap(), ("x b x".into(), 2));
        let several = replace("x\ny\nx\n", "x", "z", false).unwrap_err();
        assert!(several.contains("occurs 2 times (at lines 1, 3)"), "{several}");
        assert!(replace("a", "", "b", false).unwrap_err().contains("empty"));
        assert!(replace("a", "a", "a", false).unwrap_err().contains("the same"));
    }

    #[test]
    fn near_misses_are_located() {
        let body = "fn main() {\n    let total = 1;\n    println!(\"{total}\");\n}\n";
        let err = replace(body, "let totl = 1;", "x", false).unwrap_err();
        assert!(err.contains("closest, lines 2-2") && err.contains("     2\t    let total = 1;"), "{err}");
        let spaced = replace(body, "let  total =  1;", "x", false).unwrap_err();
        assert!(spaced.contains("different whitespace or indentation"), "{spaced}");
        let nothing = replace(body, "zzzzzzzz qqqq", "x", false).unwrap_err();
        assert!(nothing.contains("nothing similar"), "{nothing}");
    }
}
