//! Secrets taken out of command lines before they reach the audit log: password options,
//! `-pSECRET` of the programs that take it so, authorization headers and bearer tokens,
//! credentials in URLs, and assignments to names that hold secrets (`*_TOKEN=`, `*_KEY=`, …).
//! What remains shows what ran; each secret becomes `***`.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Regex, RegexSet};

/// The mask a secret is replaced with.
const MASK: &str = "***";

/// A name that holds a secret: `password`, `passwd`, `passphrase`, `secret`, `token`,
/// `api-key`, `apikey`, `key` after a separator (`AWS_SECRET_ACCESS_KEY`, `--ssh-key`),
/// `credential(s)`, `auth`; with more parts after a separator (`SECRET_KEY_BASE`), never
/// glued to other letters (`--author`, `monkey`).
const SECRET_NAME: &str = r"(?i:[a-z0-9_.-]*(?:pass(?:word|wd|phrase)?|secret|token|api[-_]?key|[-_]key|credentials?|auth)(?:[-_][a-z0-9]+)*)";

/// Each pattern keeps group 1 and masks what group 2 matched.
static PATTERNS: LazyLock<Vec<Regex>> =
    LazyLock::new(|| sources().iter().filter_map(|source| Regex::new(source).ok()).collect());

/// All the patterns in one automaton: most lines (every path a call names) hold no secret, and
/// one search says so where seven did (about 27,000 instructions a path).
static ANY: LazyLock<Option<RegexSet>> = LazyLock::new(|| RegexSet::new(sources()).ok());

/// The patterns' sources.
fn sources() -> [String; 7] {
    [
        // `--password=x`, `--api-key x`, `--token 'x y'`.
        format!(r#"(--{SECRET_NAME}[= ])('[^']*'|"[^"]*"|[^\s'"]+)"#),
        // `NAME=value` assignments (shell, env entries, `-e NAME=value`).
        format!(r#"(\b{SECRET_NAME}=)('[^']*'|"[^"]*"|[^\s'"]+)"#),
        // `Authorization: Basic x`, `Proxy-Authorization: x`, `X-Api-Key: x`, header-style.
        r#"((?i:authorization|x-api-key|api-key|private-token|cookie):\s*(?i:bearer\s+|basic\s+|token\s+)?)([^\s'"]+)"#
            .to_string(),
        // A bare bearer token.
        r#"((?i:bearer)\s+)([A-Za-z0-9._~+/=-]{6,})"#.to_string(),
        // `scheme://user:password@host`.
        r#"([a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@'"]*:)([^\s@/'"]+)@"#.to_string(),
        // `mysql -pSECRET` and its kin (the password attached to `-p`).
        r#"(\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb|mariadb-dump|mariadb-admin)\b[^|;&\n]*?\s-p)([^\s'"]+|'[^']*'|"[^"]*")"#.to_string(),
        // `sshpass -p SECRET`, `-pSECRET`.
        r#"(\bsshpass\b[^|;&\n]*?\s-p\s?)([^\s'"]+|'[^']*'|"[^"]*")"#.to_string(),
    ]
}

/// `line` with every secret it shows masked.
pub fn redact(line: &str) -> Cow<'_, str> {
    let mut text = Cow::Borrowed(line);
    if ANY.as_ref().is_some_and(|any| !any.is_match(line)) {
        return text;
    }
    for pattern in PATTERNS.iter() {
        if pattern.is_match(&text) {
            let replaced = pattern.replace_all(&text, |caps: &regex::Captures<'_>| {
                let keep = caps.get(1).map_or("", |m| m.as_str());
                let url_at = if caps.get(0).is_some_and(|m| m.as_str().ends_with('@')) { "@" } else { "" };
                format!("{keep}{MASK}{url_at}")
            });
            text = Cow::Owned(replaced.into_owned());
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        assert_eq!(PATTERNS.len(), 7);
        assert_eq!(ANY.as_ref().map(RegexSet::len), Some(7));
    }

    #[test]
    fn secrets_are_masked_and_the_rest_kept() {
        let cases = [
            ("mysql --password=hunter2 -h db", "mysql --password=*** -h db"),
            ("psql --password 'a b' -c x", "psql --password *** -c x"),
            ("mysql -u root -pSECRET db", "mysql -u root -p*** db"),
            ("mysqldump -psecret all", "mysqldump -p*** all"),
            ("sshpass -p hunter2 ssh host", "sshpass -p *** ssh host"),
            (
                r#"curl -H "Authorization: Bearer abc.def" https://x"#,
                r#"curl -H "Authorization: Bearer ***" https://x"#,
            ),
            ("curl -H 'authorization: token ghp_123456' u", "curl -H 'authorization: token ***' u"),
            ("http GET x bearer abcdefgh", "http GET x bearer ***"),
            ("git clone https://user:pa55@github.com/a/b", "git clone https://user:***@github.com/a/b"),
            ("GITHUB_TOKEN=ghp_x gh pr list", "GITHUB_TOKEN=*** gh pr list"),
            ("AWS_SECRET_ACCESS_KEY=abc aws s3 ls", "AWS_SECRET_ACCESS_KEY=*** aws s3 ls"),
            ("export OPENAI_API_KEY=\"sk-1 2\"; run", "export OPENAI_API_KEY=***; run"),
            ("tool --api-key=xyz --verbose", "tool --api-key=*** --verbose"),
            ("DB_PASSWORD=x make", "DB_PASSWORD=*** make"),
        ];
        for (line, want) in cases {
            assert_eq!(redact(line), want, "{line}");
        }
    }

    #[test]
    fn ordinary_lines_are_untouched() {
        for line in [
            "cargo test -p toolbelt-mcp",
            "ls -p src",
            "git log --author=me",
            "grep -r keyword .",
            "echo monkey=1",
            "https://github.com/a/b",
            "ssh -p 22 host",
        ] {
            assert!(matches!(redact(line), Cow::Borrowed(_)), "{line} → {}", redact(line));
        }
    }
}
