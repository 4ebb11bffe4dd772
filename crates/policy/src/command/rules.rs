//! Forbidden command rules: the user's `forbidden_commands` (argv prefixes) and the defaults
//! for the catastrophic cases (`forbid_catastrophic = false` removes them). A rule names a
//! program (`mkfs*` is a prefix), flags that must all be present (short clusters split,
//! `rm`'s long spellings mapped: `-fr` is `-f -r`, `--recursive` is `-r`), and words that must
//! follow in order; a word `/…` matches the normalized path (`//`, `/.`, `/tmp/` are `/`,
//! `/`, `/tmp`), `~` and `$HOME` the home directory, `{root}` any root, `*=PREFIX*` a word
//! starting so. A command with words unknown until it runs (`$X`, `xargs`'s input, `find
//! -exec`'s `{}`) *may* match: the caller asks instead of passing it.

use std::path::PathBuf;

use crate::command::words::{Word, normalize_path};

/// The defaults, shown by `doctor` and the `toolbelt://policy` resource.
pub const CATASTROPHIC: &[&str] = &[
    "rm -r /",
    "rm -r /*",
    "rm -r ~",
    "rm -r $HOME",
    "rm -r {root}",
    "mkfs*",
    "dd of=/dev/*",
    "(fork bomb) a shell function that starts itself in a pipeline or in the background",
];

/// How a command compares with a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Match {
    /// It does not match.
    No,
    /// It could, depending on words known only when it runs.
    Maybe,
    /// It matches.
    Yes,
}

/// One compiled rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// As written.
    pub text: String,
    program: String,
    flags: Vec<String>,
    words: Vec<String>,
}

/// Every rule in force, with what `~`, `$HOME` and `{root}` stand for.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// The rules.
    pub rules: Vec<Rule>,
    /// Whether fork bombs are forbidden (a default).
    pub fork_bombs: bool,
    home: Option<String>,
    roots: Vec<String>,
}

impl Rules {
    /// The user's rules, with the defaults unless `catastrophic` is false.
    pub fn new(user: &[Vec<String>], catastrophic: bool, home: Option<PathBuf>, roots: &[PathBuf]) -> Self {
        let mut rules: Vec<Rule> = Vec::new();
        if catastrophic {
            for text in CATASTROPHIC.iter().filter(|t| !t.starts_with('(')) {
                rules.push(Rule::compile(&text.split_whitespace().map(String::from).collect::<Vec<_>>()));
            }
        }
        rules.extend(user.iter().map(|argv| Rule::compile(argv)));
        Self {
            rules,
            fork_bombs: catastrophic,
            home: home.map(|h| normalize_path(&h.to_string_lossy())),
            roots: roots.iter().map(|r| normalize_path(&r.to_string_lossy())).collect(),
        }
    }

    /// The home directory `~` and `$HOME` stand for.
    pub fn home(&self) -> Option<&str> {
        self.home.as_deref()
    }

    /// The strictest match of `argv` over the rules, with the rule's text.
    pub fn check(&self, argv: &[Word]) -> (Match, Option<&str>) {
        let mut best = (Match::No, None);
        for rule in &self.rules {
            let found = self.compare(rule, argv);
            if found > best.0 {
                best = (found, Some(rule.text.as_str()));
            }
        }
        best
    }

    fn compare(&self, rule: &Rule, argv: &[Word]) -> Match {
        let Some(first) = argv.first() else { return Match::No };
        let Some(program) = first.known() else { return Match::Maybe };
        if !program_matches(&rule.program, base_name(program)) {
            return Match::No;
        }
        let rm = rule.program == "rm";
        let (flags, words, unknown) = split(&argv[1..], rm);
        let missing_flags = rule.flags.iter().filter(|f| !flags.contains(f)).count();
        let mut remaining = words.iter();
        let missing_words = rule.words.iter().filter(|w| !remaining.any(|a| self.word_matches(w, a))).count();
        // A word known only when the command runs (`$DIR`, `find -exec`'s `{}`, `xargs`'s
        // input) may be any missing word, but is not taken for a missing flag (then every
        // `rm "$f"` would be asked).
        match (missing_flags, missing_words, unknown) {
            (0, 0, _) => Match::Yes,
            (0, _, true) => Match::Maybe,
            _ => Match::No,
        }
    }

    fn word_matches(&self, pattern: &str, word: &str) -> bool {
        let word = normalize_path(word);
        match pattern {
            "{root}" => self.roots.contains(&word),
            "~" | "$HOME" => self.home.as_deref().is_some_and(|home| home == word),
            "/*" => word == "/*",
            _ if pattern.ends_with('*') && pattern.len() > 1 => word.starts_with(&pattern[..pattern.len() - 1]),
            _ => normalize_path(pattern) == word,
        }
    }
}

impl Rule {
    /// A rule from its words.
    pub fn compile(argv: &[String]) -> Self {
        let program = argv.first().map(|p| base_name(p).to_string()).unwrap_or_default();
        let (flags, words, _) = split(
            &argv.get(1..).unwrap_or_default().iter().map(|w| Word::Known(w.clone())).collect::<Vec<_>>(),
            program == "rm",
        );
        Self { text: argv.join(" "), program, flags, words }
    }
}

/// `mkfs*` matches `mkfs.ext4`; anything else matches itself.
fn program_matches(pattern: &str, program: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => program.starts_with(prefix),
        None => pattern == program,
    }
}

/// The program's name without its directory (`/bin/rm` is `rm`).
pub(super) fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// Flags (short clusters split; for `rm`, `-R` and `--recursive` are `-r`, `--force` is
/// `-f`), the other words, and whether any word is unknown. After `--` everything is a word.
fn split(args: &[Word], rm: bool) -> (Vec<String>, Vec<String>, bool) {
    let (mut flags, mut words, mut unknown) = (Vec::new(), Vec::new(), false);
    let mut only_words = false;
    for arg in args {
        let Some(arg) = arg.known() else {
            unknown = true;
            continue;
        };
        if only_words || arg == "-" || !arg.starts_with('-') {
            words.push(arg.to_string());
        } else if arg == "--" {
            only_words = true;
        } else if let Some(long) = arg.strip_prefix("--") {
            let long = long.split('=').next().unwrap_or(long);
            flags.push(match (rm, long) {
                (true, "recursive") => "-r".into(),
                (true, "force") => "-f".into(),
                _ => format!("--{long}"),
            });
        } else {
            flags.extend(arg[1..].chars().map(|c| if rm && c == 'R' { "-r".into() } else { format!("-{c}") }));
        }
    }
    (flags, words, unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Rules {
        let user = vec![vec!["git".to_string(), "push".into(), "--force".into()]];
        Rules::new(&user, true, Some("/home/u".into()), &["/ws".into()])
    }

    fn check(argv: &[&str]) -> Match {
        let words: Vec<Word> =
            argv.iter().map(|w| if *w == "?" { Word::Unknown } else { Word::Known(w.to_string()) }).collect();
        rules().check(&words).0
    }

    #[test]
    fn catastrophic_defaults_in_every_spelling() {
        for argv in [
            &["rm", "-rf", "/"][..],
            &["rm", "-fr", "//"],
            &["rm", "-r", "-f", "/."],
            &["/bin/rm", "-R", "/"],
            &["rm", "--recursive", "--force", "/"],
            &["rm", "-rf", "/*"],
            &["rm", "-rf", "/home/u"],
            &["rm", "-rf", "/home/u/"],
            &["rm", "-rf", "/ws"],
            &["mkfs.ext4", "/dev/sda1"],
            &["dd", "if=/dev/zero", "of=/dev/sda"],
            &["git", "push", "origin", "--force"],
        ] {
            assert_eq!(check(argv), Match::Yes, "{argv:?}");
        }
        for argv in [
            &["rm", "-rf", "/ws/target"][..],
            &["rm", "-f", "/"],
            &["rm", "-rf", "/tmp"],
            &["dd", "of=out.img"],
            &["git", "push"],
            &["echo", "rm", "-rf", "/"],
        ] {
            assert_eq!(check(argv), Match::No, "{argv:?}");
        }
        assert_eq!(check(&["rm", "-rf", "?"]), Match::Maybe, "a word known only at run time");
        assert_eq!(check(&["?", "-rf", "/"]), Match::Maybe, "a program known only at run time");
        assert_eq!(check(&["rm", "?"]), Match::No, "an unknown word is not taken for the missing `-r`");
        assert_eq!(check(&["ls", "?"]), Match::No, "no rule names `ls`");
    }

    #[test]
    fn without_defaults_only_the_users_rules() {
        let rules = Rules::new(&[], false, None, &[]);
        assert!(rules.rules.is_empty() && !rules.fork_bombs);
        assert_eq!(
            rules.check(&[Word::Known("rm".into()), Word::Known("-rf".into()), Word::Known("/".into())]).0,
            Match::No
        );
    }
}
