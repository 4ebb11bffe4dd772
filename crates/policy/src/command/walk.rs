//! Every simple command a script can run, as the shell would see it: inside substitutions,
//! function bodies and `bash -c '…'`, behind wrappers (`sudo`, `env`, `nice`, `timeout`,
//! `coproc`, …), in `eval` and `env -S` strings, alias values, `find -exec` and `xargs`
//! commands; plus what cannot be known until it runs (a script read from a pipe, `source`d,
//! or `eval`'d from a variable), and fork bombs.

use tree_sitter::Node;

use crate::command::parse;
use crate::command::rules::base_name;
use crate::command::words::{self, Word};

/// How deep nested scripts (`bash -c`, `eval`, …) are followed.
const MAX_DEPTH: usize = 4;

/// Programs that run the command after their options.
const WRAPPERS: &[&str] = &[
    "sudo", "doas", "env", "nohup", "nice", "time", "timeout", "command", "exec", "builtin", "stdbuf", "ionice",
    "coproc", "chrt", "setsid", "unbuffer",
];
/// Shells: `-c SCRIPT` runs SCRIPT; without it they read a script from a file or stdin.
pub(super) const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "busybox"];
/// Interpreters that read their program from stdin when given none (or `-`).
pub(super) const INTERPRETERS: &[&str] =
    &["python", "python3", "python2", "node", "perl", "ruby", "php", "lua", "Rscript", "deno", "bun"];

/// What a script holds.
#[derive(Debug, Default)]
pub(super) struct Walked {
    /// Every simple command, words decoded.
    pub commands: Vec<Vec<Word>>,
    /// Why part of the script is known only when it runs (a script from a pipe, …).
    pub unknown: Vec<String>,
    /// A command name was spelled in a way that needed decoding (`\ls`, `$'ls'`, `{ls,x}`).
    pub obfuscated: bool,
    /// A function that starts itself in a pipeline or the background.
    pub fork_bomb: bool,
    /// The grammar did not parse all of it.
    pub errors: bool,
    /// The line writes a file by redirection (`> f`, `>> f`, `&> f`; `/dev/null` and
    /// descriptor copies such as `2>&1` aside).
    pub writes_files: bool,
    /// Variables the line sets for what it runs: inline (`NAME=v cmd`), through `env NAME=v
    /// cmd`, or by `export`/`declare`/`local`/`readonly`/`typeset`.
    pub assigned: Vec<String>,
}

/// Walks `script`.
pub(super) fn walk(script: &str, home: Option<&str>) -> Walked {
    let mut out = Walked::default();
    walk_into(script, home, 0, &mut out);
    out
}

fn walk_into(script: &str, home: Option<&str>, depth: usize, out: &mut Walked) {
    if depth > MAX_DEPTH {
        out.unknown.push("scripts nested too deep to follow".into());
        return;
    }
    let Some(tree) = parse(script) else {
        out.errors = true;
        out.unknown.push("text the shell grammar cannot read".into());
        fallback(script, home, out);
        return;
    };
    let root = tree.root_node();
    if root.has_error() {
        out.errors = true;
        fallback(script, home, out);
    }
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        match node.kind() {
            "command" => command(node, script, home, depth, out),
            "function_definition" => fork_bomb(node, script, out),
            "file_redirect" => out.writes_files |= writes_a_file(node, script),
            "declaration_command" => {
                for assignment in node.named_children(&mut node.walk()).filter(|c| c.kind() == "variable_assignment") {
                    note_assignment(assignment, script, out);
                }
            }
            _ => {}
        }
        // In source order: the stack pops the last pushed first.
        let children: Vec<Node<'_>> = node.children(&mut node.walk()).collect();
        stack.extend(children.into_iter().rev());
    }
}

/// Whether the command's stdin comes from elsewhere than the command's own stdin: a pipe
/// from a command before it, a `<` redirection, a here-document or here-string.
fn fed(node: Node<'_>) -> bool {
    let Some(parent) = node.parent() else { return false };
    if parent.kind() == "pipeline" {
        return parent.named_child(0) != Some(node);
    }
    parent.kind() == "redirected_statement"
        && parent.named_children(&mut parent.walk()).any(|redirect| match redirect.kind() {
            "heredoc_redirect" | "herestring_redirect" => true,
            "file_redirect" => redirect.children(&mut redirect.walk()).any(|t| !t.is_named() && t.kind() == "<"),
            _ => false,
        })
}

/// One simple command, with what it runs in turn.
fn command(node: Node<'_>, source: &str, home: Option<&str>, depth: usize, out: &mut Walked) {
    let stdin_fed = fed(node);
    let mut argv = Vec::new();
    for child in node.named_children(&mut node.walk()) {
        if child.kind() == "variable_assignment" {
            note_assignment(child, source, out);
            continue;
        }
        if matches!(child.kind(), "file_redirect" | "herestring_redirect" | "heredoc_redirect") {
            continue;
        }
        if child.kind() == "command_name" {
            let raw = child.utf8_text(source.as_bytes()).unwrap_or_default();
            let decoded = words::expand(child, source, home);
            if decoded.first().and_then(Word::known).is_some_and(|name| name != raw) {
                out.obfuscated = true;
            }
            argv.extend(decoded);
        } else {
            argv.extend(words::expand(child, source, home));
        }
    }
    effective(argv, stdin_fed, home, depth, out);
}

/// Whether the redirection `node` writes a file: an output operator whose target is neither
/// `/dev/null` nor a descriptor number.
fn writes_a_file(node: Node<'_>, source: &str) -> bool {
    let text = |n: Node<'_>| n.utf8_text(source.as_bytes()).unwrap_or_default();
    let output = node.children(&mut node.walk()).any(|t| !t.is_named() && text(t).contains('>'));
    let target = node.child_by_field_name("destination").map(text).unwrap_or_default();
    output && target != "/dev/null" && !target.chars().all(|c| c.is_ascii_digit() || c == '-')
}

/// Records the name an assignment node sets.
fn note_assignment(node: Node<'_>, source: &str, out: &mut Walked) {
    let name = node
        .child_by_field_name("name")
        .or_else(|| node.named_child(0))
        .and_then(|n| n.utf8_text(source.as_bytes()).ok())
        .unwrap_or_default();
    // `a[1]=x` sets `a`.
    let name = name.split('[').next().unwrap_or_default();
    if !name.is_empty() {
        out.assigned.push(name.to_string());
    }
}

/// The command behind wrappers, and the scripts and commands it runs (`fed`: its stdin is a
/// pipe or a redirection, so a shell or interpreter without a script runs what it reads).
fn effective(argv: Vec<Word>, fed: bool, home: Option<&str>, depth: usize, out: &mut Walked) {
    let argv = unwrap(argv, home, depth, out);
    let Some(program) = argv.first().and_then(Word::known).map(|p| base_name(p).to_string()) else {
        if !argv.is_empty() {
            out.commands.push(argv);
        }
        return;
    };
    let args = &argv[1..];
    let nested = |script: Option<&Word>, what: &str, out: &mut Walked| match script {
        Some(Word::Known(text)) => walk_into(text, home, depth + 1, out),
        _ => out.unknown.push(what.into()),
    };
    match program.as_str() {
        shell if SHELLS.contains(&shell) => {
            let dash_c = args
                .iter()
                .position(|a| a.known().is_some_and(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c')));
            match dash_c {
                Some(i) => nested(args.get(i + 1), "a `-c` script known only when it runs", out),
                None if fed && args.iter().all(|a| a.known().is_some_and(|a| a.starts_with('-'))) => {
                    out.unknown.push(format!("`{shell}` runs what is piped into it"));
                }
                // A script file is like `./script`: what it runs is its own business, as for
                // any program; only text the parser never sees as a script is unresolved.
                None => {}
            }
        }
        interpreter if INTERPRETERS.contains(&interpreter) => {
            let reads_stdin =
                args.iter().all(|a| a.known().is_some_and(|a| a.starts_with('-') && a != "-c" && a != "-e"))
                    || args.iter().any(|a| a.known() == Some("-"));
            if fed
                && reads_stdin
                && !args.iter().any(|a| matches!(a.known(), Some("-c" | "-e" | "--eval" | "-V" | "--version")))
            {
                out.unknown.push(format!("`{interpreter}` runs the program piped into it"));
            }
        }
        "eval" => {
            let joined: Option<Vec<&str>> = args.iter().map(Word::known).collect();
            match joined {
                Some(parts) => walk_into(&parts.join(" "), home, depth + 1, out),
                None => out.unknown.push("`eval` of a value known only when it runs".into()),
            }
        }
        "source" | "." => out.unknown.push(format!("`{program}` runs a script file")),
        "alias" => {
            for arg in args {
                if let Some((_, value)) = arg.known().and_then(|a| a.split_once('=')) {
                    walk_into(value, home, depth + 1, out);
                }
            }
        }
        "find" => {
            let mut i = 0;
            while i < args.len() {
                if matches!(args[i].known(), Some("-exec" | "-execdir" | "-ok" | "-okdir")) {
                    let end = args[i + 1..].iter().position(|a| matches!(a.known(), Some(";" | "+" | "\\;")));
                    let end = end.map_or(args.len(), |e| i + 1 + e);
                    let inner = args[i + 1..end]
                        .iter()
                        .map(|w| if w.known() == Some("{}") { Word::Unknown } else { w.clone() });
                    effective(inner.collect(), false, home, depth + 1, out);
                    i = end;
                }
                i += 1;
            }
        }
        "xargs" | "parallel" => {
            let mut i = 0;
            let mut replace = None;
            while i < args.len() && args[i].known().is_some_and(|a| a.starts_with('-')) {
                let flag = args[i].known().unwrap_or_default();
                let takes_value = matches!(flag, "-n" | "-L" | "-P" | "-s" | "-d" | "-a" | "-E" | "-I" | "-l");
                if flag == "-I" {
                    replace = args.get(i + 1).and_then(Word::known).map(str::to_string);
                } else if let Some(r) = flag.strip_prefix("-I").filter(|r| !r.is_empty()) {
                    replace = Some(r.to_string());
                }
                i += if takes_value { 2 } else { 1 };
            }
            let mut inner: Vec<Word> = args[i.min(args.len())..]
                .iter()
                .map(|w| match (w.known(), &replace) {
                    (Some(text), Some(r)) if text.contains(r.as_str()) => Word::Unknown,
                    _ => w.clone(),
                })
                .collect();
            if inner.is_empty() {
                inner.push(Word::Known("echo".into()));
            }
            inner.push(Word::Unknown);
            effective(inner, true, home, depth + 1, out);
        }
        _ => {}
    }
    out.commands.push(argv);
}

/// Peels wrappers (and runs `env -S` strings); returns the command behind them.
fn unwrap(mut argv: Vec<Word>, home: Option<&str>, depth: usize, out: &mut Walked) -> Vec<Word> {
    loop {
        let Some(name) = argv.first().and_then(Word::known).map(|p| base_name(p).to_string()) else { return argv };
        if !WRAPPERS.contains(&name.as_str()) {
            return argv;
        }
        let mut i = 1;
        while let Some(word) = argv.get(i) {
            let Some(text) = word.known() else { break };
            if name == "env" && (text == "-S" || text == "--split-string" || text.starts_with("--split-string=")) {
                let script = text.strip_prefix("--split-string=").map(|s| Word::Known(s.to_string()));
                match script.or_else(|| argv.get(i + 1).cloned()) {
                    Some(Word::Known(script)) => walk_into(&script, home, depth + 1, out),
                    _ => out.unknown.push("`env -S` of a value known only when it runs".into()),
                }
                return Vec::new();
            }
            let value_flag = matches!(
                text,
                "-n" | "-u"
                    | "-C"
                    | "-c"
                    | "-p"
                    | "-t"
                    | "-s"
                    | "-k"
                    | "-o"
                    | "-i"
                    | "-e"
                    | "-g"
                    | "--chdir"
                    | "--unset"
                    | "--signal"
                    | "--kill-after"
            );
            if text.starts_with('-') {
                i += if value_flag && name != "env"
                    || (name == "env" && matches!(text, "-u" | "-C" | "--unset" | "--chdir"))
                {
                    2
                } else {
                    1
                };
            } else if text.contains('=') && name == "env" {
                out.assigned.push(text.split('=').next().unwrap_or_default().to_string());
                i += 1;
            } else {
                break;
            }
        }
        // A duration (`timeout 10 CMD`) or a priority (`nice 5 CMD`).
        if argv.get(i).and_then(Word::known).is_some_and(|t| t.chars().next().is_some_and(|c| c.is_ascii_digit()))
            && matches!(name.as_str(), "timeout" | "nice" | "chrt" | "ionice")
        {
            i += 1;
        }
        if i >= argv.len() {
            return argv;
        }
        argv = argv.split_off(i);
    }
}

/// `f() { f | f & }; f`: a function that starts itself twice, or in the background.
fn fork_bomb(node: Node<'_>, source: &str, out: &mut Walked) {
    let Some(name) = node.child_by_field_name("name").and_then(|n| n.utf8_text(source.as_bytes()).ok()) else { return };
    let Some(body) = node.child_by_field_name("body") else { return };
    let mut calls = 0;
    let mut stack = vec![body];
    while let Some(inner) = stack.pop() {
        if inner.kind() == "command_name" && inner.utf8_text(source.as_bytes()).ok() == Some(name) {
            calls += 1;
        }
        stack.extend(inner.children(&mut inner.walk()));
    }
    let background = body.utf8_text(source.as_bytes()).unwrap_or_default().contains('&');
    if calls >= 2 || (calls >= 1 && background) {
        out.fork_bomb = true;
    }
}

/// A script the grammar cannot parse: its commands by a plain split on unquoted operators
/// (`;`, `|`, `&`, parentheses, newlines), each split into words by `shlex`, brace lists
/// expanded, so a forbidden rule still sees them.
fn fallback(script: &str, home: Option<&str>, out: &mut Walked) {
    out.obfuscated = true;
    for segment in segments(script) {
        let Some(tokens) = shlex::split(&segment) else {
            out.unknown.push("a script the shell grammar cannot read".into());
            continue;
        };
        let mut argv = Vec::new();
        for token in tokens {
            for word in words::braces(&token) {
                let word = match (word.as_str(), home) {
                    ("~", Some(home)) => home.to_string(),
                    _ => word,
                };
                argv.push(if word.contains('$') || word.contains('`') { Word::Unknown } else { Word::Known(word) });
            }
        }
        if !argv.is_empty() {
            out.commands.push(argv);
        }
    }
}

/// `script` split on operators outside quotes.
fn segments(script: &str) -> Vec<String> {
    let (mut out, mut current) = (Vec::new(), String::new());
    let (mut single, mut double, mut escaped) = (false, false, false);
    for c in script.chars() {
        if escaped {
            current.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' if !single => {
                escaped = true;
                current.push(c);
            }
            '\'' if !double => {
                single = !single;
                current.push(c);
            }
            '"' if !single => {
                double = !double;
                current.push(c);
            }
            ';' | '|' | '&' | '(' | ')' | '\n' if !single && !double => {
                out.push(std::mem::take(&mut current));
            }
            _ => current.push(c),
        }
    }
    out.push(current);
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}
