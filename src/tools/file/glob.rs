//! Globs as `.gitignore` and `rg -g` read them: a pattern without `/` matches a file name at
//! any depth; one with `/` matches the path from the search directory, `*` stays within one
//! directory and `**` crosses any number. A leading `!` inverts the match (`!*.min.js`).

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};

use crate::error::ToolError;

/// A compiled path glob.
#[derive(Debug, Clone)]
pub struct PathGlob {
    matcher: GlobMatcher,
    name_only: bool,
    negated: bool,
}

impl PathGlob {
    /// Compiles `pattern`; a leading `./` or `/` anchors it to the search directory.
    pub fn new(pattern: &str) -> Result<Self, ToolError> {
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
        Ok(Self { matcher: glob.compile_matcher(), name_only, negated })
    }

    /// Whether a path relative to the search directory matches.
    pub fn is_match(&self, relative: &Path) -> bool {
        let matched = if self.name_only {
            relative.file_name().is_some_and(|name| self.matcher.is_match(name))
        } else {
            self.matcher.is_match(relative)
        };
        matched != self.negated
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

    #[test]
    fn bad_globs_are_clear_errors() {
        let err = PathGlob::new("src/{a,b").unwrap_err().to_string();
        assert!(err.contains("invalid glob `src/{a,b`") && err.contains("unclosed"), "{err}");
        assert!(PathGlob::new("").is_err());
        assert!(PathGlob::new("!").is_err());
    }
}
