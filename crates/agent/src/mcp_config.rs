//! `--mcp-config` files: the `{"mcpServers": {…}}` JSON that Claude Desktop, Cursor and Claude
//! Code (`.mcp.json`) write (VS Code's `{"servers": {…}}` too), with `${VAR}` and
//! `${VAR:-default}` expanded in every value as Claude Code does.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::client::Target;

/// A file that cannot be used at all (one bad server entry only loses that server).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read the MCP config `{path}`: {reason}; pass a readable `--mcp-config` file")]
    Read {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The file is not JSON, or holds no server table.
    #[error(
        "the MCP config `{path}` is not usable: {reason}; it should be `{{\"mcpServers\": {{\"NAME\": {{\"command\": \"…\"}}}}}}`"
    )]
    Shape {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

/// How to reach one configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Transport {
    /// A program speaking MCP on stdio.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it, on top of the agent's environment.
        env: Vec<(String, String)>,
        /// Its working directory (relative ones are relative to the config file).
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request (e.g. `Authorization`).
        headers: Vec<(String, String)>,
    },
}

/// One entry of a config file.
#[derive(Debug, Clone)]
pub(crate) struct Declared {
    /// Its name (the key in `mcpServers`).
    pub name: String,
    /// How to reach it, or why it cannot be started.
    pub transport: Result<Transport, String>,
}

impl From<Transport> for Target {
    fn from(transport: Transport) -> Self {
        match transport {
            Transport::Stdio { command, args, env, cwd } => Target::Spawn { program: command.into(), args, env, cwd },
            Transport::Http { url, headers } => Target::Url { url, token: None, headers },
        }
    }
}

/// The servers of `path`, in file order; entries with `"disabled": true` are left out.
pub(crate) fn load(path: &Path, env: &dyn Fn(&str) -> Option<OsString>) -> Result<Vec<Declared>, ConfigError> {
    let shown = path.display().to_string();
    let text = toolbelt_mcp_sandbox::fs::read_small_text(path)
        .map_err(|e| ConfigError::Read { path: shown.clone(), reason: e.to_string() })?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    parse(&text, &base, env).map_err(|reason| ConfigError::Shape { path: shown, reason })
}

/// The servers of a config file's `text`; relative `cwd`s are taken from `base`.
pub(crate) fn parse(text: &str, base: &Path, env: &dyn Fn(&str) -> Option<OsString>) -> Result<Vec<Declared>, String> {
    let json: Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
    let table = json
        .get("mcpServers")
        .or_else(|| json.get("servers"))
        .ok_or("there is no `mcpServers` object")?
        .as_object()
        .ok_or("`mcpServers` is not an object")?;
    let mut declared = Vec::new();
    for (name, entry) in table {
        if entry.get("disabled").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let transport = match entry.as_object() {
            Some(entry) => transport(entry, base, env),
            None => Err("its entry is not an object".into()),
        };
        declared.push(Declared { name: name.clone(), transport });
    }
    Ok(declared)
}

fn transport(
    entry: &Map<String, Value>,
    base: &Path,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Transport, String> {
    let text = |key: &str| -> Result<Option<String>, String> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => expand(s, env).map(Some),
            Some(_) => Err(format!("`{key}` is not a string")),
        }
    };
    let pairs = |key: &str| -> Result<Vec<(String, String)>, String> {
        let Some(map) = entry.get(key) else { return Ok(Vec::new()) };
        let map = map.as_object().ok_or_else(|| format!("`{key}` is not an object"))?;
        map.iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), expand(s, env)?)),
                other => Ok((k.clone(), other.to_string())),
            })
            .collect()
    };
    let kind = text("type")?;
    match (kind.as_deref(), text("url")?, text("command")?) {
        (Some("sse"), _, _) => {
            Err("`\"type\": \"sse\"` (the old HTTP+SSE transport) is not supported; use its streamable HTTP URL".into())
        }
        (Some("http" | "streamable-http" | "streamableHttp") | None, Some(url), None) => {
            Ok(Transport::Http { url, headers: pairs("headers")? })
        }
        (Some("stdio") | None, None, Some(command)) => {
            let args = match entry.get("args") {
                None => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|a| a.as_str().ok_or("`args` holds a value that is not a string".to_string()))
                    .map(|a| a.and_then(|a| expand(a, env)))
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err("`args` is not a list of strings".into()),
            };
            let cwd = text("cwd")?.map(|dir| base.join(dir));
            Ok(Transport::Stdio { command, args, env: pairs("env")?, cwd })
        }
        (Some(other), _, _) if !matches!(other, "stdio" | "http" | "streamable-http" | "streamableHttp") => {
            Err(format!("unknown `\"type\": \"{other}\"`; use `stdio` (with `command`) or `http` (with `url`)"))
        }
        (_, Some(_), Some(_)) => Err("it has both `command` and `url`; keep one".into()),
        _ => Err("it has neither `command` (stdio) nor `url` (streamable HTTP)".into()),
    }
}

/// `value` with `${NAME}` and `${NAME:-default}` replaced from `env`; an unset name without a
/// default is an error naming it.
pub(crate) fn expand(value: &str, env: &dyn Fn(&str) -> Option<OsString>) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        let found = env(name).map(|v| v.to_string_lossy().into_owned()).filter(|v| !v.is_empty());
        match (found, default) {
            (Some(found), _) => out.push_str(&found),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                return Err(format!("`${{{name}}}` is not set; export it, or give a default as `${{{name}:-VALUE}}`"));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(key: &str) -> Option<OsString> {
        match key {
            "HOME" => Some("/home/u".into()),
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some("".into()),
            _ => None,
        }
    }

    #[test]
    fn variables_expand_with_defaults_and_unset_ones_are_named() {
        assert_eq!(expand("${HOME}/x ${NOPE:-d} $HOME ${EMPTY:-e}", &env).unwrap(), "/home/u/x d $HOME e");
        assert_eq!(expand("a ${unclosed", &env).unwrap(), "a ${unclosed");
        assert_eq!(
            expand("${NOPE}", &env).unwrap_err(),
            "`${NOPE}` is not set; export it, or give a default as `${NOPE:-VALUE}`"
        );
    }

    #[test]
    fn stdio_and_http_entries_parse_and_a_bad_one_loses_only_itself() {
        let text = r#"{"mcpServers": {
            "mem": {"command": "npx", "args": ["-y", "${NOPE:-pkg}"], "env": {"K": "${TOKEN}"}, "cwd": "sub"},
            "web": {"type": "http", "url": "https://x/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "old": {"type": "sse", "url": "https://x/sse"},
            "off": {"command": "x", "disabled": true},
            "broken": {"command": "x", "env": {"K": "${MISSING}"}},
            "empty": {}
        }}"#;
        let servers = parse(text, Path::new("/cfg"), &env).unwrap();
        let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["mem", "web", "old", "broken", "empty"]);
        assert_eq!(
            servers[0].transport,
            Ok(Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "pkg".into()],
                env: vec![("K".into(), "s3cret".into())],
                cwd: Some(PathBuf::from("/cfg/sub")),
            })
        );
        assert_eq!(
            servers[1].transport,
            Ok(Transport::Http {
                url: "https://x/mcp".into(),
                headers: vec![("Authorization".into(), "Bearer s3cret".into())]
            })
        );
        assert!(servers[2].transport.as_ref().unwrap_err().contains("not supported"));
        assert!(servers[3].transport.as_ref().unwrap_err().contains("`${MISSING}` is not set"));
        assert!(servers[4].transport.as_ref().unwrap_err().contains("neither `command`"));
        assert!(parse("{}", Path::new("/"), &env).unwrap_err().contains("no `mcpServers`"));
        assert!(parse("nope", Path::new("/"), &env).unwrap_err().contains("not JSON"));
        let vscode = parse(r#"{"servers": {"a": {"type": "stdio", "command": "a"}}}"#, Path::new("/"), &env).unwrap();
        assert!(vscode[0].transport.is_ok());
    }
}
