//! The judge's own `git`: a repository's objects and a command's new ones read through a git
//! dir of the judge's making (no config of the repository's, no hooks, no replace refs), each
//! call under a time limit and an output cap.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::offers::{Entry, Offers, is_hex};
use crate::handle::Kind;

/// How long one `git` call may take.
const GIT_TIME: Duration = Duration::from_secs(20);
/// The most of a listing or a blob read from `git`.
const GIT_OUTPUT_CAP: usize = 64 << 20;
/// The most of a blob read to judge it.
pub(super) const BLOB_CAP: usize = 1 << 20;

/// `git` over a repository's objects and a command's new ones, with a git dir of our own.
pub(super) struct Git {
    dir: PathBuf,
    objects: PathBuf,
    alternates: Option<PathBuf>,
}

impl Drop for Git {
    fn drop(&mut self) {
        crate::fs::remove_state_dir(&self.dir);
    }
}

impl Git {
    /// Makes the judge's git dir for the repository whose git dir is `dir` (relative).
    pub(super) fn new(offers: &Offers<'_>, dir: &Path, sha256: bool) -> Result<Self, String> {
        // A dir of its own: a submodule's probe is made while its repository's is in use.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let probe = offers.scratch.join(format!("git-probe-{n}"));
        let made = crate::fs::create_private_dir(&probe)
            .and_then(|()| crate::fs::create_private_dir(&probe.join("refs")))
            .and_then(|()| crate::fs::create_private_dir(&probe.join("objects")))
            .and_then(|()| crate::fs::write_private(&probe, &probe.join("HEAD"), b"ref: refs/heads/probe\n"))
            .and_then(|()| {
                let config = if sha256 {
                    "[core]\n\trepositoryformatversion = 1\n\tcommitGraph = false\n\tmultiPackIndex = false\n[extensions]\n\tobjectformat = sha256\n"
                } else {
                    "[core]\n\trepositoryformatversion = 0\n\tcommitGraph = false\n\tmultiPackIndex = false\n"
                };
                crate::fs::write_private(&probe, &probe.join("config"), config.as_bytes())
            });
        if let Err(err) = made {
            return Err(format!("what it offers your git to write later cannot be judged ({err})"));
        }
        let real = offers.root.join(dir).join("objects");
        let staged = offers.upper.join(dir).join("objects");
        // Git follows symlinks on its way there: each name a directory in the layer itself.
        let objects_rel = dir.join("objects");
        let staged_is_dir = std::iter::once(objects_rel.as_path()).chain(dir.ancestors()).all(|at| {
            at.as_os_str().is_empty()
                || matches!(super::view::upper_at(offers.upper_dir, at), super::view::Upper::Dir { .. })
        });
        let real_is_dir = offers.before.kind(&dir.join("objects")) == Some(Kind::Dir);
        let (objects, alternates) = match (staged_is_dir, real_is_dir) {
            (true, true) => (staged, Some(real)),
            (true, false) => (staged, None),
            (false, _) => (real, None),
        };
        Ok(Self { dir: probe, objects, alternates })
    }

    /// Runs `git args` (with `input` on stdin), its stdout.
    fn run(&self, args: &[&str], input: &[u8]) -> Result<Vec<u8>, String> {
        let mut command = Command::new("git");
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.dir)
            .env("LC_ALL", "C")
            .env("GIT_DIR", &self.dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_NO_REPLACE_OBJECTS", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OBJECT_DIRECTORY", &self.objects)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(alternates) = &self.alternates {
            command.env("GIT_ALTERNATE_OBJECT_DIRECTORIES", alternates);
        }
        let cannot = |err: &dyn std::fmt::Display| {
            format!("what it offers your git to write later cannot be judged: `git {}` failed ({err})", args.join(" "))
        };
        let mut child = command.spawn().map_err(|err| cannot(&err))?;
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(input);
        }
        let mut stdout = child.stdout.take().ok_or_else(|| cannot(&"no output"))?;
        let reader = std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = (&mut stdout).take(GIT_OUTPUT_CAP as u64 + 1).read_to_end(&mut out);
            out
        });
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() < GIT_TIME => std::thread::sleep(Duration::from_millis(5)),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(cannot(&format!("it took more than {} s", GIT_TIME.as_secs())));
                }
            }
        };
        let out = reader.join().unwrap_or_default();
        if !status.success() || out.len() > GIT_OUTPUT_CAP {
            return Err(cannot(&status));
        }
        Ok(out)
    }

    /// Checks the pack index at `idx` (absolute) against the pack beside it.
    pub(super) fn verify_pack(&self, idx: &Path) -> Result<(), String> {
        self.run(&["verify-pack", &idx.to_string_lossy()], b"").map(|_| ())
    }

    /// The commit `rev` names, if it does.
    pub(super) fn commit(&self, rev: &str) -> Option<String> {
        let out = self.run(&["rev-parse", "--verify", "-q", &format!("{rev}^{{commit}}")], b"").ok()?;
        let id = String::from_utf8_lossy(&out).trim().to_string();
        is_hex(&id).then_some(id)
    }

    /// The blob `id`, if it is one and not larger than [`BLOB_CAP`].
    pub(super) fn blob(&self, id: &str) -> Option<Vec<u8>> {
        self.run(&["cat-file", "blob", id], b"").ok().filter(|blob| blob.len() <= BLOB_CAP)
    }

    /// The entries `commit` holds that `base` (a commit) does not hold alike; all of them
    /// without a base. Gitlinks (mode `160000`, a submodule's commit) are among them.
    pub(super) fn changed(&self, base: Option<&str>, commit: &str) -> Result<Vec<Entry>, String> {
        let out = match base {
            Some(base) => self.run(&["diff-tree", "-r", "-z", "--no-renames", base, commit], b"")?,
            None => self.run(&["ls-tree", "-r", "-z", "--full-tree", commit], b"")?,
        };
        let mut entries = Vec::new();
        let mut fields = out.split(|b| *b == 0).filter(|f| !f.is_empty());
        while let Some(head) = fields.next() {
            let head = String::from_utf8_lossy(head).into_owned();
            let (mode, id, path) = if let Some(raw) = head.strip_prefix(':') {
                // `:old-mode new-mode old-id new-id status`, then the path.
                let parts: Vec<&str> = raw.split(' ').collect();
                let Some(path) = fields.next() else { break };
                if parts.len() < 5 || parts[4].starts_with('D') {
                    continue;
                }
                (parts[1].to_string(), parts[3].to_string(), path.to_vec())
            } else {
                // `mode type id<TAB>path`.
                let Some((meta, path)) = head.split_once('\t') else { continue };
                let parts: Vec<&str> = meta.split(' ').collect();
                // Files, symlinks and gitlinks (a submodule's commit); not trees.
                if parts.len() < 3 || !matches!(parts[1], "blob" | "commit") {
                    continue;
                }
                (parts[0].to_string(), parts[2].to_string(), path.as_bytes().to_vec())
            };
            let Ok(mode) = u32::from_str_radix(&mode, 8) else { continue };
            entries.push(Entry { mode, id, path: PathBuf::from(String::from_utf8_lossy(&path).into_owned()) });
        }
        Ok(entries)
    }
}
