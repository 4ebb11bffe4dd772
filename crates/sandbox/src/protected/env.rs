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

/// Name endings of variables that point a program at other code, config, certificates, hosts
/// or helpers: in a `.env` that an agent host loads into its own process (Gemini CLI, Qwen
/// Code), every program it starts inherits them.
const DOTENV_SUFFIXES: &[&str] = &[
    "_HOME",
    "_PATH",
    "_DIR",
    "_DIRS",
    "_FILE",
    "_CONFIG",
    "_CONFIG_FILE",
    "_OPTS",
    "_OPTIONS",
    "_FLAGS",
    "_ARGS",
    "_PROXY",
    "_CA_BUNDLE",
    "_CA_CERTS",
    "_CERT_FILE",
    "_CERT_DIR",
    "_HOOK",
    "_HOOKS",
    "_TOOLCHAIN",
    "_WRAPPER",
    "_RUNNER",
    "_INIT",
    "_PLUGIN",
    "_PLUGINS",
    "_ASKPASS",
    "_EXEC",
    "_COMMAND",
    "_CMD",
    "_SHELL",
    "_BIN",
    "_BASE_URL",
    "_API_BASE",
    "_ENDPOINT",
    "_INDEX_URL",
    "_EXTRA_INDEX_URL",
    "_REGISTRY",
    "_PRELOAD",
    "_STARTUP",
    "_STARTUP_HOOKS",
    "_LOADER",
    "_EDITOR",
    "_PAGER",
    "_BROWSER",
    // A directory, an rc file, a module or app to import, options added to a tool's own, a
    // backend or include path: each names code (`IPYTHONDIR`, `WGETRC`, `DJANGO_SETTINGS_MODULE`,
    // `FLASK_APP`, `PYTEST_ADDOPTS`, `MPLBACKEND`, `TEXINPUTS`, `TMUX_TMPDIR`).
    "DIR",
    "RC",
    "_MODULE",
    "_MODULES",
    "_APP",
    "ADDOPTS",
    "BACKEND",
    "INPUTS",
];
/// Name beginnings of variables that configure a toolchain or an agent host as a whole
/// (cargo and rustup, Go, pip, uv, poetry, npm, yarn, pnpm, bun, deno, Python, Ruby, Perl,
/// Lua, Java, .NET, Maven, Gradle, Docker, Kubernetes, the agent hosts and model APIs).
const DOTENV_PREFIXES: &[&str] = &[
    "CARGO_",
    "RUSTUP_",
    "RUSTC",
    "RUSTDOC",
    "RUSTFLAGS",
    "GOFLAGS",
    "GOTOOLCHAIN",
    "GOPROXY",
    "GONOSUM",
    "GOPRIVATE",
    "GOINSECURE",
    "GOSUMDB",
    "GOPATH",
    "GOROOT",
    "GOBIN",
    "GOENV",
    "GOEXPERIMENT",
    "PIP_",
    "PIPX_",
    "UV_",
    "POETRY_",
    "CONDA_",
    "PYTHON",
    "YARN_",
    "PNPM_",
    "BUN_",
    "DENO_",
    "NODE_",
    "RUBY",
    "GEM_",
    "BUNDLE_",
    "PERL",
    "LUA_",
    "JAVA",
    "JDK_",
    "DOTNET_",
    "COMPLUS_",
    "CORECLR_",
    "MAVEN_",
    "GRADLE_",
    "SBT_",
    "ANT_",
    "DOCKER_",
    "KUBE",
    "HELM_",
    "AWS_CONFIG",
    "AWS_SHARED",
    "GEMINI_",
    "GOOGLE_GEMINI",
    "QWEN_",
    "CLAUDE_",
    "ANTHROPIC_",
    "OPENAI_",
    "CODEX_",
    "OPENCODE_",
    "COPILOT_",
    "CMAKE_",
    "PKG_CONFIG",
    "SSL_CERT",
    "ELECTRON_",
    "XDG_",
    "SUDO_",
    // Editors, shells' readline and history, TLS, PHP, R, Emacs, terminals, displays, cloud
    // credentials that can name a program, host sandboxes.
    "VIM",
    "MYVIMRC",
    "GVIMINIT",
    "EXINIT",
    "EMACS",
    "INPUTRC",
    "HISTFILE",
    "OPENSSL_",
    "SSLKEYLOG",
    "PHP",
    "R_LIBS",
    "R_PROFILE",
    "R_ENVIRON",
    "TERMINFO",
    "DISPLAY",
    "WAYLAND_",
    "XAUTHORITY",
    "DBUS_",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "SEATBELT_",
    // Erlang's and OCaml's runtimes, pytest, ts-node, web frameworks' app loaders, man, less.
    "ERL_",
    "OCAML",
    "PYTEST_",
    "TS_NODE_",
    "DJANGO_",
    "FLASK_",
    "CELERY_",
    "UVICORN_",
    "GUNICORN_",
    "GTK_",
    "QT_",
    "MANOPT",
    "LESS",
];
/// Whole names of that kind the endings and beginnings miss.
const DOTENV_NAMES: &[&str] = &[
    "SHELL",
    "TERMINAL",
    "BROWSER",
    "CLASSPATH",
    "TMPDIR",
    "TEMP",
    "TMP",
    "CC",
    "CXX",
    "CPP",
    "LD",
    "AR",
    "AS",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "LIBS",
    "MAKE",
    "KUBECONFIG",
    "GNUPGHOME",
    "SSH_AUTH_SOCK",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "TZDIR",
    "LOCPATH",
    "NLSPATH",
    "RES_OPTIONS",
    "HOSTALIASES",
    "LOCALDOMAIN",
    "MALLOC_CONF",
    "GLIBC_TUNABLES",
];

/// Names the classes above would take that only tune output or select a mode.
const DOTENV_SAFE: &[&str] =
    &["NODE_ENV", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "PYTHONHASHSEED"];

/// Whether a `.env` must not set `name`: anything [`dangerous`] in a command's `env`, and the
/// wider classes above, whose names say they point programs at other code, config,
/// certificates, hosts or helpers. Compared without case (`http_proxy` is `HTTP_PROXY`).
/// Application settings (`DATABASE_URL`, `PORT`, `API_KEY`) pass.
pub fn dotenv_dangerous(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if DOTENV_SAFE.contains(&upper.as_str()) {
        return false;
    }
    dangerous(name)
        || dangerous(&upper)
        || DOTENV_NAMES.contains(&upper.as_str())
        || DOTENV_SUFFIXES.iter().any(|suffix| upper.ends_with(suffix))
        || DOTENV_PREFIXES.iter().any(|prefix| upper.starts_with(prefix))
}

/// Why a `.env` file's text must not reach the programs that load it: the first variable it
/// sets that [`dotenv_dangerous`] names, read the way the loosest loader reads it (npm's
/// `dotenv`: a line ends at `\n`, `\r\n` or a lone `\r`; `NAME=value` or `NAME: value`, an
/// optional `export`; a byte-order mark or any other blank before the name ignored). A name
/// dotenv would not read as one is ignored too.
pub fn judge_dotenv(text: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(text);
    text.split(['\n', '\r']).find_map(|line| {
        let line = line.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
        if line.starts_with('#') {
            return None;
        }
        let line = line.strip_prefix("export").filter(|rest| rest.starts_with(char::is_whitespace)).unwrap_or(line);
        let line = line.trim_start();
        // A name is whatever comes before `=` or `:` (bash's exported functions are
        // `BASH_FUNC_name%%`, which python-dotenv takes as it is).
        let end = line.find(|c: char| c == '=' || c == ':' || c.is_whitespace())?;
        let (name, rest) = line.split_at(end);
        let rest = rest.trim_start_matches([' ', '\t']);
        let value = rest.strip_prefix('=').or_else(|| rest.strip_prefix(':'))?;
        if name.is_empty() {
            return None;
        }
        if dotenv_dangerous(name) {
            return Some(format!(
                "it sets `{name}`, which points the programs that load it at other code, config or hosts"
            ));
        }
        (value.contains("$(") || value.contains('`'))
            .then(|| format!("the value of `{name}` runs a command in the loaders that substitute (`$(…)`, backticks)"))
    })
}

/// Whether a file of this name is loaded as a `.env` by some program: `.env` and its siblings
/// (`.env.local`, `.env.production`, `.env_local`), `*.env` (`dev.env`, `docker.env`),
/// `.flaskenv` and `.dotenv`, in any case (`.ENV` is `.env` on a case-insensitive disk).
pub fn is_dotenv_name(name: &std::ffi::OsStr) -> bool {
    let lower = name.to_string_lossy().to_lowercase();
    lower == ".env"
        || lower.starts_with(".env.")
        || lower.starts_with(".env_")
        || lower.starts_with(".env-")
        || (lower.ends_with(".env") && lower.len() > ".env".len())
        || lower == ".flaskenv"
        || lower == ".dotenv"
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

    #[test]
    fn exported_functions_editors_tls_and_substitutions_are_refused() {
        for text in [
            &b"BASH_FUNC_ls%%=() { touch x; }\n"[..],
            b"VIMINIT=:!touch x\n",
            b"OPENSSL_CONF=./x\n",
            b"PHPRC=.\n",
            b"HISTFILE=/root/.bashrc\n",
            b"GOOGLE_APPLICATION_CREDENTIALS=./c.json\n",
            b"A=$(touch x)\n",
            b"A=`touch x`\n",
            b"IPYTHONDIR=.\n",
            b"ERL_AFLAGS=-eval x\n",
            b"PYTEST_ADDOPTS=-p evil\n",
            b"DJANGO_SETTINGS_MODULE=evil\n",
            b"FLASK_APP=evil\n",
            b"MPLBACKEND=module://evil\n",
            b"LESS=+!id\n",
            b"MANOPT=-P ./x\n",
            b"WGETRC=./x\n",
            b"TEXINPUTS=./x\n",
            b"TMUX_TMPDIR=./x\n",
            b"GTK_MODULES=x\n",
            b"TS_NODE_COMPILER=./x.js\n",
        ] {
            assert!(judge_dotenv(text).is_some(), "{}", String::from_utf8_lossy(text));
        }
        for name in [".env", ".env.local", ".ENV", ".Env", "dev.env", ".env_local", ".flaskenv", ".dotenv"] {
            assert!(is_dotenv_name(std::ffi::OsStr::new(name)), "{name}");
        }
        for name in [".envrc", "env", "environment.yml", ".env"[1..].as_ref()] {
            assert!(!is_dotenv_name(std::ffi::OsStr::new(name)), "{name}");
        }
    }

    #[test]
    fn every_way_a_loader_reads_a_name_is_read() {
        for text in [
            &b"NODE_OPTIONS: --require ./evil.js\n"[..],
            b"\xef\xbb\xbfNODE_OPTIONS=--require ./evil.js\n",
            b"A=1\rLD_PRELOAD=./x.so\n",
            b"export\tBASH_ENV=/tmp/x\n",
            b"http_proxy=http://evil:8080\n",
        ] {
            assert!(judge_dotenv(text).is_some(), "{}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn toolchains_hosts_and_helpers_are_refused_and_app_settings_pass() {
        for name in [
            "RUSTUP_TOOLCHAIN",
            "CARGO_HOME",
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER",
            "GOFLAGS",
            "KUBECONFIG",
            "AWS_CONFIG_FILE",
            "DOTNET_STARTUP_HOOKS",
            "CLASSPATH",
            "BROWSER",
            "SHELL",
            "SUDO_ASKPASS",
            "TERMINAL",
            "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
            "UV_CONFIG_FILE",
            "PIP_CONFIG_FILE",
            "PIP_INDEX_URL",
            "TMPDIR",
            "NODE_EXTRA_CA_CERTS",
            "DOCKER_HOST",
            "OPENAI_BASE_URL",
            "ANTHROPIC_BASE_URL",
        ] {
            assert!(dotenv_dangerous(name), "{name}");
        }
        for name in
            ["DATABASE_URL", "PORT", "API_KEY", "SECRET_KEY", "NODE_ENV", "DEBUG", "APP_NAME", "REDIS_URL", "LANG"]
        {
            assert!(!dotenv_dangerous(name), "{name}");
        }
    }
}
