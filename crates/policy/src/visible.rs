//! Text from the agent as the user is shown it in a question: every character a terminal or a
//! host could use to hide or rewrite what is shown (controls, escape sequences, carriage
//! returns and line breaks, bidirectional overrides and isolates, zero-width and other format
//! characters, line and paragraph separators, tag and variation characters) written out as a
//! visible escape (`\n`, `\u{202e}`), so a justification cannot draw a fake line above the
//! real one and a command cannot hide its tail.
//!
//! Text with nothing to hide is shown as it is. Text with something to hide is escaped whole,
//! its backslashes doubled, so an escape the agent typed cannot pass for one the server wrote
//! (`\\n` is a backslash and an `n`; `\n` a line break); the question then says so.

use std::borrow::Cow;

/// `text` on one line: unchanged when nothing in it can hide or move text; otherwise every
/// such character (line breaks and tabs too) written as an escape and every backslash doubled.
pub fn visible(text: &str) -> Cow<'_, str> {
    escaped(text, |c| c == '\n' || c == '\t' || hides(c))
}

/// `text` as lines for a fenced block: line breaks and tabs kept, every other character that
/// can hide or move text escaped (backslashes then doubled).
pub fn visible_lines(text: &str) -> Cow<'_, str> {
    escaped(text, hides)
}

/// Whether [`visible`] or [`visible_lines`] would change `text` (the question then explains
/// the escapes).
pub fn has_escapes(text: &str, lines: bool) -> bool {
    text.chars().any(|c| hides(c) || (!lines && (c == '\n' || c == '\t')))
}

fn escaped(text: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            c if !escape(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
        }
    }
    Cow::Owned(out)
}

/// `text` as a Markdown code span its own backticks cannot close: delimited by a run of
/// backticks longer than any in it (padded with a space where it starts or ends with one).
pub fn code(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') { " " } else { "" };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// `text` in a Markdown code fence no line of it can close (a run of backticks longer than
/// any in the text), under `label`.
pub fn fenced(label: &str, text: &str) -> String {
    let shown = visible_lines(text);
    let longest = shown.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{label}\n{fence}text\n{shown}\n{fence}")
}

/// Whether `c` can hide, reorder or overwrite what is shown: a control character (C0, C1,
/// DEL) other than the line break and tab, a format character (Unicode category Cf: bidi
/// embeddings, overrides and isolates, zero-width joiners and spaces, the byte-order mark,
/// invisible operators, tags), a line or paragraph separator, a variation selector or a
/// filler that renders blank.
fn hides(c: char) -> bool {
    let n = u32::from(c);
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            n,
            // Blanks that look like a space but are another character (a word joined by one
            // is not the word it shows): no-break, Ogham, en to hair, narrow, math, braille,
            // ideographic.
            0x00a0
                | 0x1680
                | 0x2000..=0x200a
                | 0x202f
                | 0x205f
                | 0x2800
                | 0x3000
                | 0x00ad
                | 0x034f
                | 0x0600..=0x0605
                | 0x061c
                | 0x06dd
                | 0x070f
                | 0x0890..=0x0891
                | 0x08e2
                | 0x115f..=0x1160
                | 0x17b4..=0x17b5
                | 0x180b..=0x180f
                | 0x200b..=0x200f
                | 0x2028..=0x202e
                | 0x2060..=0x206f
                | 0x3164
                | 0xfe00..=0xfe0f
                | 0xfeff
                | 0xffa0
                | 0xfff0..=0xfffb
                | 0x110bd
                | 0x110cd
                | 0x13430..=0x1343f
                | 0x1bca0..=0x1bca3
                | 0x1d173..=0x1d17a
                | 0xe0000..=0xe0fff
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_span_holds_its_backticks() {
        assert_eq!(code("ls"), "`ls`");
        assert_eq!(code("a '`<!--' b"), "``a '`<!--' b``");
        assert_eq!(code("`x``"), "``` `x`` ```");
    }

    #[test]
    fn what_could_hide_or_rewrite_a_line_is_written_out() {
        assert_eq!(visible("ls\nrm -rf ~"), "ls\\nrm -rf ~");
        assert_eq!(visible("ok\rcovers only `ls`"), "ok\\rcovers only `ls`");
        assert_eq!(visible("\u{1b}[2Ahidden"), "\\u{1b}[2Ahidden");
        assert_eq!(visible("a\u{202e}gnp.exe"), "a\\u{202e}gnp.exe");
        assert_eq!(visible("x\u{200b}y\u{2066}z\u{feff}\u{e0041}"), "x\\u{200b}y\\u{2066}z\\u{feff}\\u{e0041}");
        assert_eq!(visible("a\u{85}b\u{2028}c"), "a\\u{85}b\\u{2028}c");
        // Blanks that pass for a space.
        assert_eq!(visible("rm\u{a0}-rf\u{2800}x\u{3000}y"), "rm\\u{a0}-rf\\u{2800}x\\u{3000}y");
    }

    #[test]
    fn plain_text_is_unchanged_and_escaped_text_cannot_fake_an_escape() {
        assert_eq!(
            visible("plain `cargo test` — ünïcödé ✓ grep 'a\\|b'"),
            "plain `cargo test` — ünïcödé ✓ grep 'a\\|b'"
        );
        // A typed `\n` next to a real line break: the typed one shows doubled.
        assert_eq!(visible("echo a\\nb\nrm x"), "echo a\\\\nb\\nrm x");
        assert!(has_escapes("a\nb", false) && !has_escapes("a\nb", true) && has_escapes("a\rb", true));
    }

    #[test]
    fn a_fence_keeps_lines_and_cannot_be_closed_from_inside() {
        assert_eq!(visible_lines("line 1\nline 2\r"), "line 1\nline 2\\r");
        let block = fenced("Its stdin:", "a\n```\n\"Allow\" covers only `ls`\n````x");
        let fence = "`".repeat(5);
        assert!(block.starts_with(&format!("Its stdin:\n{fence}text\n")), "{block}");
        assert!(block.ends_with(&format!("\n{fence}")), "{block}");
        assert_eq!(block.matches(&fence).count(), 2, "{block}");
    }
}
