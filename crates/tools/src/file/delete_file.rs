//! `delete_file`: removes a file, or a directory tree with `recursive`, keeping every byte for
//! `undo`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::file::human_size;
use crate::session::ChangeKind;
use crate::{Call, Effect, EffectKind, Operation, Reply, blocking};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_sandbox::write::Kind;

/// The `delete_file` operation.
pub(super) struct DeleteFile;

/// Arguments of `delete_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// Relative to the first root, or absolute inside it. Default: the root (changes: all files).
    pub path: String,
    /// Delete a non-empty directory too.
    pub recursive: Option<bool>,
    /// Only preview; change nothing.
    pub dry_run: Option<bool>,
}

/// Structured result of `delete_file`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Output {
    /// The path deleted, relative to the first root.
    pub path: String,
    /// `file` or `directory`.
    pub kind: String,
    /// Files removed (1 for a file).
    pub files_removed: u64,
    /// Bytes of content removed (kept for `undo`).
    pub bytes_removed: u64,
    /// Whether this was a preview: nothing was deleted.
    pub dry_run: bool,
}

impl Operation for DeleteFile {
    const NAME: &'static str = "delete_file";
    const DESCRIPTION: &'static str = "Delete, recoverably. A non-empty directory needs `recursive: true`; what is deleted is kept so `undo` brings it back.";
    const KIND: EffectKind = EffectKind::Write { destructive: true, idempotent: false };
    type Args = Args;
    type Output = Output;

    fn effect(args: &Args) -> Effect {
        Effect::Write(vec![args.path.clone()])
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let (target, context) = call.single_target()?;
        blocking(move || {
            let shown = target.shown().to_string();
            let dry_run = args.dry_run.unwrap_or(false);
            let session = &context.session;
            let cap = context.config.max_undo_bytes;
            let mut data =
                Output { path: shown.clone(), kind: String::new(), files_removed: 0, bytes_removed: 0, dry_run };
            let text = match target.kind() {
                None => return Err(ToolError::NotFound { path: shown }),
                Some(Kind::File) => {
                    let before =
                        target.read_existing(cap)?.ok_or_else(|| ToolError::NotFound { path: shown.clone() })?;
                    (data.kind, data.files_removed, data.bytes_removed) = ("file".into(), 1, before.bytes.len() as u64);
                    let removed = line_count(&before.bytes);
                    if !dry_run {
                        let kept = session.keep_before(&before.bytes, before.mode)?;
                        target.remove_file()?;
                        session.record(
                            Self::NAME,
                            target.real().to_path_buf(),
                            shown.clone(),
                            ChangeKind::Removed(kept),
                        );
                    }
                    format!("file `{shown}` ({}, {removed} lines)", human_size(data.bytes_removed))
                }
                Some(Kind::Dir) => {
                    let tree = target.read_tree(cap)?;
                    let entries = tree.files.len() + tree.links.len() + tree.dirs.len() - 1;
                    if entries > 0 && !args.recursive.unwrap_or(false) {
                        return Err(ToolError::BadTarget {
                            path: shown,
                            problem: format!(
                                "is a directory holding {entries} entries; set `recursive: true` to delete it all"
                            ),
                        });
                    }
                    (data.kind, data.files_removed, data.bytes_removed) =
                        ("directory".into(), tree.files.len() as u64, tree.bytes());
                    if !dry_run {
                        let mut files = Vec::with_capacity(tree.files.len());
                        for (path, bytes, mode) in &tree.files {
                            files.push((path.clone(), session.keep_before(bytes, *mode)?));
                        }
                        target.remove_tree()?;
                        let kind =
                            ChangeKind::RemovedTree { dirs: tree.dirs.clone(), files, links: tree.links.clone() };
                        session.record(Self::NAME, target.real().to_path_buf(), shown.clone(), kind);
                    }
                    let links =
                        if tree.links.is_empty() { String::new() } else { format!(", {} symlinks", tree.links.len()) };
                    format!(
                        "directory `{shown}` ({} files, {}, {} directories{links})",
                        tree.files.len(),
                        human_size(tree.bytes()),
                        tree.dirs.len()
                    )
                }
                Some(_) => {
                    return Err(ToolError::BadTarget { path: shown, problem: "is not a file or directory".into() });
                }
            };
            let head = if dry_run { "[dry run: would delete " } else { "[deleted " };
            let tail = if dry_run { "; nothing was deleted" } else { "; `undo` brings it back" };
            Ok(Reply::new(format!("{head}{text}{tail}]"), data))
        })
        .await
    }
}

/// Lines in a file's bytes (a last line without a newline counts).
fn line_count(bytes: &[u8]) -> u64 {
    let newlines = memchr::memchr_iter(b'\n', bytes).count() as u64;
    newlines + u64::from(!bytes.is_empty() && !bytes.ends_with(b"\n"))
}
