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
    "_EXE",
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
    // Compiler and make flags (`CFLAGS=-B/x` picks the programs gcc runs, `GNUMAKEFLAGS` may
    // `--eval` an include), a tool's root or library dir (`PYENV_ROOT`, `ANSIBLE_LIBRARY`),
    // file lists that load code (`VK_ICD_FILENAMES`), plugin dirs (`ZSH_CUSTOM`), a working
    // directory a tool reads its code from (`VAGRANT_CWD`).
    "FLAGS",
    "_ROOT",
    "_FILENAMES",
    "_LIBRARY",
    "_CUSTOM",
    "_CWD",
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
    // Programs other tools run, their config and the hosts they send secrets to.
    "CLOUDSDK_",
    "RSYNC_",
    "CVS_",
    "HGRC",
    "HGEDITOR",
    "FCEDIT",
    "AWK",
    "TCL",
    "FPATH",
    "CDPATH",
    "VIRTUAL_ENV",
    "PIPENV_",
    "CGO_",
    "GROFF_",
    "MANROFF",
    "VAULT_",
    "AWS_ENDPOINT",
    "OLLAMA_",
    "CONTAINER_",
    "TRANSFORMERS_",
    "HF_",
];
/// Whole names of that kind the endings and beginnings miss.
const DOTENV_NAMES: &[&str] = &[
    "PREFIX",
    "WINEPREFIX",
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
    "BUILDKIT_HOST",
    // Make reads every file `MAKEFILES` names before any makefile, in every project; Composer
    // runs the scripts of the file `COMPOSER` names.
    "MAKEFILES",
    "COMPOSER",
    // Bash's own variables, which a shell that loads the file (`set -a; . ./.env`) acts on:
    // those it evaluates as arithmetic on assignment (an array subscript there runs a command
    // substitution, even from a single-quoted value), those it expands at every prompt or mail
    // check, and those that change how it reads, finds or writes what follows.
    "RANDOM",
    "SRANDOM",
    "OPTIND",
    "OPTERR",
    "HISTCMD",
    "LINENO",
    "SECONDS",
    "EPOCHSECONDS",
    "EPOCHREALTIME",
    "BASH_ARGV0",
    "BASH_XTRACEFD",
    "BASH_COMPAT",
    "BASHOPTS",
    "SHELLOPTS",
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT_COMMAND",
    "MAIL",
    "MAILPATH",
    "MAILCHECK",
    "HISTFILE",
    "IFS",
    "CDPATH",
    "EXECIGNORE",
    "GLOBIGNORE",
    "INPUTRC",
    "HOSTFILE",
    "POSIXLY_CORRECT",
    "HISTCHARS",
    "PROMPT",
    "RPROMPT",
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

/// Why a `.env` file's text must not reach the programs that load it. A `.env` is read by
/// loaders that disagree (npm's `dotenv`, python-dotenv, Ruby's, Symfony's, direnv's `dotenv`,
/// and `set -a; . ./.env`, which runs it as shell), so only what they all read alike passes:
/// blank lines, `#` comments, and `[export ]NAME=value` lines, where `NAME` is a plain name
/// and `value` a plain word, a single-quoted string, or a double-quoted one without command
/// substitution, followed by nothing but a comment. Anything else (a bare command, `A=x cmd`,
/// `A=1;cmd`, a quoted key, a line break only some loaders see) is refused, and so is a name
/// [`dotenv_dangerous`] names.
pub fn judge_dotenv(text: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(text);
    if text.contains(['\u{b}', '\u{c}', '\u{1c}', '\u{1d}', '\u{1e}', '\u{85}', '\u{2028}', '\u{2029}']) {
        return Some("it holds a line break some loaders read and others do not (U+2028, a form feed, …)".into());
    }
    // The names set by the lines above: a value may refer to them (each was judged).
    let mut defined: Vec<String> = Vec::new();
    text.split(['\n', '\r']).find_map(|line| {
        let line = line.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
        if line.is_empty() || line.starts_with('#') {
            return None;
        }
        let line = line.strip_prefix("export").filter(|rest| rest.starts_with([' ', '\t'])).unwrap_or(line).trim_start();
        let end = line.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-'));
        let (name, rest) = line.split_at(end.unwrap_or(line.len()));
        let plain_name = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
        let rest = rest.trim_start_matches([' ', '\t']);
        let value = rest.strip_prefix('=').or_else(|| rest.strip_prefix(':'));
        let (true, Some(value)) = (plain_name, value) else {
            let shown: String = line.chars().take(60).collect();
            return Some(format!(
                "`{shown}` is not a `NAME=value` line: a loader that runs the file as shell (`set -a; . ./.env`) would run it"
            ));
        };
        if dotenv_dangerous(name) {
            return Some(format!(
                "it sets `{name}`, which points the programs that load it at other code, config or hosts"
            ));
        }
        let value = value.trim_start_matches([' ', '\t']);
        if !plain_value(value) {
            return Some(format!(
                "the value of `{name}` is not one plain word or quoted string (a loader that runs the file as shell would run what follows, or substitute `$(…)`)"
            ));
        }
        let found = named_path(value, &defined).map(|path| {
            format!(
                "the value of `{name}` names a file or directory (`{path}`): whatever its name, a variable that points at a path can point a program at code or config (`VK_ICD_FILENAMES`, `M4`, `PYENV_ROOT`); put paths in the program's own config, or escalate to ask the user"
            )
        });
        defined.push(name.to_string());
        found
    })
}

/// Variables a `.env` value may refer to that never hold a path: who and where the user is.
const PLAIN_VARS: &[&str] = &["USER", "LOGNAME", "USERNAME", "HOSTNAME", "HOST", "LANG", "TZ", "TERM"];

/// The first piece of a `.env` value (one plain word or quoted string) that names a file or
/// directory: one starting `./`, `../` or `~` (`~+`, `~user`), `.` or `..`, a variable
/// that may hold one (any but those `defined` above and [`PLAIN_VARS`]; `$X/y` always), or an absolute path whose first
/// directory exists here (a key that happens to start with `/` names none). A URL (`scheme://`)
/// names a host, not a path, unless it is a `file:` one; lists (`:`, `;`, `,`) and options
/// (`--x=/y`) are looked into.
fn named_path(value: &str, defined: &[String]) -> Option<String> {
    // Nothing is expanded between single quotes.
    let single_quoted = value.starts_with('\'');
    let body = match value.chars().next() {
        Some(quote @ ('\'' | '"')) => value[1..].split(quote).next().unwrap_or_default(),
        _ => value.split([' ', '\t']).next().unwrap_or_default(),
    };
    let scheme = body.split_once("://").map(|(scheme, _)| scheme);
    if scheme.is_some_and(|scheme| {
        !scheme.eq_ignore_ascii_case("file")
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
    }) {
        return None;
    }
    body.split(|c: char| ":;,=".contains(c) || c.is_whitespace()).find_map(|piece| {
        let relative = ["./", "../", "~"].iter().any(|start| piece.starts_with(start)) || [".", ".."].contains(&piece);
        // `$PWD`, `$0`, `${HOME}/x`, `$X/y`: a variable a loader or the shell expands, which
        // may hold a path, unless a line above set it (and was judged) or it names the user.
        let variable = piece.strip_prefix('$').is_some_and(|rest| {
            let rest = rest.strip_prefix('{').unwrap_or(rest);
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            let after = rest[name.len()..].trim_start_matches('}');
            // `$1`…`$9` are a script's arguments (none when a loader or `set -a; .` reads it).
            let positional = name.len() == 1 && name != "0" && name.chars().all(|c| c.is_ascii_digit());
            let known = defined.contains(&name) || PLAIN_VARS.contains(&name.as_str()) || positional;
            !single_quoted && (after.starts_with('/') || (!name.is_empty() && !known))
        });
        let top = piece.trim_start_matches('/');
        let absolute = piece.starts_with('/')
            && top
                .split('/')
                .next()
                .is_some_and(|first| !first.is_empty() && crate::fs::is_dir(&std::path::Path::new("/").join(first)));
        (relative || absolute || variable).then(|| piece.to_string())
    })
}

/// Whether `value` is what every loader reads alike: empty, a plain word (no blank, quote,
/// or shell operator; `$NAME` and `${NAME}` allowed), `'…'`, or `"…"` without `${x@…}`; then
/// at most blanks and a `#` comment; and nowhere `$(` or a backtick.
fn plain_value(value: &str) -> bool {
    let (body, after) = if let Some(rest) = value.strip_prefix('\'') {
        let Some(end) = rest.find('\'') else { return false };
        (None, &rest[end + 1..])
    } else if let Some(rest) = value.strip_prefix('"') {
        let Some(end) = rest.find('"') else { return false };
        (Some(&rest[..end]), &rest[end + 1..])
    } else {
        let end = value.find([' ', '\t']).unwrap_or(value.len());
        let word = &value[..end];
        if word.contains([';', '&', '|', '<', '>', '(', ')', '{', '}', '`', '\'', '"', '\\']) && !plain_braces(word) {
            return false;
        }
        (Some(word), &value[end..])
    };
    let after = after.trim_start_matches([' ', '\t']);
    if !(after.is_empty() || after.starts_with('#')) {
        return false;
    }
    // A command substitution counts even single-quoted: bash evaluates some variables'
    // values again (arithmetic, prompts, mail paths), and nothing a `.env` needs holds one.
    !value.contains("$(") && !value.contains('`') && body.is_none_or(plain_dollars)
}

/// Whether every `$` in `text` starts `$NAME` or `${NAME}` (no `${x@P}`, `${x:-$(…)}`).
fn plain_dollars(text: &str) -> bool {
    text.match_indices('$').all(|(at, _)| {
        let rest = &text[at + 1..];
        match rest.strip_prefix('{') {
            Some(inner) => {
                inner.find('}').is_some_and(|end| inner[..end].chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            }
            None => true,
        }
    })
}

/// Whether the only braces of an unquoted `word` are `${NAME}` forms.
fn plain_braces(word: &str) -> bool {
    !word.contains([';', '&', '|', '<', '>', '(', ')', '`', '\'', '"', '\\'])
        && word.replace("${", "").matches('{').count() == 0
        && plain_dollars(word)
}

/// Whether a file of this name is loaded as a `.env` by some program: `.env` and its siblings
/// (`.env.local`, `.env.production`, `.env_local`), `*.env` (`dev.env`, `docker.env`),
/// `.flaskenv` and `.dotenv`, in any case (`.ENV` is `.env` on a case-insensitive disk).
pub fn is_dotenv_name(name: &std::ffi::OsStr) -> bool {
    let lower = name.to_string_lossy().to_lowercase();
    // `.envrc` and `.envrc.local` are direnv's (a table entry: any change asks).
    (lower.starts_with(".env") && !lower.starts_with(".envrc"))
        || (lower.ends_with(".env") && lower.len() > ".env".len())
        || lower.contains(".env.")
        || lower == ".flaskenv"
        || lower == ".dotenv"
        || lower == ".secrets"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_naming_a_path_is_refused_whatever_the_name() {
        for text in [
            "ICD=/tmp/evil.json\n",
            "EGL_VENDOR=./evil.json\n",
            "M4=./m4\n",
            "ZSH_STUFF=~/x\n",
            "PGSSLROOTCERT=\"/tmp/ca.pem\"\n",
            "VAGRANT_PLACE='../elsewhere'\n",
            "GHC_ENVIRONMENT=.\n",
            "SOMETHING=a:/tmp/x\n",
            "X=file:///tmp/evil\n",
            "OPTS_LIKE=--load=/tmp/x\n",
            "PROJECT_ROOT_DIRECTORY=~+\n",
            "WHERE=${PWD}\n",
            "APPNAME=${DIRSTACK}\n",
            "APPNAME=$_\n",
            "APPNAME=$0\n",
            "APPNAME=${HISTFILE}\n",
            "INCLUDE=$SOMEWHERE/mk/common.mk\n",
        ] {
            assert!(judge_dotenv(text.as_bytes()).is_some_and(|why| why.contains("names a file")), "{text}");
        }
        for text in [
            "DATABASE_URL=postgres://u@h:5432/db\n",
            "REDIS_URL=redis://localhost:6379/0\n",
            "SECRET=/Yx9Qz+abc/def==\n",
            "TZ=Europe/Berlin\n",
            "GREETING='costs $5, see docs'\n",
        ] {
            assert_eq!(judge_dotenv(text.as_bytes()), None, "{text}");
        }
    }

    #[test]
    fn a_dotenv_that_sets_what_runs_is_refused() {
        assert!(judge_dotenv(b"DATABASE_URL=postgres://x\nPORT=3000\n").is_none());
        assert!(judge_dotenv(b"PORT=1\nNODE_OPTIONS=--require ./x.js\n").is_some());
        assert!(judge_dotenv(b"  export LD_PRELOAD=/tmp/x.so").is_some());
        assert!(judge_dotenv(b"# GIT_SSH_COMMAND=x\nA=1").is_none());
    }

    #[test]
    fn only_what_every_loader_reads_alike_passes() {
        for text in [
            &b"PORT=3000\nDATABASE_URL=postgres://u@h/db # main\n"[..],
            b"export A='a b c'\nB=\"x $USER y\"\nC=${USER}x\nD=\n# c\n\n",
            b"NAME: value\n",
        ] {
            assert_eq!(judge_dotenv(text), None, "{}", String::from_utf8_lossy(text));
        }
        for text in [
            &b"touch /tmp/x\n"[..],
            b"A=x touch /tmp/x\n",
            b"A=1;touch /tmp/x\n",
            b"A=1|id\n",
            b"A=1&&id\n",
            b"A=1 >/tmp/x\n",
            b"A=<(id)\n",
            b"alias ls=id\n",
            b"function f { id; }\n",
            b"A=\"x\" id\n",
            b"'NODE_OPTIONS'=--require ./e.js\n",
            "DATABASE_URL=x #\u{2028}NODE_OPTIONS=--require ./e.js\n".as_bytes(),
            b"A=1\x0bNODE_OPTIONS=x\n",
            b"A=\"${x@P}\"\n",
            b"A=\"${x:-$(id)}\"\n",
        ] {
            assert!(judge_dotenv(text).is_some(), "{}", String::from_utf8_lossy(text));
        }
    }

    /// Bash evaluates some of its own variables again: as arithmetic on assignment (a
    /// subscript runs a command substitution, even from a single-quoted value), or at every
    /// prompt and mail check. Those names, and a substitution in any quoting, are refused.
    #[test]
    fn values_bash_evaluates_again_are_refused() {
        for text in [
            &b"RANDOM='a[$(touch /tmp/x)]'\n"[..],
            b"export OPTIND='x[$(id)]'\n",
            b"HISTCMD='a[`id`]'\n",
            b"SRANDOM=1\n",
            b"MAILPATH='/tmp/m?$(id)'\n",
            b"PS1='\\140id\\140'\n",
            b"PROMPT_COMMAND=id\n",
            b"IFS=x\n",
            b"GREETING='hello $(id)'\n",
            b"MAMBA_EXE=./evil.sh\n",
            b"BUILDKIT_HOST=tcp://evil:1234\n",
        ] {
            assert!(judge_dotenv(text).is_some(), "{}", String::from_utf8_lossy(text));
        }
        assert_eq!(judge_dotenv(b"GREETING='hello $USER, costs $5'\nPORT=1\n"), None);
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
        for name in [
            ".env",
            ".env.local",
            ".ENV",
            ".Env",
            "dev.env",
            ".env_local",
            ".flaskenv",
            ".dotenv",
            ".env.json",
            ".envs",
            ".env~",
            ".environment",
            ".secrets",
            "app.env.j2",
            ".env.local.php",
        ] {
            assert!(is_dotenv_name(std::ffi::OsStr::new(name)), "{name}");
        }
        for name in [".envrc", ".envrc.local", "env", "environment.yml", "README.md"] {
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
