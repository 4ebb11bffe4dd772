//! Patches as data: parsing git-style unified diffs and the `*** Begin Patch` envelope into
//! one form, and applying hunks to text by exact context match (the hunk may sit at another
//! line than its header says). Pure functions; `apply_patch` does the file system part.

/// One file's part of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum FilePatch {
    /// A new file with this content.
    Add { path: String, content: String },
    /// Remove the file.
    Delete { path: String },
    /// Change the file (and maybe move it).
    Update { path: String, move_to: Option<String>, hunks: Vec<Hunk> },
}

impl FilePatch {
    /// The path the patch names first.
    pub(super) fn path(&self) -> &str {
        match self {
            Self::Add { path, .. } | Self::Delete { path } | Self::Update { path, .. } => path,
        }
    }
}

/// One hunk: the lines it expects (context and removals) and what replaces them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Hunk {
    /// 1-based line the header puts the hunk at, if it says.
    pub old_start: Option<usize>,
    /// A line to find first (the envelope's `@@ line`); the hunk matches after it.
    pub anchor: Option<String>,
    /// Context and removed lines, in order.
    pub old: Vec<String>,
    /// Context and added lines, in order.
    pub new: Vec<String>,
    /// The old side ends without a final newline.
    pub old_no_newline: bool,
    /// The new side ends without a final newline.
    pub new_no_newline: bool,
}

/// Parses either format; the error says which line is wrong.
pub(super) fn parse(patch: &str) -> Result<Vec<FilePatch>, String> {
    let files =
        if patch.trim_start().starts_with("*** Begin Patch") { parse_envelope(patch)? } else { parse_unified(patch)? };
    if files.is_empty() {
        return Err("the patch holds no file changes: send a unified diff (`--- a/f`, `+++ b/f`, `@@ … @@`) or a `*** Begin Patch` envelope".into());
    }
    Ok(files)
}

fn strip_prefix(path: &str) -> String {
    let path = path.split('\t').next().unwrap_or(path).trim();
    path.strip_prefix("a/").or_else(|| path.strip_prefix("b/")).unwrap_or(path).to_string()
}

fn parse_unified(patch: &str) -> Result<Vec<FilePatch>, String> {
    let lines: Vec<&str> = patch.lines().collect();
    let mut files = Vec::new();
    let mut i = 0;
    let mut rename_from: Option<String> = None;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with("diff --git ") {
            rename_from = None;
            i += 1;
            continue;
        }
        if let Some(from) = line.strip_prefix("rename from ") {
            rename_from = Some(from.trim().to_string());
        } else if let Some(to) = line.strip_prefix("rename to ") {
            // A pure rename has no hunks: it ends at the next `diff --git` or the end. With
            // hunks, the `---`/`+++` lines that follow name both paths.
            if lines.get(i + 1).is_none_or(|next| next.starts_with("diff --git "))
                && let Some(from) = rename_from.take()
            {
                files.push(FilePatch::Update { path: from, move_to: Some(to.trim().to_string()), hunks: Vec::new() });
            }
        } else if let Some(old) = line.strip_prefix("--- ") {
            let Some(new) = lines.get(i + 1).and_then(|l| l.strip_prefix("+++ ")) else {
                return Err(format!("line {}: `---` must be followed by a `+++` line", i + 1));
            };
            let (old_path, new_path) = (old.trim(), new.trim());
            i += 2;
            let mut hunks = Vec::new();
            while i < lines.len() && lines[i].starts_with("@@") {
                let (hunk, next) = parse_unified_hunk(&lines, i)?;
                hunks.push(hunk);
                i = next;
            }
            let file = if old_path.starts_with("/dev/null") {
                let content = hunks.iter().flat_map(|h| h.new.iter()).map(|l| format!("{l}\n")).collect::<String>();
                let no_newline = hunks.last().is_some_and(|h| h.new_no_newline);
                let content =
                    if no_newline { content.strip_suffix('\n').unwrap_or(&content).to_string() } else { content };
                FilePatch::Add { path: strip_prefix(new_path), content }
            } else if new_path.starts_with("/dev/null") {
                FilePatch::Delete { path: strip_prefix(old_path) }
            } else {
                let (from, to) = (strip_prefix(old_path), strip_prefix(new_path));
                rename_from = None;
                FilePatch::Update { move_to: (from != to).then_some(to), path: from, hunks }
            };
            files.push(file);
            continue;
        }
        i += 1;
    }
    Ok(files)
}

/// `@@ -12,5 +12,6 @@` then its lines; returns the hunk and the index after it.
fn parse_unified_hunk(lines: &[&str], start: usize) -> Result<(Hunk, usize), String> {
    let header = lines[start];
    let old_start = header
        .strip_prefix("@@ -")
        .and_then(|rest| rest.split([',', ' ']).next())
        .and_then(|n| n.parse::<usize>().ok())
        .ok_or_else(|| {
            format!("line {}: bad hunk header `{header}`; expected `@@ -OLD,COUNT +NEW,COUNT @@`", start + 1)
        })?;
    let mut hunk = Hunk { old_start: Some(old_start.max(1)), ..Hunk::default() };
    let mut i = start + 1;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with("@@") || line.starts_with("--- ") || line.starts_with("diff --git ") {
            break;
        }
        match line.chars().next() {
            Some(' ') => {
                hunk.old.push(line[1..].to_string());
                hunk.new.push(line[1..].to_string());
            }
            None => {
                hunk.old.push(String::new());
                hunk.new.push(String::new());
            }
            Some('-') => hunk.old.push(line[1..].to_string()),
            Some('+') => hunk.new.push(line[1..].to_string()),
            Some('\\') => match lines.get(i.wrapping_sub(1)).and_then(|l| l.chars().next()) {
                Some('+') => hunk.new_no_newline = true,
                Some('-') => hunk.old_no_newline = true,
                _ => {
                    hunk.old_no_newline = true;
                    hunk.new_no_newline = true;
                }
            },
            _ => break,
        }
        i += 1;
    }
    Ok((hunk, i))
}

fn parse_envelope(patch: &str) -> Result<Vec<FilePatch>, String> {
    let lines: Vec<&str> = patch.lines().collect();
    let mut files = Vec::new();
    let mut i = lines.iter().position(|l| l.trim() == "*** Begin Patch").map_or(0, |p| p + 1);
    let mut ended = false;
    while i < lines.len() {
        let line = lines[i];
        if line.trim() == "*** End Patch" {
            ended = true;
            break;
        }
        if let Some(path) = line.strip_prefix("*** Add File: ") {
            i += 1;
            let mut content = String::new();
            while i < lines.len() && !lines[i].starts_with("*** ") {
                let body = lines[i]
                    .strip_prefix('+')
                    .ok_or_else(|| format!("line {}: lines of an added file start with `+`", i + 1))?;
                content.push_str(body);
                content.push('\n');
                i += 1;
            }
            files.push(FilePatch::Add { path: path.trim().to_string(), content });
        } else if let Some(path) = line.strip_prefix("*** Delete File: ") {
            files.push(FilePatch::Delete { path: path.trim().to_string() });
            i += 1;
        } else if let Some(path) = line.strip_prefix("*** Update File: ") {
            i += 1;
            let mut move_to = None;
            if let Some(to) = lines.get(i).and_then(|l| l.strip_prefix("*** Move to: ")) {
                move_to = Some(to.trim().to_string());
                i += 1;
            }
            let mut hunks: Vec<Hunk> = Vec::new();
            while i < lines.len() && !(lines[i].starts_with("*** ") && lines[i] != "*** End of File") {
                let line = lines[i];
                if let Some(anchor) = line.strip_prefix("@@") {
                    let anchor = anchor.trim();
                    hunks.push(Hunk { anchor: (!anchor.is_empty()).then(|| anchor.to_string()), ..Hunk::default() });
                } else if line == "*** End of File" {
                    // The hunk ends the file: nothing to record, matching is exact anyway.
                } else {
                    if hunks.is_empty() {
                        hunks.push(Hunk::default());
                    }
                    let hunk = hunks.last_mut().ok_or("no hunk")?;
                    match line.chars().next() {
                        Some(' ') | None => {
                            let text = line.get(1..).unwrap_or("").to_string();
                            hunk.old.push(text.clone());
                            hunk.new.push(text);
                        }
                        Some('-') => hunk.old.push(line[1..].to_string()),
                        Some('+') => hunk.new.push(line[1..].to_string()),
                        _ => {
                            return Err(format!(
                                "line {}: `{line}` is not a patch line (start with ` `, `-`, `+` or `@@`)",
                                i + 1
                            ));
                        }
                    }
                }
                i += 1;
            }
            files.push(FilePatch::Update { path: path.trim().to_string(), move_to, hunks });
        } else if line.trim().is_empty() {
            i += 1;
        } else {
            return Err(format!(
                "line {}: expected `*** Add File:`, `*** Update File:`, `*** Delete File:` or `*** End Patch`, got `{line}`",
                i + 1
            ));
        }
    }
    if !ended {
        return Err("the envelope has no `*** End Patch` line".into());
    }
    Ok(files)
}

/// A patched body with the unified diff of exactly what changed.
#[derive(Debug)]
pub(super) struct Applied {
    /// The new body.
    pub body: String,
    /// `@@` hunks (without file headers) rendered from the hunks where they landed.
    pub diff: String,
    /// Lines added.
    pub added: u64,
    /// Lines removed.
    pub removed: u64,
}

/// Applies hunks to `body` (LF line endings). Each hunk's old lines must appear exactly, at or
/// after the end of the previous hunk, nearest to where its header puts it. The error names
/// the hunk (1-based) and the nearest near-match. The diff is rendered from the hunks (only
/// their own lines are compared), so large files cost no whole-file diff.
pub(super) fn apply(body: &str, hunks: &[Hunk]) -> Result<Applied, String> {
    let mut diff = String::new();
    let (mut added, mut removed) = (0, 0);
    let had_final_newline = body.is_empty() || body.ends_with('\n');
    let mut lines: Vec<String> = body.lines().map(str::to_string).collect();
    let mut final_newline = had_final_newline;
    let mut floor = 0usize;
    let mut shift: isize = 0;
    for (n, hunk) in hunks.iter().enumerate() {
        let mut from = floor;
        if let Some(anchor) = &hunk.anchor {
            let found = lines[floor..].iter().position(|l| l.trim() == anchor.trim());
            from = floor
                + found.ok_or_else(|| format!("hunk {}: the line `{anchor}` it starts from was not found", n + 1))?;
            if hunk.old.first().is_none_or(|first| first.trim() != anchor.trim()) {
                from += 1;
            }
        }
        let hint = hunk.old_start.map(|s| (s as isize - 1 + shift).max(0) as usize).unwrap_or(from);
        let at = if hunk.old.is_empty() {
            if hunk.old_start.is_some() { hint.clamp(from, lines.len()) } else { lines.len() }
        } else {
            find(&lines, &hunk.old, from, hint).ok_or_else(|| describe_miss(&lines, &hunk.old, n + 1, from))?
        };
        let end = at + hunk.old.len();
        if end == lines.len() && (hunk.new_no_newline || hunk.old_no_newline) {
            final_newline = !hunk.new_no_newline;
        }
        let old_at = (at as isize - shift).max(0) as usize;
        render_hunk(&mut diff, hunk, old_at, at, (&mut added, &mut removed));
        lines.splice(at..end, hunk.new.iter().cloned());
        floor = at + hunk.new.len();
        shift += hunk.new.len() as isize - hunk.old.len() as isize;
    }
    let mut out = lines.join("\n");
    if final_newline && !lines.is_empty() {
        out.push('\n');
    }
    Ok(Applied { body: out, diff, added, removed })
}

/// One `@@ -a,b +c,d @@` block: the hunk's old and new lines diffed against each other.
fn render_hunk(out: &mut String, hunk: &Hunk, old_at: usize, new_at: usize, counts: (&mut u64, &mut u64)) {
    use similar::DiffTag;
    let (old_len, new_len) = (hunk.old.len(), hunk.new.len());
    let start = |at: usize, len: usize| if len == 0 { at } else { at + 1 };
    out.push_str(&format!("@@ -{},{old_len} +{},{new_len} @@\n", start(old_at, old_len), start(new_at, new_len)));
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &hunk.old, &hunk.new) {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        if matches!(tag, DiffTag::Equal) {
            old_range.for_each(|i| out.push_str(&format!(" {}\n", hunk.old[i])));
            continue;
        }
        for i in old_range {
            *counts.1 += 1;
            out.push_str(&format!("-{}\n", hunk.old[i]));
        }
        for i in new_range {
            *counts.0 += 1;
            out.push_str(&format!("+{}\n", hunk.new[i]));
        }
    }
}

/// The match of `needle` at or after `from` nearest to `hint`, searching outward from the
/// hint (a well-made patch matches at the hint, so this is usually one comparison).
fn find(lines: &[String], needle: &[String], from: usize, hint: usize) -> Option<usize> {
    let last = lines.len().checked_sub(needle.len())?;
    if from > last {
        return None;
    }
    let hint = hint.clamp(from, last);
    let matches = |i: usize| lines[i..i + needle.len()] == *needle;
    for distance in 0..=(last - from) {
        if hint >= from + distance && matches(hint - distance) {
            return Some(hint - distance);
        }
        if distance > 0 && hint + distance <= last && matches(hint + distance) {
            return Some(hint + distance);
        }
        if hint < from + distance && hint + distance > last {
            break;
        }
    }
    None
}

fn describe_miss(lines: &[String], needle: &[String], number: usize, from: usize) -> String {
    let wanted = needle.join("\n");
    let best = (from..lines.len().saturating_sub(needle.len().saturating_sub(1)))
        .map(|i| {
            let window = lines[i..(i + needle.len()).min(lines.len())].join("\n");
            (similar::TextDiff::from_chars(window.as_str(), wanted.as_str()).ratio(), i)
        })
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let mut message = format!("hunk {number}: its context and removed lines do not match the file");
    match best {
        Some((ratio, i)) if ratio > 0.5 => {
            message.push_str(&format!(
                "; nearest, lines {}-{} ({:.0}% similar):",
                i + 1,
                i + needle.len(),
                ratio * 100.0
            ));
            for (k, line) in lines[i..(i + needle.len()).min(lines.len())].iter().enumerate() {
                message.push_str(&format!("\n{:>6}\t{line}", i + k + 1));
            }
        }
        _ => message.push_str("; nothing similar: read the file again and regenerate the patch"),
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_git_diffs_with_adds_deletes_renames() {
        let patch = "diff --git a/src/x.rs b/src/x.rs\nindex 1..2 100644\n--- a/src/x.rs\n+++ b/src/x.rs\n@@ -1,2 +1,2 @@\n a\n-b\n+c\ndiff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n\\ No newline at end of file\ndiff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\ndiff --git a/old.md b/new.md\nsimilarity index 100%\nrename from old.md\nrename to new.md\n";
        let files = parse(patch).unwrap();
        assert_eq!(files.len(), 4);
        assert!(
            matches!(&files[0], FilePatch::Update { path, move_to: None, hunks } if path == "src/x.rs" && hunks[0].old == ["a", "b"] && hunks[0].new == ["a", "c"])
        );
        assert_eq!(files[1], FilePatch::Add { path: "new.txt".into(), content: "one\ntwo".into() });
        assert_eq!(files[2], FilePatch::Delete { path: "gone.txt".into() });
        assert_eq!(
            files[3],
            FilePatch::Update { path: "old.md".into(), move_to: Some("new.md".into()), hunks: vec![] }
        );
    }

    #[test]
    fn parses_the_envelope() {
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** Update File: b.py\n*** Move to: c.py\n@@ def f():\n-    return 1\n+    return 2\n*** Delete File: d.txt\n*** End Patch\n";
        let files = parse(patch).unwrap();
        assert_eq!(files[0], FilePatch::Add { path: "a.txt".into(), content: "hi\n".into() });
        let FilePatch::Update { path, move_to, hunks } = &files[1] else { panic!() };
        assert_eq!((path.as_str(), move_to.as_deref()), ("b.py", Some("c.py")));
        assert_eq!(hunks[0].anchor.as_deref(), Some("def f():"));
        assert_eq!(files[2], FilePatch::Delete { path: "d.txt".into() });
        assert!(parse("*** Begin Patch\n*** Add File: a\n+x\n").unwrap_err().contains("End Patch"));
        assert!(parse("hello").unwrap_err().contains("no file changes"));
    }

    #[test]
    fn applies_with_offset_drift_and_reports_misses() {
        let body = "a\nb\nc\nd\ne\n";
        let hunk =
            Hunk { old_start: Some(1), old: vec!["c".into(), "d".into()], new: vec!["C".into()], ..Hunk::default() };
        let applied = apply(body, std::slice::from_ref(&hunk)).unwrap();
        assert_eq!(applied.body, "a\nb\nC\ne\n", "header said line 1, found at 3");
        assert_eq!(applied.diff, "@@ -3,2 +3,1 @@\n-c\n-d\n+C\n");
        assert_eq!((applied.added, applied.removed), (1, 2));
        let bad = Hunk { old: vec!["c".into(), "x".into()], new: vec![], ..Hunk::default() };
        let err = apply(body, &[hunk, bad]).unwrap_err();
        assert!(err.starts_with("hunk 2: its context and removed lines do not match"), "{err}");
        let append =
            Hunk { old: vec!["e".into()], new: vec!["e".into(), "f".into()], new_no_newline: true, ..Hunk::default() };
        assert_eq!(apply(body, &[append]).unwrap().body, "a\nb\nc\nd\ne\nf");
        let anchored =
            Hunk { anchor: Some("b".into()), old: vec!["d".into()], new: vec!["D".into()], ..Hunk::default() };
        assert_eq!(apply(body, &[anchored]).unwrap().body, "a\nb\nc\nD\ne\n");
        // Two equal candidates: the one nearest the header wins, on either side.
        let twice = "x\ny\nx\ny\nx\n";
        let near =
            |start| Hunk { old_start: Some(start), old: vec!["x".into()], new: vec!["X".into()], ..Hunk::default() };
        assert_eq!(apply(twice, &[near(3)]).unwrap().body, "x\ny\nX\ny\nx\n");
        assert_eq!(apply(twice, &[near(5)]).unwrap().body, "x\ny\nx\ny\nX\n");
        assert_eq!(apply(twice, &[near(2)]).unwrap().body, "X\ny\nx\ny\nx\n", "ties go to the earlier line");
    }
}

/// Property tests (CI runs them with many more cases: `PROPTEST_CASES`; failing inputs are
/// kept under `proptest-regressions/`).
#[cfg(test)]
mod fuzz {
    use super::*;
    use proptest::prelude::*;

    /// Lines a patch is made of, and junk.
    fn patch_line() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("*** Begin Patch".to_string()),
            Just("*** End Patch".to_string()),
            Just("*** End of File".to_string()),
            "\\*\\*\\* (Add|Update|Delete) File: [a-z/.]{0,8}".prop_map(String::from),
            "\\*\\*\\* Move to: [a-z/.]{0,8}".prop_map(String::from),
            "(---|\\+\\+\\+) (a/|b/)?[a-z/.]{0,8}".prop_map(String::from),
            "@@ -[0-9]{1,20}(,[0-9]{1,20})? \\+[0-9]{1,20}(,[0-9]{1,20})? @@.{0,6}".prop_map(String::from),
            "@@ ?.{0,8}".prop_map(String::from),
            "[-+ ].{0,10}".prop_map(String::from),
            Just("\\ No newline at end of file".to_string()),
            ".{0,12}".prop_map(String::from),
        ]
    }

    proptest! {
        /// Whatever the model sends, parsing and applying answer (an error at worst).
        #[test]
        fn fuzz_patch_parse_and_apply_never_panic(
            lines in proptest::collection::vec(patch_line(), 0..24),
            body in "([a-z ]{0,6}\n){0,12}",
        ) {
            let text = lines.join("\n");
            if let Ok(files) = parse(&text) {
                for file in files {
                    if let FilePatch::Update { hunks, .. } = file {
                        let _ = apply(&body, &hunks);
                    }
                }
            }
        }

        /// The diff we show for an edit is a patch we apply back to the same result.
        #[test]
        fn fuzz_our_diff_applies_back(
            old in proptest::collection::vec("[a-c]{0,3}", 0..30),
            at in 0usize..30,
            cut in 0usize..6,
            new in proptest::collection::vec("[a-d]{0,3}", 0..6),
        ) {
            let at = at.min(old.len());
            let end = (at + cut).min(old.len());
            let mut edited = old.clone();
            edited.splice(at..end, new);
            let (old_text, new_text) = (join(&old), join(&edited));
            let diff = super::super::edit::diff("f.txt", Some(&old_text), &new_text);
            if diff.added + diff.removed == 0 {
                return Ok(());
            }
            let files = parse(&format!("{}\n", diff.lines.join("\n"))).map_err(TestCaseError::fail)?;
            let [FilePatch::Update { hunks, .. }] = files.as_slice() else {
                return Err(TestCaseError::fail(format!("{files:?}")));
            };
            let applied = apply(&old_text, hunks).map_err(TestCaseError::fail)?;
            prop_assert_eq!(applied.body, new_text);
        }
    }

    fn join(lines: &[String]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }
}
