//! Globs as `.gitignore` and `rg -g` read them: a pattern without `/` matches a file name at
//! any depth; one with `/` matches the path from the search directory, `*` stays within one
//! directory and `**` crosses any number. A leading `!` inverts the match (`!*.min.js`).

use std::path::Path;

use globset::GlobBuilder;
use regex_automata::meta::Regex;

use toolbelt_mcp_core::error::ToolError;

/// A compiled path glob.
#[derive(Debug, Clone)]
pub(super) struct PathGlob {
    matcher: Regex,
    name_only: bool,
    negated: bool,
}

impl PathGlob {
    /// Compiles `pattern`; a leading `./` or `/` anchors it to the search directory.
    pub(super) fn new(pattern: &str) -> Result<Self, ToolError> {
        let (negated, rest) = match pattern.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, pattern),
        };
        let trimmed = rest.trim_start_matches("./").trim_start_matches('/');
        if trimmed.is_empty() {
            return Err(ToolError::InvalidGlob { pattern: pattern.into(), message: "the pattern is empty".into() });
        }
        let name_only = !trimmed.contains('/');
        let glob = GlobBuilder::new(trimmed)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|err| ToolError::InvalidGlob { pattern: pattern.into(), message: err.kind().to_string() })?;
        let matcher =
            compile(glob.regex()).map_err(|message| ToolError::InvalidGlob { pattern: pattern.into(), message })?;
        Ok(Self { matcher, name_only, negated })
    }

    /// Whether a path relative to the search directory matches.
    pub(super) fn is_match(&self, relative: &Path) -> bool {
        let matched = if self.name_only {
            relative.file_name().is_some_and(|name| self.matcher.is_match(bytes(Path::new(name)).as_ref()))
        } else {
            self.matcher.is_match(bytes(relative).as_ref())
        };
        matched != self.negated
    }
}

/// The glob's regex as `globset`'s `compile_matcher` compiles it, but with no full DFA: the
/// lazy one it builds as it matches is as fast on paths, and building the full one cost
/// 200,000 instructions a search, most of a small `file_search`.
fn compile(regex: &str) -> Result<Regex, String> {
    let syntax = regex_automata::util::syntax::Config::new().utf8(false).dot_matches_new_line(true);
    let config =
        Regex::config().utf8_empty(false).nfa_size_limit(Some(10 << 20)).hybrid_cache_capacity(10 << 20).dfa(false);
    Regex::builder().syntax(syntax).configure(config).build(regex).map_err(|err| err.to_string())
}

/// A path as `globset` matches it: its bytes, with `/` between names on Windows too.
fn bytes(path: &Path) -> std::borrow::Cow<'_, [u8]> {
    #[cfg(unix)]
    {
        std::borrow::Cow::Borrowed(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()))
    }
    #[cfg(not(unix))]
    {
        std::borrow::Cow::Owned(path.to_string_lossy().replace('\\', "/").into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_globs_match_at_any_depth_path_globs_from_the_top() {
        let rs = PathGlob::new("*.rs").unwrap();
        assert!(rs.is_match(Path::new("a/b/c.rs")) && rs.is_match(Path::new("c.rs")));
        let deep = PathGlob::new("**/*.rs").unwrap();
        assert!(deep.is_match(Path::new("c.rs")) && deep.is_match(Path::new("a/b/c.rs")));
        let src = PathGlob::new("src/*.rs").unwrap();
        assert!(src.is_match(Path::new("src/a.rs")) && !src.is_match(Path::new("src/x/a.rs")));
        let braces = PathGlob::new("./*.{js,ts}").unwrap();
        assert!(braces.is_match(Path::new("x/y.ts")) && !braces.is_match(Path::new("y.rs")));
        let not_min = PathGlob::new("!*.min.js").unwrap();
        assert!(not_min.is_match(Path::new("a/app.js")) && !not_min.is_match(Path::new("a/app.min.js")));
    }

    /// Each pattern matches what `globset`'s own matcher matches, on paths that tell them apart.
    #[test]
    fn matches_what_globsets_matcher_matches() {
        let patterns =
            ["*.rs", "**/*.rs", "src/*.rs", "src/**", "a?c", "[ab]*.txt", "*.{js,ts}", "**/x/**/*.md", "\\*"];
        let paths = [
            "c.rs",
            "a/b/c.rs",
            "src/a.rs",
            "src/x/a.rs",
            "abc",
            "x/abc",
            "a.txt",
            "c.txt",
            "x/y.ts",
            "y.js",
            "x/a/x/b/r.md",
            "x/r.md",
            "*",
            "a*",
        ];
        for pattern in patterns {
            let ours = PathGlob::new(pattern).unwrap();
            let theirs = GlobBuilder::new(pattern).literal_separator(true).backslash_escape(true).build().unwrap();
            let theirs = theirs.compile_matcher();
            for path in paths {
                let path = Path::new(path);
                let target = if ours.name_only { Path::new(path.file_name().unwrap()) } else { path };
                assert_eq!(ours.is_match(path), theirs.is_match(target), "`{pattern}` on `{}`", path.display());
            }
        }
    }

    #[test]
    fn bad_globs_are_clear_errors() {
        let err = PathGlob::new("src/{a,b").unwrap_err().to_string();
        assert!(err.contains("invalid glob `src/{a,b`") && err.contains("unclosed"), "{err}");
        assert!(PathGlob::new("").is_err());
        assert!(PathGlob::new("!").is_err());
    }
}
