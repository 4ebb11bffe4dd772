//! Places the server's environment names, where the user's programs look for code or
//! configuration: the directories on `PATH` and the module search paths, and every path given
//! by a variable whose name says it points programs at code or configuration
//! (`XDG_CONFIG_HOME`, `CARGO_HOME`, `GIT_TEMPLATE_DIR`, `PYTHONSTARTUP`, `BASH_ENV`, `NVM_DIR`,
//! `NODE_OPTIONS`' `--require`: the names a `.env` may not set, one classifier for both). What
//! is written at or beneath such a place, when it lies in a root, is the user's configuration.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// Search paths: a program or module put in one of their directories is found by name.
const SEARCH_PATHS: &[&str] = &[
    "PATH",
    "PYTHONPATH",
    "NODE_PATH",
    "PERL5LIB",
    "PERLLIB",
    "RUBYLIB",
    "GEM_PATH",
    "GEM_HOME",
    "PYTHONUSERBASE",
    "LD_LIBRARY_PATH",
    "CLASSPATH",
];

/// Lua's search paths: `;`-separated templates (`/x/?.lua`), the directory before the `?`.
const LUA_PATHS: &[&str] = &["LUA_PATH", "LUA_CPATH"];

/// Variables named like configuration that name what commands write or where a project is
/// (build output, temp files, a work tree): they protect nothing. `HOME` has its own rules.
const DATA_VARS: &[&str] = &[
    "HOME",
    "PWD",
    "OLDPWD",
    "TMPDIR",
    "TMP",
    "TEMP",
    "TEMPDIR",
    "XDG_RUNTIME_DIR",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET_DIR",
    "CARGO_TARGET_TMPDIR",
    "CARGO_LLVM_COV_TARGET_DIR",
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "GIT_WORK_TREE",
    "GIT_CEILING_DIRECTORIES",
    "INIT_CWD",
];

/// A place the environment names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct EnvPlace {
    /// The directory or file, absolute: as written with `..` folded, or where it really lies
    /// (each is a place of its own).
    pub path: PathBuf,
    /// The variable that names it.
    pub var: String,
    /// Whether it is a search path, which protects even a root it names.
    pub search: bool,
}

impl EnvPlace {
    /// Whether it protects what lies beneath it in `root`: a search path always (a root on
    /// `PATH` is where programs are found by name); another variable only when it names a
    /// place the root does not lie in (one naming the root itself or a directory above it,
    /// `CLAUDE_PROJECT_DIR`, `GITHUB_WORKSPACE`, says where the project is, not its config).
    pub fn guards(&self, root: &Path) -> bool {
        self.search || !root.starts_with(&self.path)
    }

    /// Why a write at or beneath it is code-bearing, for messages.
    pub fn why(&self) -> String {
        let (path, var) = (self.path.display(), &self.var);
        if self.search {
            format!("`{path}` is on your `{var}`: what is put there runs or is imported by name")
        } else {
            format!("your environment's `{var}` names `{path}`: programs run or load as configuration what is there")
        }
    }
}

/// The places this process's environment names (the server's: the user's own).
pub fn env_places() -> Vec<EnvPlace> {
    let home = std::env::var_os("HOME").map(PathBuf::from).filter(|home| home.is_absolute());
    places_of(std::env::vars_os(), home.as_deref())
}

/// The places `vars` name, a leading `~` of each expanded with `home` as bash does.
fn places_of(vars: impl Iterator<Item = (OsString, OsString)>, home: Option<&Path>) -> Vec<EnvPlace> {
    let vars: Vec<(OsString, OsString)> = vars.collect();
    let lookup = |name: &str| vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.to_string_lossy().into_owned());
    let mut places = Vec::new();
    for (name, value) in &vars {
        let var = name.to_string_lossy().into_owned();
        let upper = var.to_ascii_uppercase();
        let (pieces, search) = if SEARCH_PATHS.contains(&upper.as_str()) {
            // The loader splits `LD_LIBRARY_PATH` on `;` as well as `:`.
            (std::env::split_paths(value).flat_map(|dir| split_semicolons(&dir)).collect(), true)
        } else if LUA_PATHS.contains(&upper.as_str()) {
            (lua_dirs(value), true)
        } else if DATA_VARS.contains(&upper.as_str()) || !super::env::dotenv_dangerous(&var) {
            continue;
        } else {
            (words(value, &lookup), false)
        };
        for piece in pieces {
            let piece = match (piece.strip_prefix("~"), home) {
                (Ok(rest), Some(home)) => home.join(rest),
                _ => piece,
            };
            if !piece.is_absolute() || piece.parent().is_none() {
                continue;
            }
            let folded = crate::paths::normalize(&piece);
            if let Some(real) = real_as_far_as_it_exists(&folded)
                && real != folded
            {
                places.push(EnvPlace { path: real, var: var.clone(), search });
            }
            places.push(EnvPlace { path: folded, var: var.clone(), search });
        }
    }
    places.sort();
    places.dedup();
    places
}

/// `dir` split at each `;` (empty parts dropped).
fn split_semicolons(dir: &Path) -> Vec<PathBuf> {
    dir.to_string_lossy().split(';').filter(|part| !part.is_empty()).map(PathBuf::from).collect()
}

/// Lua's templates' directories.
fn lua_dirs(value: &OsStr) -> Vec<PathBuf> {
    value
        .to_string_lossy()
        .split(';')
        .filter_map(|template| template.split('?').next().map(|dir| PathBuf::from(dir.trim_end_matches('/'))))
        .collect()
}

/// Every path a value could give, its variables expanded (`$HOME/x`, `${HOME}/x`) as the
/// shell that reads it does: itself whole (a path may hold spaces), its list entries, its
/// words (`--require /x/hook.js`, `--config=/x/c.toml`, `||/x/lesspipe %s`, `@/x/init.lua`),
/// and each word from its first `/` on (`-I/x`, `-P/x/pager`).
fn words(value: &OsStr, lookup: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let separator = |c: char| ";=,|<>@()\"'`".contains(c) || c.is_whitespace() || (cfg!(unix) && c == ':');
    let mut pieces: Vec<PathBuf> = Vec::new();
    for text in expand(&value.to_string_lossy(), lookup) {
        pieces.push(PathBuf::from(&text));
        pieces.extend(std::env::split_paths(&text));
        for word in text.split(separator).filter(|word| !word.is_empty()) {
            pieces.push(PathBuf::from(word));
            if let Some(at) = word.find('/').filter(|at| *at > 0) {
                pieces.push(PathBuf::from(&word[at..]));
            }
        }
    }
    pieces
}

/// `text` as the shell expands its parameters, twice: with each one's value, and with each
/// one's other outcome where an operator gives one (`${X:-word}`'s word, `${X%/suffix}` with
/// the suffix removed); a value may name a place either way.
pub(super) fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> [String; 2] {
    let mut out = [String::with_capacity(text.len()), String::with_capacity(text.len())];
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.iter_mut().for_each(|o| o.push_str(&rest[..at]));
        let after = &rest[at + 1..];
        if let Some(inner) = after.strip_prefix('{') {
            let Some(end) = closing_brace(inner) else {
                out.iter_mut().for_each(|o| o.push('$'));
                rest = after;
                continue;
            };
            let [value, other] = parameter(&inner[..end], lookup);
            out[0].push_str(&value);
            out[1].push_str(&other);
            rest = &inner[end + 1..];
            continue;
        }
        let name: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if name.is_empty() {
            out.iter_mut().for_each(|o| o.push('$'));
            rest = after;
            continue;
        }
        let value = lookup(&name).unwrap_or_default();
        out.iter_mut().for_each(|o| o.push_str(&value));
        rest = &after[name.len()..];
    }
    out.iter_mut().for_each(|o| o.push_str(rest));
    out
}

/// Where the `}` closing a `${` whose inside starts `inner` is (nested ones counted).
fn closing_brace(inner: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (at, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(at),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// `${body}`'s two outcomes (see [`expand`]).
fn parameter(body: &str, lookup: &dyn Fn(&str) -> Option<String>) -> [String; 2] {
    let name: String = body.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    let value = lookup(&name).unwrap_or_default();
    let op = &body[name.len()..];
    for (prefix, default) in
        [(":-", true), (":=", true), (":?", true), (":+", false), ("-", true), ("=", true), ("+", false)]
    {
        if let Some(word) = op.strip_prefix(prefix) {
            let [word, _] = expand(word, lookup);
            let chosen = if default { if value.is_empty() { word.clone() } else { value } } else { word.clone() };
            return [chosen, word];
        }
    }
    for (prefix, suffix, longest) in [("%%", true, true), ("%", true, false), ("##", false, true), ("#", false, false)]
    {
        if let Some(pattern) = op.strip_prefix(prefix) {
            let pattern = super::pattern::Pattern::read(pattern, lookup);
            let removed = remove_matching(&value, &pattern, suffix, longest).unwrap_or_else(|| value.clone());
            return [removed.clone(), removed];
        }
    }
    [value.clone(), value]
}

/// `value` without its shortest (or `longest`) suffix (or prefix) that `pattern` matches, as
/// `${X%pattern}` and its kin give it; `None` when none matches.
fn remove_matching(value: &str, pattern: &super::pattern::Pattern, suffix: bool, longest: bool) -> Option<String> {
    let mut cuts: Vec<usize> = value.char_indices().map(|(at, _)| at).chain([value.len()]).collect();
    // Ascending cuts make a suffix longer first and a prefix shorter first.
    if suffix != longest {
        cuts.reverse();
    }
    cuts.into_iter().find_map(|at| {
        let (kept, removed) = if suffix { (&value[..at], &value[at..]) } else { (&value[at..], &value[..at]) };
        pattern.matches(removed).then(|| kept.to_string())
    })
}

/// `path` with its longest existing part resolved (symlinks, `..`) and the rest appended: where
/// a directory not made yet would be.
pub(crate) fn real_as_far_as_it_exists(path: &Path) -> Option<PathBuf> {
    let mut rest = Vec::new();
    for ancestor in path.ancestors() {
        if let Ok(real) = crate::fs::canonicalize(ancestor) {
            return Some(rest.iter().rev().fold(real, |dir, name: &&OsStr| dir.join(name)));
        }
        rest.push(ancestor.file_name()?);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(vars: &[(&str, &str)]) -> Vec<(String, String, bool)> {
        let vars = vars.iter().map(|(n, v)| (OsString::from(n), OsString::from(v)));
        places_of(vars, Some(Path::new("/nonexistent-home")))
            .into_iter()
            .map(|place| (place.path.display().to_string(), place.var, place.search))
            .collect()
    }

    fn named(vars: &[(&str, &str)], path: &str) -> bool {
        places(vars).iter().any(|(p, _, _)| p == path)
    }

    #[test]
    fn search_paths_and_their_spellings() {
        let found = places(&[("PATH", "/ws/t1/.:~/t3:relative:/ws/a/../t5")]);
        assert!(found.contains(&("/ws/t1".into(), "PATH".into(), true)), "{found:?}");
        assert!(found.contains(&("/nonexistent-home/t3".into(), "PATH".into(), true)), "{found:?}");
        assert!(found.contains(&("/ws/t5".into(), "PATH".into(), true)), "{found:?}");
        assert!(!found.iter().any(|(p, _, _)| p.contains("relative")));
        assert!(named(&[("LUA_PATH", "/ws/lua/?.lua;;")], "/ws/lua"));
    }

    #[test]
    fn variables_that_place_config_name_places_whatever_their_name() {
        for (var, value, path) in [
            ("XDG_CONFIG_HOME", "/ws/xc", "/ws/xc"),
            ("CARGO_HOME", "/ws/.cargo-home", "/ws/.cargo-home"),
            ("GIT_TEMPLATE_DIR", "/ws/gtd", "/ws/gtd"),
            ("GIT_CONFIG_GLOBAL", "/ws/gcg", "/ws/gcg"),
            ("PYTHONSTARTUP", "/ws/startup.py", "/ws/startup.py"),
            ("BASH_ENV", "/ws/env.sh", "/ws/env.sh"),
            ("ENV", "/ws/env.sh", "/ws/env.sh"),
            ("NVM_DIR", "/ws/nvm", "/ws/nvm"),
            ("INPUTRC", "/ws/inputrc", "/ws/inputrc"),
            ("NPM_CONFIG_USERCONFIG", "/ws/npmrc", "/ws/npmrc"),
            ("NODE_OPTIONS", "--require /ws/hook.js --max-old-space-size=4096", "/ws/hook.js"),
            ("JAVA_TOOL_OPTIONS", "-javaagent:/ws/agent.jar", "/ws/agent.jar"),
            ("MYVIMRC", "/ws/my configs/vimrc", "/ws/my configs/vimrc"),
            ("LESSOPEN", "||/ws/lesspipe.sh %s", "/ws/lesspipe.sh"),
            ("PERL5OPT", "-I/ws/lib -Mstrict", "/ws/lib"),
            ("LUA_INIT", "@/ws/init.lua", "/ws/init.lua"),
            ("MANOPT", "-P/ws/pager", "/ws/pager"),
            ("EXINIT", "source /ws/exrc|", "/ws/exrc"),
            ("PYENV_ROOT", "/ws/pyenv", "/ws/pyenv"),
            ("VK_ICD_FILENAMES", "/ws/icd.json", "/ws/icd.json"),
            ("ZSH_CUSTOM", "/ws/zc", "/ws/zc"),
            ("CFLAGS", "-O2 -B/ws/bin", "/ws/bin"),
        ] {
            assert!(named(&[(var, value)], path), "{var}={value} names {path}: {:?}", places(&[(var, value)]));
        }
    }

    #[test]
    fn variables_in_a_value_are_expanded_as_the_shell_does() {
        let vars = [("HOME", "/ws/home"), ("BASH_ENV", "$HOME/.benv"), ("ENV", "${HOME}/.shenv")];
        assert!(named(&vars, "/ws/home/.benv"), "{:?}", places(&vars));
        assert!(named(&vars, "/ws/home/.shenv"), "{:?}", places(&vars));
        assert!(named(&[("LD_LIBRARY_PATH", "/ws/lib;")], "/ws/lib"));
        let vars = [("HOME", "/ws/home/fh"), ("BASH_ENV", "${NOPE:-/ws/w2/t}"), ("ENV", "${HOME%/fh}/w3/t")];
        assert!(named(&vars, "/ws/w2/t"), "{:?}", places(&vars));
        assert!(named(&vars, "/ws/home/w3/t"), "{:?}", places(&vars));
        let vars = [("HOME", "/ws/h"), ("BASH_ENV", "${HOME:+/ws/alt}"), ("ENV", "${NOPE:-${HOME}/x}")];
        assert!(named(&vars, "/ws/alt") && named(&vars, "/ws/h/x"), "{:?}", places(&vars));
        let vars = [("HOME", "/ws/fh"), ("BASH_ENV", "${HOME%/*}/w7/t"), ("ENV", "${NOPE:-${HOME%/?h}/w8}")];
        assert!(named(&vars, "/ws/w7/t") && named(&vars, "/ws/w8"), "{:?}", places(&vars));
        let remove = |value: &str, pattern: &str, suffix: bool, longest: bool| {
            remove_matching(value, &super::super::pattern::Pattern::read(pattern, &|_| None), suffix, longest)
        };
        assert_eq!(remove("/a/b/c", "/*", true, false).as_deref(), Some("/a/b"));
        assert_eq!(remove("/a/b/c", "/*", true, true).as_deref(), Some(""));
        assert_eq!(remove("/a/b/c", "*/", false, false).as_deref(), Some("a/b/c"));
        assert_eq!(remove("/a/b/c", "*/", false, true).as_deref(), Some("c"));
        // The eleventh review's spellings: brackets, escapes, partial quotes, a quoted empty
        // variable (each checked against bash).
        for spelling in ["${HOME%/[f]h}", "${HOME%\\/fh}", "${HOME%\"${NOPE}\"/fh}", "${HOME%/\"f\"h}", "${HOME%/f\\h}"]
        {
            let vars = [("HOME", "/ws/fh"), ("BASH_ENV", &*format!("{spelling}/w5/t"))];
            assert!(named(&vars, "/ws/w5/t"), "{spelling}: {:?}", places(&vars));
        }
    }

    #[test]
    fn data_and_settings_name_nothing() {
        for (var, value) in [
            ("CARGO_TARGET_DIR", "/ws/target"),
            ("TMPDIR", "/ws/tmp"),
            ("PWD", "/ws/sub"),
            ("INIT_CWD", "/ws/sub"),
            ("DATABASE_URL", "postgres://u@h/db"),
            ("LANG", "C.UTF-8"),
        ] {
            assert!(places(&[(var, value)]).is_empty(), "{var}={value}: {:?}", places(&[(var, value)]));
        }
        // `/` names everything and nothing.
        assert!(places(&[("XDG_CONFIG_HOME", "/")]).is_empty());
    }

    #[test]
    fn a_variable_naming_the_root_or_above_guards_nothing_in_it_but_a_search_path_does() {
        let place = |path: &str, search| EnvPlace { path: PathBuf::from(path), var: "V".into(), search };
        assert!(!place("/ws", false).guards(Path::new("/ws")));
        assert!(!place("/", false).guards(Path::new("/ws")));
        assert!(place("/ws/xc", false).guards(Path::new("/ws")));
        assert!(place("/elsewhere", false).guards(Path::new("/ws")));
        assert!(place("/ws", true).guards(Path::new("/ws")));
    }
}
