//! Git's config syntax read the way git reads it (`config.c`: `git_parse_source`,
//! `get_base_var`, `get_extended_base_var`, `get_value`, `parse_value`), and the keys a
//! config written by an agent may set. A key git would see and this parser missed would let a
//! command slip a program into a config, so the parser is tested against vectors git itself
//! produced (`gitconfig_vectors.json`, `git config --file=- --null --list`), and anything it
//! cannot read is refused rather than guessed.

/// One `name = value` of a config, as git names it: the section lower-cased, then the
/// subsection (as written for `[section "sub"]`, lower-cased for the legacy `[section.sub]`),
/// then the key lower-cased, joined by dots. `value` is `None` for a key with no `=`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `section[.subsection].key`.
    pub name: Vec<u8>,
    /// The value, unquoted and unescaped (`None`: a bare key, which means true).
    pub value: Option<Vec<u8>>,
}

impl Entry {
    /// The section (before the first dot).
    pub fn section(&self) -> &[u8] {
        self.name.split(|b| *b == b'.').next().unwrap_or_default()
    }

    /// The key (after the last dot).
    pub fn key(&self) -> &[u8] {
        self.name.rsplit(|b| *b == b'.').next().unwrap_or_default()
    }

    /// The subsection, if the name has one (between the first and the last dot).
    pub fn subsection(&self) -> Option<&[u8]> {
        let first = self.name.iter().position(|b| *b == b'.')?;
        let last = self.name.iter().rposition(|b| *b == b'.')?;
        (last > first).then(|| &self.name[first + 1..last])
    }

    /// The name as text (for messages).
    pub fn name_text(&self) -> String {
        String::from_utf8_lossy(&self.name).into_owned()
    }

    /// The value as text, `true` for a bare key (for messages).
    pub fn value_text(&self) -> String {
        self.value.as_deref().map_or_else(|| "true".to_string(), |v| String::from_utf8_lossy(v).into_owned())
    }
}

/// Where a config stops making sense to git (it refuses the whole file: "bad config line").
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("bad config line {line}")]
pub struct ParseError {
    /// The line, from 1.
    pub line: usize,
}

/// The bytes of a config, read one character at a time as git's `get_next_char` does: CRLF is
/// one newline, and the end of the input reads as a newline (with `eof` set).
struct Source<'a> {
    bytes: &'a [u8],
    at: usize,
    eof: bool,
    line: usize,
}

impl Source<'_> {
    fn next(&mut self) -> u8 {
        let Some(&c) = self.bytes.get(self.at) else {
            self.eof = true;
            return b'\n';
        };
        self.at += 1;
        if c == b'\r' && self.bytes.get(self.at) == Some(&b'\n') {
            self.at += 1;
            self.line += 1;
            return b'\n';
        }
        if c == b'\n' {
            self.line += 1;
        }
        c
    }

    fn error(&self) -> ParseError {
        ParseError { line: self.line + 1 }
    }
}

/// Git's `isspace` (its own ctype: tab, newline, carriage return and space; not vertical tab or
/// form feed).
fn is_space(c: u8) -> bool {
    matches!(c, b'\t' | b'\n' | b'\r' | b' ')
}

/// Git's `iskeychar`: an ASCII letter or digit, or `-`.
fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

/// Every entry of `bytes`, in order, or where git would give up.
pub fn parse(bytes: &[u8]) -> Result<Vec<Entry>, ParseError> {
    const BOM: &[u8] = b"\xef\xbb\xbf";
    let mut src = Source { bytes, at: 0, eof: false, line: 0 };
    // A whole BOM at the start is skipped; a partial one is an error.
    let bom = BOM.iter().zip(bytes).take_while(|(a, b)| a == b).count();
    if bom == BOM.len() {
        src.at = bom;
    } else if bom > 0 {
        return Err(src.error());
    }
    let mut entries = Vec::new();
    let mut base: Vec<u8> = Vec::new();
    let mut comment = false;
    loop {
        let c = src.next();
        if c == b'\n' {
            if src.eof {
                return Ok(entries);
            }
            comment = false;
            continue;
        }
        if comment || is_space(c) {
            continue;
        }
        if c == b'#' || c == b';' {
            comment = true;
            continue;
        }
        if c == b'[' {
            base = section_header(&mut src)?;
            if base.is_empty() {
                return Err(src.error());
            }
            base.push(b'.');
            continue;
        }
        if !c.is_ascii_alphabetic() {
            return Err(src.error());
        }
        let mut name = base.clone();
        name.push(c.to_ascii_lowercase());
        entries.push(value(&mut src, name)?);
    }
}

/// `get_base_var`: the section of a `[...]` header, after its `[` (lower-cased, with the
/// legacy `.sub` part), or `section.sub` for `[section "sub"]`.
fn section_header(src: &mut Source<'_>) -> Result<Vec<u8>, ParseError> {
    let mut name = Vec::new();
    loop {
        let c = src.next();
        if src.eof {
            return Err(src.error());
        }
        if c == b']' {
            return Ok(name);
        }
        if is_space(c) {
            return extended_header(src, name, c);
        }
        if !is_key_char(c) && c != b'.' {
            return Err(src.error());
        }
        name.push(c.to_ascii_lowercase());
    }
}

/// `get_extended_base_var`: `[section "subsection"]`, from the space after the section.
fn extended_header(src: &mut Source<'_>, mut name: Vec<u8>, mut c: u8) -> Result<Vec<u8>, ParseError> {
    loop {
        if c == b'\n' {
            return Err(src.error());
        }
        c = src.next();
        if !is_space(c) {
            break;
        }
    }
    if c != b'"' {
        return Err(src.error());
    }
    name.push(b'.');
    loop {
        let mut c = src.next();
        if c == b'\n' {
            return Err(src.error());
        }
        if c == b'"' {
            break;
        }
        if c == b'\\' {
            c = src.next();
            if c == b'\n' {
                return Err(src.error());
            }
        }
        name.push(c);
    }
    if src.next() != b']' {
        return Err(src.error());
    }
    Ok(name)
}

/// `get_value`: the rest of a key's name (its first letter is in `name`), then nothing (a bare
/// key) or `=` and a value.
fn value(src: &mut Source<'_>, mut name: Vec<u8>) -> Result<Entry, ParseError> {
    let mut c;
    loop {
        c = src.next();
        if src.eof || !is_key_char(c) {
            break;
        }
        name.push(c.to_ascii_lowercase());
    }
    while c == b' ' || c == b'\t' {
        c = src.next();
    }
    // Git hands the name and the value on as C strings: a NUL (which a quoted subsection
    // may hold) ends them there, so `[core "fsmonitor\0"] x = …` sets `core.fsmonitor`.
    let until_nul = |mut bytes: Vec<u8>| {
        if let Some(nul) = bytes.iter().position(|b| *b == 0) {
            bytes.truncate(nul);
        }
        bytes
    };
    let name = until_nul(name);
    if c == b'\n' {
        return Ok(Entry { name, value: None });
    }
    if c != b'=' {
        return Err(src.error());
    }
    Ok(Entry { name, value: Some(until_nul(parse_value(src)?)) })
}

/// `parse_value`: quotes, escapes, continuation lines, comments, and whitespace trimmed at the
/// end outside quotes.
fn parse_value(src: &mut Source<'_>) -> Result<Vec<u8>, ParseError> {
    let mut value = Vec::new();
    let (mut quote, mut comment) = (false, false);
    let mut trim_len = 0;
    loop {
        let mut c = src.next();
        if c == b'\n' {
            if quote {
                return Err(src.error());
            }
            if trim_len > 0 {
                value.truncate(trim_len);
            }
            return Ok(value);
        }
        if comment {
            continue;
        }
        if is_space(c) && !quote {
            if trim_len == 0 {
                trim_len = value.len();
            }
            if !value.is_empty() {
                value.push(c);
            }
            continue;
        }
        if !quote && (c == b';' || c == b'#') {
            comment = true;
            continue;
        }
        trim_len = 0;
        if c == b'\\' {
            c = src.next();
            c = match c {
                b'\n' => continue,
                b't' => b'\t',
                b'b' => 0x08,
                b'n' => b'\n',
                b'\\' | b'"' => c,
                _ => return Err(src.error()),
            };
            value.push(c);
            continue;
        }
        if c == b'"' {
            quote = !quote;
            continue;
        }
        value.push(c);
    }
}

/// The keys an agent may set in a repository's config without asking: what `git init`,
/// `git clone` (with `--filter`, `--recurse-submodules`), `git submodule init/update`,
/// `git worktree add`, `git branch -u`, `git remote add` and `git config user.*` write, and
/// settings that only tune git's own behaviour. `*` stands for any subsection. Everything
/// else is refused, whatever it is: a key git adds next year that runs a program is refused
/// before anyone has heard of it.
const ALLOWED: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.quotepath",
    "core.worktree",
    "core.sharedrepository",
    "core.checkstat",
    "core.trustctime",
    "core.untrackedcache",
    "core.commitgraph",
    "core.multipackindex",
    "core.compression",
    "core.loosecompression",
    "core.bigfilethreshold",
    "core.abbrev",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "core.protecthfs",
    "core.protectntfs",
    "core.longpaths",
    "core.preloadindex",
    "core.whitespace",
    "core.commentchar",
    "core.warnambiguousrefs",
    "extensions.objectformat",
    "extensions.refstorage",
    "extensions.partialclone",
    "extensions.preciousobjects",
    "extensions.noop",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "remote.*.push",
    "remote.*.tagopt",
    "remote.*.prune",
    "remote.*.prunetags",
    "remote.*.mirror",
    "remote.*.skipdefaultupdate",
    "remote.*.skipfetchall",
    "remote.*.promisor",
    "remote.*.partialclonefilter",
    "branch.*.remote",
    "branch.*.merge",
    "branch.*.rebase",
    "branch.*.pushremote",
    "branch.*.description",
    "submodule.*.url",
    "submodule.*.active",
    "submodule.*.branch",
    "submodule.*.fetchrecursesubmodules",
    "submodule.*.ignore",
    "submodule.active",
    "submodule.recurse",
    "user.name",
    "user.email",
    "author.name",
    "author.email",
    "committer.name",
    "committer.email",
    "init.defaultbranch",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "push.autosetupremote",
    "fetch.prune",
    "fetch.prunetags",
    "merge.ff",
    "merge.conflictstyle",
    "rebase.autostash",
    "rebase.autosquash",
    "rebase.updaterefs",
    "rerere.enabled",
    "rerere.autoupdate",
    "diff.renames",
    "diff.algorithm",
    "status.showuntrackedfiles",
    "gc.auto",
    "index.version",
    "feature.manyfiles",
    "lfs.repositoryformatversion",
    "protocol.version",
    "receive.denycurrentbranch",
];

/// Keys whose value is a URL git fetches from: a `<transport>::<address>` URL runs the
/// program `git-remote-<transport>` (`ext::` runs any command), so only plain URLs and paths
/// pass.
const URL_KEYS: &[&str] =
    &["remote.*.url", "remote.*.pushurl", "submodule.*.url", "branch.*.remote", "branch.*.pushremote"];

/// The pattern of `entry` in [`ALLOWED`]'s terms: `section.key`, or `section.*.key`.
fn pattern(entry: &Entry) -> Vec<u8> {
    let mut pattern = entry.section().to_vec();
    if entry.subsection().is_some() {
        pattern.extend_from_slice(b".*");
    }
    pattern.push(b'.');
    pattern.extend_from_slice(entry.key());
    pattern
}

/// Why git must not be given `entry` from a config an agent wrote, if it must not: its key
/// is not on the allow-list, or its URL names a remote helper.
pub fn refused(entry: &Entry) -> Option<String> {
    let pattern = pattern(entry);
    if !ALLOWED.iter().any(|allowed| allowed.as_bytes() == pattern) {
        return Some(format!("`{}` is not a key an agent may set (it can make git run a program)", entry.name_text()));
    }
    if pattern == b"core.sharedrepository" && !private_sharing(entry.value.as_deref().unwrap_or(b"true")) {
        return Some(format!(
            "`{} = {}` lets other users write the files git makes from now on (a rebase's todo, which git runs); only `umask`, `false` or a mode without group or other write may be set",
            entry.name_text(),
            entry.value_text()
        ));
    }
    if URL_KEYS.iter().any(|key| key.as_bytes() == pattern) {
        let value = entry.value.as_deref().unwrap_or_default();
        if url_runs_a_helper(value) {
            return Some(format!(
                "`{} = {}` names a remote helper, which git runs as a program",
                entry.name_text(),
                entry.value_text()
            ));
        }
    }
    None
}

/// Whether a `core.sharedRepository` value leaves the repository writable by its owner only:
/// `umask`, `false` (and git's other spellings of it), or an octal mode without group or other
/// write (`0600`, `0644`). `group`, `all` and `true` widen it.
fn private_sharing(value: &[u8]) -> bool {
    let value = value.trim_ascii().to_ascii_lowercase();
    if matches!(value.as_slice(), b"umask" | b"false" | b"no" | b"off" | b"0") {
        return true;
    }
    let octal = value.len() > 1 && value.starts_with(b"0") && value.iter().all(|c| (b'0'..=b'7').contains(c));
    octal
        && std::str::from_utf8(&value)
            .ok()
            .and_then(|v| u32::from_str_radix(v, 8).ok())
            .is_some_and(|mode| mode & 0o022 == 0)
}

/// Whether a URL makes git run a remote helper: `<transport>::<address>` (git's
/// `transport_get` runs `git-remote-<transport>`), an option-like value, or a line break.
fn url_runs_a_helper(url: &[u8]) -> bool {
    let scheme_like =
        |end: usize| end > 0 && url[..end].iter().all(|c| c.is_ascii_alphanumeric() || b"+-.".contains(c));
    let helper = url.windows(2).position(|w| w == b"::").is_some_and(scheme_like);
    // `<scheme>://…` with a scheme git has no transport of its own for runs
    // `git-remote-<scheme>` (`ext://` too).
    let foreign = url.windows(3).position(|w| w == b"://").is_some_and(|end| {
        scheme_like(end)
            && !matches!(
                url[..end].to_ascii_lowercase().as_slice(),
                b"http" | b"https" | b"ssh" | b"git" | b"file" | b"ftp" | b"ftps" | b"git+ssh" | b"ssh+git"
            )
    });
    helper || foreign || url.starts_with(b"-") || url.iter().any(|c| *c == b'\n' || *c == b'\r' || *c == 0)
}

/// Why a config an agent wrote (`after`) must not reach git, comparing with what was there
/// (`before`, `None` for a new file): each entry it adds or changes must pass [`refused`].
/// A file git cannot read is refused too (reading it differently from git would be the
/// bypass).
pub fn judge_change(before: Option<&[u8]>, after: &[u8]) -> Option<String> {
    let after = match parse(after) {
        Ok(entries) => entries,
        Err(err) => return Some(format!("it is not a config git reads the same way everywhere ({err})")),
    };
    let existing = before.is_some();
    let before = before.and_then(|bytes| parse(bytes).ok()).unwrap_or_default();
    after.iter().filter(|entry| !before.contains(entry)).find_map(|entry| {
        // `git clone --mirror` writes it into a new repository; in one that was there, it
        // turns the user's plain `git push` into a forced mirror that deletes remote branches.
        let mirror = pattern(entry) == b"remote.*.mirror"
            && !matches!(entry.value_text().trim().to_ascii_lowercase().as_str(), "false" | "no" | "off" | "0");
        if existing && mirror {
            return Some(format!(
                "`{} = {}` makes a plain `git push` force every ref of the remote to this repository's, deleting the branches it lacks",
                entry.name_text(),
                entry.value_text()
            ));
        }
        refused(entry)
    })
}

/// The `remote.*.url` entries a config an agent wrote (`after`) adds or changes against what
/// was there (`before`), as `name = value`.
pub fn new_remote_urls(before: Option<&[u8]>, after: &[u8]) -> Vec<String> {
    let Ok(after) = parse(after) else { return Vec::new() };
    let before = before.and_then(|bytes| parse(bytes).ok()).unwrap_or_default();
    after
        .iter()
        .filter(|entry| !before.contains(entry) && pattern(entry) == b"remote.*.url")
        .map(|entry| format!("{} = {}", entry.name_text(), entry.value_text()))
        .collect()
}

/// The `remote.*.url` entries of `before` that `after` no longer has (a remote removed or
/// renamed), as `name = value`.
pub fn removed_remote_urls(before: Option<&[u8]>, after: &[u8]) -> Vec<String> {
    let Some(before) = before.and_then(|bytes| parse(bytes).ok()) else { return Vec::new() };
    let after = parse(after).unwrap_or_default();
    before
        .iter()
        .filter(|entry| !after.contains(entry) && pattern(entry) == b"remote.*.url")
        .map(|entry| format!("{} = {}", entry.name_text(), entry.value_text()))
        .collect()
}

/// The `core.worktree` values a config an agent wrote (`after`) adds or changes, against what
/// was there (`before`): each must be checked where the config lies (`gitdir.rs`), since git
/// checks files out there.
pub fn new_worktrees(before: Option<&[u8]>, after: &[u8]) -> Vec<Vec<u8>> {
    let Ok(after) = parse(after) else { return Vec::new() };
    let before = before.and_then(|bytes| parse(bytes).ok()).unwrap_or_default();
    after
        .iter()
        .filter(|entry| !before.contains(entry) && pattern(entry) == b"core.worktree")
        .map(|entry| entry.value.clone().unwrap_or_default())
        .collect()
}

/// Why a change to an existing repository's config re-points where `git pull`, `git fetch`
/// or `git push` take their content from, if it does: a branch's remote (or the push
/// default) set to anything but a remote the config had before (a path is a repository the
/// agent could have made), an existing remote's fetch refspecs (what `origin/main` means),
/// URL, push URL or push refspecs changed, or `push.default`.
pub fn repointed_pulls(before: &[u8], after: &[u8]) -> Option<String> {
    let (Ok(before), Ok(after)) = (parse(before), parse(after)) else { return None };
    let remotes: Vec<Vec<u8>> = before
        .iter()
        .filter(|entry| pattern(entry) == b"remote.*.url")
        .filter_map(|entry| entry.subsection().map(<[u8]>::to_vec))
        .collect();
    for entry in after.iter().filter(|entry| !before.contains(entry)) {
        let key = pattern(entry);
        if matches!(key.as_slice(), b"branch.*.remote" | b"branch.*.pushremote" | b"remote.pushdefault") {
            let value = entry.value.clone().unwrap_or_default();
            if !remotes.contains(&value) {
                return Some(format!(
                    "`{} = {}` makes `git pull` or `git push` use `{}`, which is no remote this repository had: name one of its remotes",
                    entry.name_text(),
                    String::from_utf8_lossy(&value),
                    String::from_utf8_lossy(&value)
                ));
            }
        }
    }
    let values = |entries: &[Entry], key: &[u8], remote: Option<&[u8]>| -> Vec<Option<Vec<u8>>> {
        entries
            .iter()
            .filter(|entry| pattern(entry) == key && entry.subsection() == remote)
            .map(|entry| entry.value.clone())
            .collect()
    };
    for remote in &remotes {
        let was = values(&before, b"remote.*.fetch", Some(remote));
        if !was.is_empty() && was != values(&after, b"remote.*.fetch", Some(remote)) {
            return Some(format!(
                "the fetch refspecs of the remote `{}` changed: what its branches mean to `git pull` would change",
                String::from_utf8_lossy(remote)
            ));
        }
        // Where `git fetch` and `git push` go, and what a plain `git push` sends (a refspec
        // `:refs/heads/release` deletes that branch, `+a:b` forces over it).
        for (key, what) in [
            (&b"remote.*.url"[..], "where `git pull` fetches from"),
            (b"remote.*.pushurl", "where `git push` sends to"),
            (b"remote.*.push", "what a plain `git push` sends (or deletes, or forces)"),
        ] {
            if values(&before, key, Some(remote)) != values(&after, key, Some(remote)) {
                return Some(format!(
                    "`remote.{}.{}` changed: {what} would change; change it yourself",
                    String::from_utf8_lossy(remote),
                    String::from_utf8_lossy(&key[b"remote.*.".len()..])
                ));
            }
        }
    }
    if values(&before, b"push.default", None) != values(&after, b"push.default", None) {
        return Some(
            "`push.default` changed: which branches a plain `git push` sends (`matching`: every branch of the same name) would change; change it yourself".into(),
        );
    }
    None
}

/// The keys of `keys` (patterns, lower-cased) whose values differ between `before` and
/// `after`: added, changed or removed.
pub fn changed_keys(before: &[u8], after: &[u8], keys: &[&str]) -> Vec<String> {
    let (Ok(before), Ok(after)) = (parse(before), parse(after)) else { return vec!["(unparsable)".into()] };
    let values = |entries: &[Entry], key: &str| -> Vec<Option<Vec<u8>>> {
        entries.iter().filter(|entry| pattern(entry) == key.as_bytes()).map(|entry| entry.value.clone()).collect()
    };
    keys.iter().filter(|key| values(&before, key) != values(&after, key)).map(|key| key.to_string()).collect()
}

/// A path a trusted config names that git reads or runs: the hooks directory, an included
/// file, a program given by its path. Writing it (or beneath it) is writing code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The path as written (`~/` expanded later).
    pub path: std::path::PathBuf,
    /// What it is relative to.
    pub base: Base,
    /// The key that names it (for messages).
    pub key: String,
}

/// What a relative path in a config is relative to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// The top of the worktree (hooks and programs run there).
    Worktree,
    /// The directory of the config file (`include.path`).
    ConfigFile,
}

/// Keys (their last part) whose value is a program or a command line: git runs its first word.
const PROGRAM_KEYS: &[&str] = &[
    "cmd",
    "command",
    "program",
    "path",
    "helper",
    "driver",
    "textconv",
    "clean",
    "smudge",
    "process",
    "editor",
    "pager",
    "sshcommand",
    "askpass",
    "gitproxy",
    "fsmonitor",
    "alternaterefscommand",
    "packobjectshook",
    "uploadpack",
    "receivepack",
    "browser",
    "external",
    "difffilter",
    "defaultkeycommand",
    "sendmailcmd",
    "smtpserver",
];

/// The paths `entries` name (see [`Named`]): `core.hooksPath`, `include.path`,
/// `includeIf.*.path`, and the first word of every program or command value (aliases and
/// pagers too) that is a path rather than a name looked up in `PATH`.
pub fn named_paths(entries: &[Entry]) -> Vec<Named> {
    let mut named = Vec::new();
    for entry in entries {
        let Some(value) = entry.value.as_deref() else { continue };
        let key = entry.key();
        let section = entry.section();
        // `init.templateDir`: every later `git init` and `git clone` copies its hooks.
        let (text, base) =
            if (section == b"core" && key == b"hookspath") || (section == b"init" && key == b"templatedir") {
                (value, Base::Worktree)
            } else if (section == b"include" || section == b"includeif") && key == b"path" {
                (value, Base::ConfigFile)
            } else if PROGRAM_KEYS.iter().any(|k| k.as_bytes() == key) || section == b"alias" || section == b"pager" {
                // The program given by its path, and every file its command line names (`python3
                // tools/clean.py`, `sh ./fmt.sh`, `ssh -F ./ssh_config`): the interpreter runs it.
                let command = value.strip_prefix(b"!").unwrap_or(value);
                for word in command_files(command) {
                    named.push(Named {
                        path: std::path::PathBuf::from(word),
                        base: Base::Worktree,
                        key: entry.name_text(),
                    });
                }
                continue;
            } else {
                continue;
            };
        if text.is_empty() {
            continue;
        }
        named.push(Named {
            path: std::path::PathBuf::from(String::from_utf8_lossy(text).into_owned()),
            base,
            key: entry.name_text(),
        });
    }
    named
}

/// The words of a command line that name files, read as the shell git hands it to reads it:
/// split at its operators (`;`, `&&`, `|`, subshells, braces, function bodies), each part
/// word by word with quotes as a shell reads them (a quoted script given to `sh -c` is read
/// the same way in turn). In each part, the first word when it is a path (one with a `/`; a
/// bare name is looked up in `PATH`), and every later word that holds a `/` or looks like a
/// file name (a `.` in it), options and git's `%` placeholders left out. A part after `cd
/// DIR` names its files beneath `DIR` too; a path that follows an expansion
/// (`$(git rev-parse --show-toplevel)/x.sh`) is taken from the top of the worktree too.
fn command_files(command: &[u8]) -> Vec<String> {
    let mut files = Vec::new();
    shell_files(&String::from_utf8_lossy(command), 0, &mut files);
    files
}

fn shell_files(text: &str, depth: usize, files: &mut Vec<String>) {
    let mut cd: Option<String> = None;
    for part in text.split([';', '&', '|', '(', ')', '{', '}', '\n', '`']) {
        // A part cut inside quotes (`"$(dirname $0)/x.sh"`) does not split: word by word at
        // blanks then, its quote marks dropped.
        let words = shlex::split(part).unwrap_or_else(|| {
            part.split_whitespace().map(|w| w.trim_matches(|c| c == '"' || c == '\'').to_string()).collect()
        });
        if words.first().is_some_and(|w| w == "cd") {
            cd = words.get(1).cloned();
            continue;
        }
        let mut previous = String::new();
        for (i, word) in words.into_iter().enumerate() {
            // `python3 -m pkg.tool` runs `pkg/tool.py` (or the package `pkg/tool/`).
            if previous == "-m" && !word.starts_with('-') {
                let module = word.replace('.', "/");
                files.push(format!("{module}.py"));
                files.push(module);
            }
            previous.clone_from(&word);
            // A glob (`scripts/c3*.sh`) names whatever matches it: its whole directory.
            if let Some(at) = word.find(['*', '?', '[']) {
                if let Some(dir) = word[..at].rfind('/').map(|slash| &word[..slash]).filter(|d| !d.is_empty()) {
                    files.push(dir.trim_start_matches('/').to_string());
                }
                continue;
            }
            if depth < 4 && word.contains(char::is_whitespace) {
                shell_files(&word, depth + 1, files);
                continue;
            }
            // `-F./x` and `--file=./x` name files too.
            let word = word.split_once('=').map_or(word.as_str(), |(_, v)| v).trim_start_matches('-').to_string();
            let word = if i > 0 && word.len() > 2 && words_flag(&word) { word[1..].to_string() } else { word };
            let file = word.contains('/') || (i > 0 && word.contains('.') && !word.starts_with('.') && word != ".");
            if word.is_empty() || word.contains('%') || word.starts_with('$') || !file {
                continue;
            }
            if let Some(relative) = word.strip_prefix('/').filter(|rest| !rest.is_empty()) {
                files.push(relative.to_string());
            }
            if let Some(dir) = &cd
                && !word.starts_with('/')
            {
                files.push(format!("{dir}/{word}"));
            }
            files.push(word);
        }
    }
}

/// Whether `word` (its dashes taken off) was a one-letter option glued to its value (`F./x`).
fn words_flag(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic()) && chars.next().is_some_and(|c| c == '.' || c == '/')
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    /// Every vector git produced (`git config --file=- --null --list --no-includes`, git
    /// 2.47; `make_gitconfig_vectors.py` beside this file writes them again from any git):
    /// the same entries, or refused where git refused.
    #[test]
    fn files_a_shell_alias_runs_are_found_in_every_form() {
        for (alias, file) in [
            ("f() { bash scripts/x.sh; }; f", "scripts/x.sh"),
            ("cd tools && sh build.sh", "tools/build.sh"),
            ("sh -c \"sh scripts/z.sh\"", "scripts/z.sh"),
            ("(bash scripts/u.sh)", "scripts/u.sh"),
            ("bash $(git rev-parse --show-toplevel)/scripts/r.sh", "scripts/r.sh"),
            ("for f in scripts/q.sh; do bash $f; done", "scripts/q.sh"),
            ("python3 tools/clean.py", "tools/clean.py"),
            ("bash scripts/c3*.sh", "scripts"),
            ("python3 -m scripts.d7", "scripts/d7.py"),
            ("bash \"$(dirname $0)/scripts/e.sh\"", "scripts/e.sh"),
        ] {
            let found = command_files(alias.as_bytes());
            assert!(found.iter().any(|f| f == file), "{alias}: {found:?}");
        }
    }

    #[test]
    fn reads_every_vector_as_git_does() {
        let vectors: serde_json::Value = serde_json::from_str(include_str!("gitconfig_vectors.json")).unwrap();
        let b64 =
            |v: &serde_json::Value| base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap()).unwrap();
        let mut checked = 0;
        for vector in vectors.as_array().unwrap() {
            let name = vector["name"].as_str().unwrap();
            let input = b64(&vector["input"]);
            let parsed = parse(&input);
            if !vector["ok"].as_bool().unwrap() {
                assert!(parsed.is_err(), "{name}: git refused it, the parser read {parsed:?}");
                checked += 1;
                continue;
            }
            let parsed = parsed.unwrap_or_else(|err| panic!("{name}: git read it, the parser said {err}"));
            let expected: Vec<Entry> = vector["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|pair| Entry { name: b64(&pair[0]), value: (!pair[1].is_null()).then(|| b64(&pair[1])) })
                .collect();
            assert_eq!(parsed, expected, "{name}");
            checked += 1;
        }
        assert!(checked > 250, "{checked} vectors");
    }

    #[test]
    fn the_attacks_of_the_review_are_refused() {
        for config in [
            "[core] fsmonitor = touch PWN",
            "[filter.x]\n\tclean = touch PWN",
            "[protocol]\n\tallow = always\n[remote \"o\"]\n\turl = ext::sh -c touch% PWN",
            "[remote \"o\"]\n\turl = ext::sh -c touch% PWN",
            "[core \"fsmonitor\0\"]\n\tx = touch PWN",
            "[include]\n\tpath = ../evil",
            "[user]\n\tname = a\0b\n[core]\n\tfsmonitor = x",
            "[alias]\n\tst = !touch PWN",
            "[core]\n\thooksPath = .githooks",
            "[core]\rfsmonitor = x",
            "[remote \"o\"]\n\turl = -uhelper",
        ] {
            assert!(judge_change(None, config.as_bytes()).is_some(), "{config:?}");
        }
    }

    #[test]
    fn what_git_init_clone_and_submodules_write_passes() {
        let clone = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://github.com/o/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n[submodule \"lib\"]\n\tactive = true\n\turl = git@github.com:o/lib.git\n";
        assert_eq!(judge_change(None, clone.as_bytes()), None);
        let user = "[user]\n\temail = a@b.c\n";
        assert_eq!(
            judge_change(Some(b"[alias]\n\tst = status\n"), format!("[alias]\n\tst = status\n{user}").as_bytes()),
            None
        );
        // The user's own keys stay; adding another is judged.
        let before = b"[core]\n\thooksPath = .husky\n";
        assert_eq!(judge_change(Some(before), b"[core]\n\thooksPath = .husky\n\tbare = false\n"), None);
        assert!(judge_change(Some(before), b"[core]\n\thooksPath = /tmp/evil\n").is_some());
    }

    /// The fifth review: a shared repository lets another user plant a rebase's `exec`; a
    /// mirror turns the user's plain push into one that deletes remote branches.
    #[test]
    fn sharing_and_mirroring_an_existing_repository_are_refused() {
        let before = b"[core]\n\tbare = false\n";
        for value in ["0777", "all", "world", "everybody", "group", "true", "1", "2", "0666", "0660"] {
            let after = format!("[core]\n\tbare = false\n\tsharedRepository = {value}\n");
            assert!(judge_change(Some(before), after.as_bytes()).is_some(), "{value}");
        }
        for value in ["umask", "false", "0", "0600", "0644", "0640"] {
            let after = format!("[core]\n\tbare = false\n\tsharedRepository = {value}\n");
            assert_eq!(judge_change(Some(before), after.as_bytes()), None, "{value}");
        }
        let mirror = b"[core]\n\tbare = false\n[remote \"origin\"]\n\tmirror = true\n";
        assert!(judge_change(Some(before), mirror).is_some());
        assert_eq!(judge_change(None, mirror), None, "what `git clone --mirror` writes into a new repository");
    }

    #[test]
    fn named_paths_of_a_config() {
        let entries = parse(b"[core]\n\thooksPath = .husky/_\n\tpager = less\n\teditor = ./bin/ed -w\n[include]\n\tpath = ../shared.cfg\n[alias]\n\tx = !./tools/x.sh --y\n[filter \"f\"]\n\tclean = \"scripts/clean me\" %f\n").unwrap();
        let paths: Vec<(String, Base)> =
            named_paths(&entries).into_iter().map(|n| (n.path.display().to_string(), n.base)).collect();
        assert_eq!(
            paths,
            [
                (".husky/_".to_string(), Base::Worktree),
                ("./bin/ed".to_string(), Base::Worktree),
                ("../shared.cfg".to_string(), Base::ConfigFile),
                ("./tools/x.sh".to_string(), Base::Worktree),
                // Git takes the quotes off: the shell then runs `scripts/clean` with `me`.
                ("scripts/clean".to_string(), Base::Worktree),
            ]
        );
    }

    /// An existing remote's push URL, push refspecs and URL, and `push.default`, stay as the
    /// user set them; a new remote may be added.
    #[test]
    fn where_and_what_a_plain_push_sends_stays() {
        let before =
            b"[remote \"origin\"]\n\turl = https://example.com/a.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n";
        for (added, key) in [
            ("\tpushurl = ./e.git\n", "pushurl"),
            ("\tpush = :refs/heads/release\n", "push"),
            ("\turl = ./other.git\n", "url"),
        ] {
            let after = [&before[..], added.as_bytes()].concat();
            let why = repointed_pulls(before, &after).unwrap_or_default();
            assert!(why.contains(&format!("remote.origin.{key}")), "{key}: {why}");
        }
        let matching = [&before[..], b"[push]\n\tdefault = matching\n"].concat();
        assert!(repointed_pulls(before, &matching).is_some_and(|why| why.contains("push.default")));
        let new_remote = [&before[..], b"[remote \"up\"]\n\turl = https://example.com/b.git\n\tpushurl = x\n"].concat();
        assert_eq!(repointed_pulls(before, &new_remote), None);
    }
}
