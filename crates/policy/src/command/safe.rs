//! The read-only list (Codex's, plus a few file-inspection programs): programs that only read
//! with any arguments, and the ones that only read with some. Every entry has its writing or
//! executing variants handled, and a test that names one per entry (or says it has none).

use crate::command::rules::base_name;

/// Programs that only read, whatever their arguments.
pub(super) const ANY_ARGS: &[&str] = &[
    "cat", "cd", "cut", "echo", "expr", "false", "grep", "head", "id", "ls", "nl", "paste", "pwd", "rev", "seq",
    "stat", "tail", "tr", "true", "uname", "wc", "which", "whoami", "numfmt", "tac", "du", "df", "basename", "dirname",
    "realpath", "readlink",
];

/// Programs that only read with some arguments (see [`is_safe`]).
#[cfg(test)]
pub(super) const SOME_ARGS: &[&str] = &["uniq", "file", "sort", "base64", "find", "rg", "git", "sed"];

/// Whether `argv` (every word known) only reads.
pub(super) fn is_safe(argv: &[String]) -> bool {
    let program = argv.first().map_or("", |p| base_name(p));
    let args = argv.get(1..).unwrap_or_default();
    let any = |bad: &dyn Fn(&str) -> bool| args.iter().any(|a| bad(a));
    let operands = args.iter().filter(|a| !a.starts_with('-') || a.as_str() == "-").count();
    if ANY_ARGS.contains(&program) {
        return true;
    }
    match program {
        // `uniq IN OUT` writes OUT.
        "uniq" => operands <= 1,
        // `file -C -m MAGIC` compiles MAGIC into MAGIC.mgc.
        "file" => !any(&|a| a == "--compile" || (a.starts_with('-') && !a.starts_with("--") && a.contains('C'))),
        // `sort -o OUT`, `--output`, and `--compress-program PROG` (runs it).
        "sort" => !any(&|a| {
            a.starts_with("--output")
                || a.starts_with("--compress-program")
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('o'))
        }),
        "base64" => !any(&|a| a == "-o" || a == "--output" || a.starts_with("--output=") || a.starts_with("-o")),
        "find" => !any(&|a| {
            matches!(
                a,
                "-exec" | "-execdir" | "-ok" | "-okdir" | "-delete" | "-fls" | "-fprint" | "-fprint0" | "-fprintf"
            )
        }),
        "rg" => !any(&|a| {
            a == "--pre"
                || a.starts_with("--pre=")
                || a == "--hostname-bin"
                || a.starts_with("--hostname-bin=")
                || a == "--search-zip"
                || a == "-z"
        }),
        "git" => git_is_read_only(args),
        "sed" => {
            argv.len() <= 4 && args.first().is_some_and(|a| a == "-n") && args.get(1).is_some_and(|a| sed_print(a))
        }
        _ => false,
    }
}

/// `git status|log|diff|show|branch` in this repository: no config overrides (`-c`), no other
/// repository or work tree (`-C`, `--git-dir`, `--work-tree`: another repository's fsmonitor
/// and hooks would run), and no option that writes or runs a program.
fn git_is_read_only(args: &[String]) -> bool {
    let Some((i, subcommand)) = args.iter().enumerate().find(|(_, a)| !a.starts_with('-')) else { return false };
    // Any global option (`-C`, `-c`, `--git-dir`, `--work-tree`, `--exec-path`, …) is out.
    if i > 0 {
        return false;
    }
    let rest = &args[i + 1..];
    let writes = |r: &String| {
        matches!(r.as_str(), "--output" | "--ext-diff" | "--textconv" | "--exec" | "--paginate")
            || r.starts_with("--output=")
            || r.starts_with("--exec=")
    };
    match subcommand.as_str() {
        "status" | "log" | "diff" | "show" => !rest.iter().any(writes),
        "branch" => rest.iter().all(|r| {
            matches!(
                r.as_str(),
                "--list" | "-l" | "--show-current" | "-a" | "--all" | "-r" | "--remotes" | "-v" | "-vv" | "--verbose"
            ) || r.starts_with("--format=")
        }),
        _ => false,
    }
}

/// `Np` or `M,Np`.
fn sed_print(arg: &str) -> bool {
    let Some(range) = arg.strip_suffix('p') else { return false };
    let mut parts = range.splitn(2, ',');
    parts.all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<String> {
        shlex::split(line).unwrap()
    }

    /// Every entry of the list: a read-only use, and a use that writes or runs something (or
    /// why it has none).
    const TABLE: &[(&str, &str, Option<&str>)] = &[
        ("cat", "cat a b", None),
        ("cd", "cd src", None),
        ("cut", "cut -d: -f1 a", None),
        ("echo", "echo hi", None),
        ("expr", "expr 1 + 2", None),
        ("false", "false", None),
        ("grep", "grep -rn x src", None),
        ("head", "head -n 5 a", None),
        ("id", "id -u", None),
        ("ls", "ls -la", None),
        ("nl", "nl a", None),
        ("paste", "paste a b", None),
        ("pwd", "pwd", None),
        ("rev", "rev a", None),
        ("seq", "seq 10", None),
        ("stat", "stat a", None),
        ("tail", "tail -f log", None),
        ("tr", "tr a-z A-Z", None),
        ("true", "true", None),
        ("uname", "uname -a", None),
        ("wc", "wc -l a", None),
        ("which", "which git", None),
        ("whoami", "whoami", None),
        ("numfmt", "numfmt --to=iec 1024", None),
        ("tac", "tac a", None),
        ("du", "du -sh .", None),
        ("df", "df -h", None),
        ("basename", "basename a/b", None),
        ("dirname", "dirname a/b", None),
        ("realpath", "realpath a", None),
        ("readlink", "readlink -f a", None),
        ("uniq", "uniq -c a", Some("uniq a out")),
        ("file", "file a", Some("file -C -m src")),
        ("sort", "sort -u a", Some("sort -o out a")),
        ("base64", "base64 a", Some("base64 -o out a")),
        ("find", "find . -name x", Some("find . -exec touch {} ;")),
        ("rg", "rg -n x", Some("rg --pre ./evil x")),
        ("git", "git log --oneline -5", Some("git -C /other/repo status")),
        ("sed", "sed -n 1,20p a", Some("sed -i s/a/b/ a")),
    ];

    #[test]
    fn every_entry_with_its_writing_variant() {
        let listed: Vec<&str> = ANY_ARGS.iter().chain(SOME_ARGS).copied().collect();
        let tabled: Vec<&str> = TABLE.iter().map(|(p, _, _)| *p).collect();
        assert_eq!(listed, tabled, "every entry of the list has a row (in the list's order)");
        for (program, safe, unsafe_use) in TABLE {
            assert!(is_safe(&argv(safe)), "{program}: `{safe}` only reads");
            if let Some(line) = unsafe_use {
                assert!(!is_safe(&argv(line)), "{program}: `{line}` writes or runs something");
            } else {
                assert!(ANY_ARGS.contains(program), "{program} needs a writing variant");
            }
        }
        for line in [
            "git --git-dir=/other/.git status",
            "git --work-tree=/x status",
            "git -c core.fsmonitor=x status",
            "git --exec-path=/x log",
            "git log --output=x",
            "git diff --ext-diff",
            "git branch new-branch",
            "git checkout main",
            "sort --compress-program=sh a",
            "sort -uo out a",
            "uniq -c a b",
            "file --compile x",
            "find . -delete",
            "find . -fprint out",
        ] {
            assert!(!is_safe(&argv(line)), "{line}");
        }
    }
}
