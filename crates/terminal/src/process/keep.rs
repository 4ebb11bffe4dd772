//! The server's side of the keepers of unsandboxed commands (`sandbox/linux/keeper.rs`): each
//! keeper connects to the server's socket in the state dir under the token its command was
//! given, says how the command ended, and ends everything beneath it when the server says so
//! (a session killed) or the connection breaks (the server exited, however it exited). The
//! server holds each connection until its keeper leaves.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use tokio::process::Child;

use super::Status;
use toolbelt_mcp_sandbox::linux::keeper::{END, KEEP_SUBCOMMAND};
use toolbelt_mcp_sandbox::proxy::register;

/// One unsandboxed command's keeper, as the server knows it.
#[derive(Debug)]
pub struct Kept {
    token: String,
    socket: PathBuf,
    status: tokio::sync::watch::Sender<Option<Status>>,
    control: Mutex<Option<UnixStream>>,
}

impl Kept {
    /// The program and arguments that run `program args…` under this keeper.
    pub fn command(&self, program: &OsStr, args: &[OsString]) -> (PathBuf, Vec<OsString>) {
        let mut wrapped: Vec<OsString> =
            vec![KEEP_SUBCOMMAND.into(), self.socket.clone().into(), self.token.clone().into(), "--".into()];
        wrapped.push(program.to_os_string());
        wrapped.extend(args.iter().cloned());
        // This very binary, even if its file was replaced since the server started.
        (PathBuf::from("/proc/self/exe"), wrapped)
    }

    /// How the command ended: as its keeper said, or (a keeper that never said) as the keeper
    /// itself ended.
    pub async fn wait(&self, keeper: &mut Child) -> std::io::Result<Status> {
        let mut said = self.status.subscribe();
        let exit = tokio::select! {
            Ok(status) = said.wait_for(Option::is_some) => return Ok((*status).unwrap_or(Status::Exited(-1))),
            exit = keeper.wait() => Status::of(exit?),
        };
        // The keeper says how before it leaves: give the line a moment to arrive.
        let told = tokio::time::timeout(Duration::from_millis(200), said.wait_for(Option::is_some)).await;
        Ok(told.ok().and_then(Result::ok).and_then(|status| *status).unwrap_or(exit))
    }

    /// Tells the keeper to end everything beneath it. `false` if it is not (or no longer)
    /// connected.
    fn end(&self) -> bool {
        let mut control = self.control.lock().unwrap_or_else(|p| p.into_inner());
        control.as_mut().is_some_and(|stream| stream.write_all(format!("{END}\n").as_bytes()).is_ok())
    }
}

/// The keepers' socket and the commands whose keepers have not connected yet.
struct Hub {
    socket: PathBuf,
    pending: Mutex<HashMap<String, Weak<Kept>>>,
}

/// The keepers connected, by their command's process group.
static KEPT: Mutex<Vec<(u32, Arc<Kept>)>> = Mutex::new(Vec::new());

/// A keeper for one unsandboxed command, its socket in `state_dir` (started on first use).
pub fn kept(state_dir: &Path) -> std::io::Result<Arc<Kept>> {
    let hub = hub(state_dir)?;
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    let token = hex::encode(bytes);
    let (status, _) = tokio::sync::watch::channel(None);
    let kept = Arc::new(Kept { token: token.clone(), socket: hub.socket.clone(), status, control: Mutex::new(None) });
    let mut pending = hub.pending.lock().unwrap_or_else(|p| p.into_inner());
    pending.retain(|_, weak| weak.strong_count() > 0);
    pending.insert(token, Arc::downgrade(&kept));
    Ok(kept)
}

/// Remembers the keeper of group `pgid` (the keeper leads it) until it leaves.
pub fn track(pgid: u32, kept: &Arc<Kept>) {
    let mut all = KEPT.lock().unwrap_or_else(|p| p.into_inner());
    all.retain(|(group, _)| *group != pgid && super::group_alive(*group));
    all.push((pgid, kept.clone()));
}

/// Ends group `pgid` and everything its command left, if a keeper leads it: `true` then.
pub fn end(pgid: u32) -> bool {
    let kept = KEPT.lock().unwrap_or_else(|p| p.into_inner()).iter().find(|(g, _)| *g == pgid).map(|(_, k)| k.clone());
    kept.is_some_and(|kept| kept.end())
}

fn hub(state_dir: &Path) -> std::io::Result<Arc<Hub>> {
    static HUB: OnceLock<Arc<Hub>> = OnceLock::new();
    if let Some(hub) = HUB.get() {
        return Ok(hub.clone());
    }
    let socket = state_dir.join("keep").join(format!("{}.sock", std::process::id()));
    if let Some(dir) = socket.parent() {
        toolbelt_mcp_sandbox::fs::create_private_dir(dir)?;
    }
    let listener = register::bind(&socket)?;
    let hub = Arc::new(Hub { socket, pending: Mutex::new(HashMap::new()) });
    let weak = Arc::downgrade(&hub);
    std::thread::Builder::new().name("keepers".into()).spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let Some(hub) = weak.upgrade() else { return };
            let kept = register::receive_token(&stream)
                .ok()
                .and_then(|token| hub.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&token))
                .and_then(|weak| weak.upgrade());
            register::answer(&stream, kept.is_some());
            if let Some(kept) = kept {
                listen(kept, stream);
            }
        }
    })?;
    Ok(HUB.get_or_init(|| hub).clone())
}

/// Keeps `stream` as `kept`'s connection and reads what its keeper says on a thread of its
/// own; when the keeper leaves, forgets it.
fn listen(kept: Arc<Kept>, stream: UnixStream) {
    let Ok(reading) = stream.try_clone() else { return };
    *kept.control.lock().unwrap_or_else(|p| p.into_inner()) = Some(stream);
    let spawned = std::thread::Builder::new().name("keeper".into()).spawn(move || {
        for line in BufReader::new(reading).lines() {
            let Ok(line) = line else { break };
            let mut words = line.split_whitespace();
            let number = words.nth(1).and_then(|n| n.parse::<i32>().ok());
            let status = match (line.split_whitespace().next(), number) {
                (Some("exit"), Some(code)) => Status::Exited(code),
                (Some("signal"), Some(signal)) => Status::Signaled(signal),
                _ => continue,
            };
            kept.status.send_replace(Some(status));
        }
        KEPT.lock().unwrap_or_else(|p| p.into_inner()).retain(|(_, other)| !Arc::ptr_eq(other, &kept));
        kept.control.lock().unwrap_or_else(|p| p.into_inner()).take();
    });
    if let Err(err) = spawned {
        tracing::warn!(%err, "cannot follow an unsandboxed command's keeper");
    }
}
