//! `--store postgres://…`: the URL as tokio-postgres reads it (a host, or a Unix socket
//! directory in `?host=/run/postgresql`), the password from the URL, `PGPASSWORD` or the
//! password file (`PGPASSFILE`, else `~/.pgpass`), and the location shown in messages, which
//! never holds the password.

use std::path::PathBuf;
use std::str::FromStr;

use tokio_postgres::config::Host;

use toolbelt_mcp_sandbox::fs;

/// Whether `url` names a PostgreSQL database.
#[cfg(test)]
pub(super) fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// The connection settings of `url`, and its location for messages (no password).
pub fn parse(url: &str) -> Result<(tokio_postgres::Config, String), String> {
    let mut config = tokio_postgres::Config::from_str(url).map_err(|err| {
        format!("`--store` is not a PostgreSQL URL tokio-postgres can read ({err}); e.g. `postgres://toolbelt@db.internal:5432/toolbelt` or `postgres://toolbelt@/toolbelt?host=/run/postgresql`")
    })?;
    if config.get_user().is_none() {
        let user =
            std::env::var("PGUSER").ok().or_else(|| std::env::var("USER").ok()).unwrap_or_else(|| "postgres".into());
        config.user(user);
    }
    if config.get_dbname().is_none() {
        let user = config.get_user().unwrap_or("postgres").to_string();
        config.dbname(user);
    }
    if config.get_hosts().is_empty() {
        // libpq's default: the local server's socket (TCP on localhost where there are none).
        #[cfg(unix)]
        config.host_path("/run/postgresql");
        #[cfg(not(unix))]
        config.host("localhost");
    }
    config.application_name("toolbelt-mcp");
    config.connect_timeout(std::time::Duration::from_secs(5));
    let location = location(&config);
    if config.get_password().is_none() {
        let password =
            std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()).or_else(|| from_password_file(&config));
        if let Some(password) = password {
            config.password(password);
        }
    }
    Ok((config, location))
}

/// `postgres://user@host:port/db` (or `?host=/socket/dir`), without the password.
fn location(config: &tokio_postgres::Config) -> String {
    let user = config.get_user().unwrap_or_default();
    let db = config.get_dbname().unwrap_or_default();
    let port = config.get_ports().first().copied().unwrap_or(5432);
    match config.get_hosts().first() {
        Some(Host::Tcp(host)) => format!("postgres://{user}@{host}:{port}/{db}"),
        #[cfg(unix)]
        Some(Host::Unix(dir)) => format!("postgres://{user}@/{db}?host={}&port={port}", dir.display()),
        None => format!("postgres://{user}@/{db}"),
    }
}

/// The password the password file (`PGPASSFILE`, else `~/.pgpass`) gives this connection.
fn from_password_file(config: &tokio_postgres::Config) -> Option<String> {
    let file = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".pgpass")))?;
    password_in(&fs::read_small_text(&file).ok()?, config)
}

/// The password of the first line of a password file whose host, port, database and user
/// match, as libpq reads it (`*` matches anything; `localhost` stands for a Unix socket).
fn password_in(text: &str, config: &tokio_postgres::Config) -> Option<String> {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        _ => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432).to_string();
    let wanted = [host.as_str(), &port, config.get_dbname().unwrap_or_default(), config.get_user().unwrap_or_default()];
    text.lines().filter(|line| !line.trim_start().starts_with('#')).find_map(|line| {
        let [host, port, db, user, password] = <[String; 5]>::try_from(split_fields(line)).ok()?;
        let matches = [host, port, db, user].iter().zip(wanted).all(|(field, want)| field == "*" || field == want);
        matches.then_some(password)
    })
}

/// The `:`-separated fields of a password file line, `\:` and `\\` unescaped.
fn split_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().into_iter().for_each(|f| f.extend(chars.next())),
            ':' => fields.push(String::new()),
            c => fields.last_mut().into_iter().for_each(|f| f.push(c)),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_sockets_and_locations_never_show_the_password() {
        let (config, location) = parse("postgres://alice:s3cret@db.internal:6543/team").unwrap();
        assert_eq!(location, "postgres://alice@db.internal:6543/team");
        assert_eq!(config.get_password(), Some(&b"s3cret"[..]));
        let (_, location) = parse("postgres://toolbelt@/toolbelt?host=/run/postgresql").unwrap();
        assert_eq!(location, "postgres://toolbelt@/toolbelt?host=/run/postgresql&port=5432");
        assert!(parse("postgres://a@b:notaport/c").unwrap_err().contains("e.g."));
        assert!(is_postgres_url("postgresql://x") && !is_postgres_url("sqlite:///x"));
    }

    #[test]
    fn password_file_lines_are_matched_as_libpq_does() {
        assert_eq!(split_fields(r"h:5432:db:u:pa\:ss\\w"), ["h", "5432", "db", "u", r"pa:ss\w"]);
        let text = "# comment\nother:5432:*:bob:wrong\ndb.internal:*:team:bob:right\n*:*:*:*:fallback\n";
        let (config, _) = parse("postgres://bob@db.internal/team").unwrap();
        assert_eq!(password_in(text, &config).as_deref(), Some("right"));
        let (config, _) = parse("postgres://bob@/team?host=/run/postgresql").unwrap();
        assert_eq!(password_in(text, &config).as_deref(), Some("fallback"));
        assert_eq!(password_in("localhost:5432:team:bob:sock\n", &config).as_deref(), Some("sock"));
    }
}
