//! `list_dir`: a directory as a tree, with kinds, sizes and entry counts; symlinks shown
//! with where they lead, never followed.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::file::human_size;
use crate::{Call, Context, Effect, EffectKind, Lean, Lines, Operation, RESERVE, Reply, json_size, push_decimal};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_sandbox::handle::{DirHandle, Kind};
use toolbelt_mcp_sandbox::walk::{self, WalkOptions};
use toolbelt_mcp_sandbox::{Resolved, Roots, fs};

const DEFAULT_LIMIT: usize = 1000;
const MAX_DEPTH: usize = 10;

/// The `list_dir` operation.
pub(super) struct ListDir;

/// Arguments of `list_dir`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// Relative to the first root, or absolute inside it. Default: the root (changes: all files).
    pub path: Option<String>,
    /// Levels (default 1).
    #[schemars(range(min = 1, max = 10))]
    #[schemars(extend("default" = 1))]
    pub depth: Option<usize>,
    /// Include dot-files.
    pub include_hidden: Option<bool>,
    /// Skip .gitignore'd files (default true).
    #[schemars(extend("default" = true))]
    pub respect_gitignore: Option<bool>,
    /// Max lines (read_file, default 2000), entries (list_dir, 1000), files (file_search, 500) or matches (grep_search, 200).
    #[schemars(range(min = 1))]
    #[schemars(extend("default" = 1000))]
    pub limit: Option<usize>,
}

/// Structured result of `list_dir`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Output {
    /// The directory listed.
    pub path: String,
    /// Entries found within `depth`.
    pub total: u64,
    /// The entries shown, in tree order.
    pub entries: Vec<Entry>,
    /// Entries that could not be read (permissions).
    pub unreadable: u64,
}

/// One listed entry.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Entry {
    /// Path relative to the first root.
    pub path: String,
    /// `file`, `dir`, `symlink` or `other`.
    pub kind: String,
    /// Size in bytes (files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Entries inside (directories), after the same filters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub children: Option<u64>,
    /// Where a symlink points, as written in the link.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// For a symlink: `inside` (usable: its target is inside the roots), `outside` or `broken`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leads: Option<String>,
}

impl Operation for ListDir {
    const NAME: &'static str = "list_dir";
    const DESCRIPTION: &'static str = "List a directory tree with sizes. `depth` levels deep (default 1, max 10), with how many entries each directory holds; hidden and git-ignored entries are skipped unless asked; symlinks are shown with their target, never followed.";
    const KIND: EffectKind = EffectKind::Read;
    type Args = Args;
    type Output = Output;
    const LEAN: Lean = Lean {
        details: &[],
        usual: &[("path", "\".\""), ("unreadable", "0")],
        shadowed: &[],
        joined: &[],
        one_file_diff: false,
    };

    fn effect(args: &Args) -> Effect {
        Effect::Read(vec![args.path.clone().unwrap_or_default()])
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let (dir, context) = call.single()?;
        list(&dir, &args, &context).await
    }
}

/// A walked entry before rendering.
struct Found {
    path: PathBuf,
    depth: usize,
    entry: Entry,
}

/// What a walk gathers (`ignore`'s on the confined walker thread).
struct Walked {
    /// The root held open, to describe entries beneath it (`ignore`'s walk: the listing walk
    /// hands over the directory of each entry).
    held: Option<toolbelt_mcp_sandbox::beneath::Root>,
    /// The directory of the entries being described, opened beneath the root (a walk in tree
    /// order meets a directory's entries together).
    parent: Option<(PathBuf, DirHandle)>,
    roots: Arc<Roots>,
    depth: usize,
    limit: usize,
    found: Vec<Found>,
    /// Entries each directory holds, down to one level below `depth`.
    children: HashMap<PathBuf, u64>,
    /// The directory whose entries are being counted, and how many so far: a walk in tree
    /// order meets a directory's entries together, so each run is added to `children` once.
    counting: Option<(PathBuf, u64)>,
    total: u64,
    unreadable: u64,
}

impl Walked {
    fn new(held: Option<toolbelt_mcp_sandbox::beneath::Root>, roots: Arc<Roots>, depth: usize, limit: usize) -> Self {
        let (found, children) = (Vec::new(), HashMap::new());
        Self { held, parent: None, roots, depth, limit, found, children, counting: None, total: 0, unreadable: 0 }
    }

    /// A walk not started yet, gathering as this one does.
    #[cfg(target_os = "linux")]
    fn emptied(&self) -> Self {
        Self::new(None, self.roots.clone(), self.depth, self.limit)
    }

    /// An entry of `ignore`'s walk.
    fn visit(&mut self, item: Result<&ignore::DirEntry, &ignore::Error>) {
        let Ok(item) = item else {
            self.unreadable += 1;
            return;
        };
        let kind = match item.file_type() {
            Some(t) if t.is_dir() => Kind::Dir,
            Some(t) if t.is_file() => Kind::File,
            Some(t) if t.is_symlink() => Kind::Link,
            _ => Kind::Other,
        };
        self.seen(item.path(), item.depth(), item.file_name(), kind, None);
    }

    /// An entry of the listing walk.
    #[cfg(target_os = "linux")]
    fn met(&mut self, met: Result<walk::listing::Met<'_>, ()>) {
        match met {
            Ok(met) => self.seen(met.path, met.depth, met.name, met.kind, Some(met.dir)),
            Err(()) => self.unreadable += 1,
        }
    }

    /// The entry at `path`, `depth` levels down, named `name` in its directory (`dir` when
    /// open already).
    fn seen(&mut self, path: &Path, depth: usize, name: &OsStr, kind: Kind, dir: Option<&DirHandle>) {
        if depth == 0 {
            return;
        }
        if let Some(parent) = path.parent() {
            self.count_child_of(parent);
        }
        if depth > self.depth {
            return;
        }
        self.total += 1;
        if self.found.len() < self.limit {
            let entry = self.describe(path, name, kind, dir);
            self.found.push(Found { path: path.to_path_buf(), depth, entry });
        }
    }

    /// Counts one more entry in `parent`.
    fn count_child_of(&mut self, parent: &Path) {
        match &mut self.counting {
            // Both are the walked path joined with names: their bytes tell them apart.
            Some((dir, count)) if dir.as_os_str() == parent.as_os_str() => *count += 1,
            counting => {
                if let Some((dir, count)) = counting.replace((parent.to_path_buf(), 1)) {
                    *self.children.entry(dir).or_default() += count;
                }
            }
        }
    }

    /// Entries each directory holds, the run being counted included.
    fn into_children(mut self) -> HashMap<PathBuf, u64> {
        if let Some((dir, count)) = self.counting.take() {
            *self.children.entry(dir).or_default() += count;
        }
        self.children
    }

    /// The handle of the directory `path` is in (`None` if it cannot be opened beneath the root).
    fn parent_of(&mut self, path: &Path) -> Option<&DirHandle> {
        let parent = path.parent()?;
        if self.parent.as_ref().is_none_or(|(open, _)| open != parent) {
            let held = self.held.as_ref()?;
            self.parent = held.open_dir_at(parent).ok().map(|dir| (parent.to_path_buf(), dir));
        }
        self.parent.as_ref().map(|(_, dir)| dir)
    }

    fn describe(&mut self, path: &Path, name: &OsStr, kind: Kind, dir: Option<&DirHandle>) -> Entry {
        let shown = self.roots.show(path);
        let mut entry =
            Entry { path: shown, kind: "other".into(), size: None, children: None, target: None, leads: None };
        match kind {
            Kind::Dir => entry.kind = "dir".into(),
            Kind::File => {
                entry.kind = "file".into();
                let stat = match dir {
                    Some(dir) => dir.stat(name).ok(),
                    None => self.parent_of(path).and_then(|dir| dir.stat(name).ok()),
                };
                entry.size = stat.map(|stat| stat.len);
            }
            Kind::Link => {
                entry.kind = "symlink".into();
                let target = match dir {
                    Some(dir) => dir.read_link(name).ok(),
                    None => self.parent_of(path).and_then(|dir| dir.read_link(name).ok()),
                };
                entry.target = target.map(|t| t.to_string_lossy().into_owned());
                let leads = match fs::canonicalize(path) {
                    Ok(real) if self.roots.contains(&real) => "inside",
                    Ok(_) => "outside",
                    Err(_) => "broken",
                };
                entry.leads = Some(leads.into());
            }
            Kind::Other => {}
        }
        entry
    }
}

/// Entries a listing reads on the async thread that took the call (a directory and its
/// subdirectories: about 0.3 ms for 500 in the `dist` build) before it walks again on a
/// blocking thread. At 256, a listing of 320 entries was read twice and took as long as with
/// `ignore`'s walker; at 512 it took half as long.
#[cfg(target_os = "linux")]
const QUICK: usize = 512;

/// The listing walk into `fresh`: on this thread up to [`QUICK`] entries read, past that again
/// on a blocking thread. The root back when the walk declined (`ignore`'s walker is needed).
#[cfg(target_os = "linux")]
async fn quick(
    held: toolbelt_mcp_sandbox::beneath::Root,
    dir: &Resolved,
    options: WalkOptions,
    fresh: Walked,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Result<Walked, toolbelt_mcp_sandbox::beneath::Root>, ToolError> {
    use walk::listing::Declined;
    let again = fresh.emptied();
    let mut walked = fresh;
    let stop = || cancel.is_cancelled();
    match walk::listing::walk(&held, dir, options.clone(), Some(QUICK), &stop, &mut |met| walked.met(met)) {
        Ok(()) => return Ok(Ok(walked)),
        Err(Declined::Stopped) => return Err(ToolError::Cancelled),
        Err(Declined::Unusual(_)) => return Ok(Err(held)),
        Err(Declined::Larger) => {}
    }
    let (dir, cancel) = (dir.clone(), cancel.clone());
    crate::blocking(move || {
        let mut walked = again;
        let stop = || cancel.is_cancelled();
        match walk::listing::walk(&held, &dir, options, None, &stop, &mut |met| walked.met(met)) {
            Ok(()) => Ok(Ok(walked)),
            Err(Declined::Stopped) => Err(ToolError::Cancelled),
            Err(Declined::Unusual(_) | Declined::Larger) => Ok(Err(held)),
        }
    })
    .await
}

/// Lists `dir` on the async thread that took the call, but for a walk of more than `QUICK`
/// entries (Linux) or with `ignore`'s walker (on a walker thread).
async fn list(dir: &Resolved, args: &Args, context: &Context) -> Result<Reply<Output>, ToolError> {
    let budget = context.budget;
    ToolError::check_range("depth", args.depth, 1, MAX_DEPTH, "from 1 (the directory's own entries) to 10")?;
    ToolError::check_range("limit", args.limit, 1, usize::MAX, "at least 1 entry")?;
    let held = fs::walk_root(dir).map_err(|e| ToolError::io("list", dir.shown(), e))?;
    if !held.symlink_metadata(dir.real()).map_err(|e| ToolError::io("list", dir.shown(), e))?.is_dir() {
        return Err(ToolError::NotADirectory { path: dir.shown().into() });
    }
    let depth = args.depth.unwrap_or(1).clamp(1, MAX_DEPTH);
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let options = WalkOptions::new(args.include_hidden, args.respect_gitignore, Some(depth + 1))
        .hiding(toolbelt_mcp_policy::hidden_paths(&context.config));
    let roots = context.roots.clone();
    let cancel = context.signals.cancel.clone();
    // Walked from directory handles (see `walk::listing`); with `ignore`'s walker when that
    // declines, or off Linux.
    #[cfg(target_os = "linux")]
    let (quick, held) =
        match quick(held, dir, options.clone(), Walked::new(None, roots.clone(), depth, limit), &cancel).await? {
            Ok(walked) => (Some(walked), None),
            Err(held) => (None, Some(held)),
        };
    #[cfg(not(target_os = "linux"))]
    let (quick, held) = (None, Some(held));
    let mut walked = match quick {
        Some(walked) => walked,
        None => {
            let mut builder = walk::builder(dir, options);
            builder.sort_by_file_name(|a, b| a.cmp(b));
            let walked = Walked::new(held, roots, depth, limit);
            walk::visit_in_order(dir, &builder, move || cancel.is_cancelled(), walked, Walked::visit).await?
        }
    };
    let (found, total, unreadable) = (std::mem::take(&mut walked.found), walked.total, walked.unreadable);
    let children = walked.into_children();
    let mut text = format!(
        "`{}`: {total} entries{}\n",
        dir.shown(),
        if depth > 1 { format!(" within depth {depth}") } else { String::new() }
    );
    let mut entries = Vec::with_capacity(found.len());
    let mut lines = Lines::new(budget.saturating_sub(RESERVE));
    for mut item in found {
        if item.entry.kind == "dir" {
            item.entry.children = Some(children.get(&item.path).copied().unwrap_or(0));
        }
        // The text view shows the line, the structured view the entry.
        if !lines.push_costed(render(&item), json_size(&item.entry) + 1) {
            break;
        }
        entries.push(item.entry);
    }
    text.push_str(&lines.text());
    let note = ((total as usize) > entries.len()).then(|| {
        let more = total - entries.len() as u64;
        format!("{more} more entries not shown; list a subdirectory, lower `depth` or raise `limit`")
    });
    if let Some(note) = &note {
        text.push_str(&format!("… {note}\n"));
    }
    if unreadable > 0 {
        text.push_str(&format!("[{unreadable} entries could not be read]\n"));
    }
    let data = Output { path: dir.shown().into(), total, entries, unreadable };
    Ok(Reply::new(text, data).cut(note))
}

/// The entry's line of the text view: indented by depth, its name, and what it is. Built with
/// pushes rather than `format!` (a listing writes one per entry).
fn render(item: &Found) -> String {
    let e = &item.entry;
    let name = Path::new(&e.path).file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let mut line = String::with_capacity(2 * item.depth + name.len() + 24);
    for _ in 1..item.depth {
        line.push_str("  ");
    }
    line.push_str(&name);
    match e.kind.as_str() {
        "dir" => {
            line.push_str("/ (");
            push_decimal(&mut line, e.children.unwrap_or(0));
            line.push_str(" entries)");
        }
        "file" => {
            line.push_str(" (");
            line.push_str(&human_size(e.size.unwrap_or(0)));
            line.push(')');
        }
        "symlink" => {
            let leads = match e.leads.as_deref() {
                Some("inside") => "symlink inside the roots",
                Some("outside") => "symlink leading outside the roots: unusable",
                _ => "broken symlink",
            };
            line.push_str(" -> ");
            line.push_str(e.target.as_deref().unwrap_or("?"));
            line.push_str(" (");
            line.push_str(leads);
            line.push(')');
        }
        _ => line.push_str(" (special file)"),
    }
    line
}
