//! Environment variables that change which code a program runs (`BASH_ENV`, `LD_PRELOAD`,
//! `NODE_OPTIONS`, `GIT_CONFIG_*`, …): the policy refuses them in a command's `env` and in
//! an inline assignment, and a `.env` file setting one is code-bearing (Gemini CLI and Qwen
//! Code load `.env` into their own process; direnv's `dotenv` exports it to the shell).

/// Environment variables that change which code a command runs (so a read-only looking
/// command would run other code): refused unless the call is escalated and approved.
pub const DANGEROUS_ENV: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "PS0",
    "PS1",
    "PS2",
    "PS4",
    "SHELLOPTS",
    "BASHOPTS",
    "IFS",
    "ZDOTDIR",
    "PATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "PAGER",
    "MANPAGER",
    "LESSOPEN",
    "LESSCLOSE",
    "EDITOR",
    "VISUAL",
    "SSH_ASKPASS",
    "RUSTC_WRAPPER",
    "RUSTC",
    "RUSTDOC",
    "CARGO_BUILD_RUSTC_WRAPPER",
    "MAKEFLAGS",
    "GCONV_PATH",
];
/// Prefixes of such variables (`LD_PRELOAD`, `GIT_CONFIG_COUNT`, `BASH_FUNC_x%%`, …).
pub const DANGEROUS_ENV_PREFIXES: &[&str] = &["LD_", "DYLD_", "BASH_FUNC_", "GIT_", "NPM_CONFIG_", "npm_config_"];
/// `GIT_*` variables that only name the author or tune output.
pub const SAFE_GIT_ENV: &[&str] = &[
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_TERMINAL_PROMPT",
    "GIT_TRACE",
    "GIT_CURL_VERBOSE",
    "GIT_MERGE_AUTOEDIT",
];
/// Whether the variable `name` changes which code a program runs.
pub fn dangerous(name: &str) -> bool {
    DANGEROUS_ENV.contains(&name)
        || (DANGEROUS_ENV_PREFIXES.iter().any(|p| name.starts_with(p)) && !SAFE_GIT_ENV.contains(&name))
}

/// Why a `.env` file's text must not reach the programs that load it: the first variable it
/// sets that changes which code they run (`NAME=…`, `export NAME=…`, as dotenv reads it).
pub fn judge_dotenv(text: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(text);
    text.lines().find_map(|line| {
        let line = line.trim_start();
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        let (name, _) = line.split_once('=')?;
        let name = name.trim();
        dangerous(name).then(|| format!("it sets `{name}`, which changes which code the programs that load it run"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dotenv_that_sets_what_runs_is_refused() {
        assert!(judge_dotenv(b"DATABASE_URL=postgres://x\nPORT=3000\n").is_none());
        assert!(judge_dotenv(b"PORT=1\nNODE_OPTIONS=--require ./x.js\n").is_some());
        assert!(judge_dotenv(b"  export LD_PRELOAD=/tmp/x.so").is_some());
        assert!(judge_dotenv(b"# GIT_SSH_COMMAND=x\nA=1").is_none());
    }
}
