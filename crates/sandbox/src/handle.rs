//! A directory held open, and what can be done to the names in it without walking a path
//! again: the one place that knows how each OS does that (`openat`-style calls on Unix, a
//! capability `Dir` from cap-std on Windows). Writes, locks, undo trees and the beneath-the-root
//! resolution all go through it.

use std::time::{Duration, SystemTime};

#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

#[cfg(unix)]
pub use unix::{DirHandle, file_identity, read_at, try_lock};
#[cfg(windows)]
pub use windows::{DirHandle, file_identity, read_at, try_lock};

/// What is at a name, not following a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symlink (on Windows, any reparse point the OS reports as one).
    Link,
    /// Something else (socket, device, fifo).
    Other,
}

/// What `stat` tells of a name (not following a symlink).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// Its kind.
    pub kind: Kind,
    /// Its size in bytes.
    pub len: u64,
    /// Its permission bits (Windows: `0o444` when read-only, else `0o666`).
    pub mode: u32,
}

/// Whether a rename may replace what is at the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    /// Fail with `AlreadyExists` if something is there (atomically where the OS can).
    Never,
    /// Replace it.
    Allowed,
}

/// Fills `buf` from `offset` (callers read by offset only: on Windows the file position
/// moves).
pub fn read_exact_at(file: &std::fs::File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match read_at(file, buf, offset) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// What tells one version of a file from another without reading it. Unix: device, inode,
/// size, modification and status-change times; Windows: size, last-write and creation times
/// (std gives no file index there), device and inode 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Version {
    /// The device (volume).
    pub dev: u64,
    /// The inode.
    pub ino: u64,
    /// The size in bytes.
    pub size: u64,
    /// Last modification (seconds, nanoseconds since the Unix epoch).
    pub mtime: (i64, i64),
    /// Last status change (Windows: creation).
    pub ctime: (i64, i64),
}

impl Version {
    /// The version `meta` describes.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Self {
                dev: meta.dev(),
                ino: meta.ino(),
                size: meta.size(),
                mtime: (meta.mtime(), meta.mtime_nsec()),
                ctime: (meta.ctime(), meta.ctime_nsec()),
            }
        }
        #[cfg(windows)]
        {
            use std::os::windows::fs::MetadataExt;
            // 100 ns ticks since 1601 to (seconds, nanoseconds) since 1970.
            let unix = |ticks: u64| {
                let since_1970 = ticks as i64 - 116_444_736_000_000_000;
                (since_1970.div_euclid(10_000_000), since_1970.rem_euclid(10_000_000) * 100)
            };
            Self {
                dev: 0,
                ino: 0,
                size: meta.file_size(),
                mtime: unix(meta.last_write_time()),
                ctime: unix(meta.creation_time()),
            }
        }
    }

    /// Whether this version's last change (content or inode) was at least `margin` before
    /// `at`. A later change then gets a later timestamp, never one of the same clock tick
    /// ("racy" entries, as git calls them), so a cache keyed on this version cannot miss it.
    pub fn settled_before(&self, at: SystemTime, margin: Duration) -> bool {
        let Ok(since_epoch) = at.duration_since(SystemTime::UNIX_EPOCH) else { return false };
        let limit = since_epoch.saturating_sub(margin);
        let time = |(secs, nanos): (i64, i64)| Duration::new(secs.max(0) as u64, nanos.clamp(0, 999_999_999) as u32);
        time(self.mtime) < limit && time(self.ctime) < limit
    }

    /// How long after this version's last change another change could still get the same
    /// timestamps: twice the coarser of the tick of the clock the kernel stamps files with
    /// (Linux: the coarse real-time clock's resolution, 1–10 ms; elsewhere taken as 10 ms) and
    /// the filesystem's own granularity as its stamps show it (stamps with no sub-second part
    /// come from a filesystem that keeps whole seconds, or FAT's two; one that keeps 10 ms
    /// leaves six zeros). Windows: 2 s, its stamps lag writes made through a mapping.
    pub fn racy_window(&self) -> Duration {
        const WHOLE_SECONDS: Duration = Duration::from_secs(2);
        if cfg!(windows) {
            return WHOLE_SECONDS;
        }
        let granularity = decimal_granularity(self.mtime.1).min(decimal_granularity(self.ctime.1));
        if granularity >= 1_000_000_000 {
            return WHOLE_SECONDS;
        }
        (clock_tick().max(Duration::from_nanos(granularity)) * 2).min(WHOLE_SECONDS)
    }
}

/// The largest power of ten (at most 10⁹) that divides `nanos`: the finest granularity that
/// stamps of this sub-second part could have been kept at.
fn decimal_granularity(nanos: i64) -> u64 {
    let mut granularity = 1u64;
    while granularity < 1_000_000_000 && (nanos as u64).is_multiple_of(granularity * 10) {
        granularity *= 10;
    }
    granularity
}

/// The tick of the clock file timestamps are read from (measured once).
fn clock_tick() -> Duration {
    static TICK: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *TICK.get_or_init(|| {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            let res = rustix::time::clock_getres(rustix::time::ClockId::RealtimeCoarse);
            let measured = Duration::new(res.tv_sec.max(0) as u64, res.tv_nsec.clamp(0, 999_999_999) as u32);
            measured.clamp(Duration::from_millis(1), Duration::from_secs(1))
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            Duration::from_millis(10)
        }
    })
}

/// The permission bits of `meta` (Windows: `0o444` when read-only, else `0o666`).
pub fn permission_bits(meta: &std::fs::Metadata) -> u32 {
    #[cfg(unix)]
    {
        std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777
    }
    #[cfg(windows)]
    {
        if meta.permissions().readonly() { 0o444 } else { 0o666 }
    }
}

/// Refuses a relative path that is not made of plain names: `..`, a root or a drive prefix
/// could lead out of the directory it is opened from.
fn plain(relative: &std::path::Path) -> std::io::Result<()> {
    use std::path::Component;
    if relative.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Ok(());
    }
    let message = format!("`{}` is not a plain path beneath the root", relative.display());
    Err(std::io::Error::new(std::io::ErrorKind::PermissionDenied, message))
}

/// The identity of a file (device and inode, or volume and file index): the same for every
/// name and handle of one file.
pub type FileId = (u64, u64);

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use std::ffi::OsStr;
    use std::io::Write;
    use std::path::Path;

    use super::*;

    #[test]
    fn the_racy_window_follows_the_stamps_granularity() {
        let at = |mtime: (i64, i64), ctime: (i64, i64)| Version { dev: 1, ino: 2, size: 3, mtime, ctime };
        assert_eq!(decimal_granularity(123_456_789), 1);
        assert_eq!(decimal_granularity(120_000_000), 10_000_000);
        assert_eq!(decimal_granularity(0), 1_000_000_000);
        let whole_seconds = at((100, 0), (100, 0));
        assert_eq!(whole_seconds.racy_window(), Duration::from_secs(2), "a filesystem of whole seconds");
        let fine = at((100, 123_456_789), (100, 123_456_789));
        if cfg!(windows) {
            assert_eq!(fine.racy_window(), Duration::from_secs(2));
        } else {
            let window = fine.racy_window();
            assert!(window >= Duration::from_millis(2) && window <= Duration::from_millis(40), "{window:?}");
            assert_eq!(window, clock_tick() * 2);
            let ten_ms = at((100, 120_000_000), (100, 340_000_000));
            assert_eq!(ten_ms.racy_window(), clock_tick().max(Duration::from_millis(10)) * 2, "exFAT's 10 ms");
        }
    }

    #[test]
    fn names_in_a_held_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = DirHandle::open(tmp.path()).unwrap();
        dir.create_dir(OsStr::new("d")).unwrap();
        let err = dir.create_dir(OsStr::new("d")).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        let sub = dir.open_dir(OsStr::new("d")).unwrap();
        sub.create_new(OsStr::new("f"), Some(0o640)).unwrap().write_all(b"abc").unwrap();
        let stat = sub.stat(OsStr::new("f")).unwrap();
        assert_eq!((stat.kind, stat.len), (Kind::File, 3));
        #[cfg(unix)]
        assert_eq!(stat.mode, 0o640);
        assert!(sub.create_new(OsStr::new("f"), None).is_err(), "create_new never replaces");
        sub.create_new(OsStr::new("g"), None).unwrap();
        let err = sub.rename(OsStr::new("g"), &sub, OsStr::new("f"), Replace::Never).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        sub.rename(OsStr::new("g"), &dir, OsStr::new("moved"), Replace::Never).unwrap();
        assert_eq!(dir.stat(OsStr::new("moved")).unwrap().kind, Kind::File);
        let file = sub.open_read(OsStr::new("f")).unwrap();
        assert_eq!(file_identity(&file).unwrap(), sub.identity(OsStr::new("f")).unwrap());
        let mut buf = [0u8; 8];
        assert_eq!(read_at(&file, &mut buf, 1).unwrap(), 2);
        assert!(try_lock(&file).unwrap());
        let mut names = sub.entries().unwrap();
        names.sort();
        assert_eq!(names, vec![OsStr::new("f").to_os_string()]);
        sub.remove_file(OsStr::new("f")).unwrap();
        dir.remove_dir(OsStr::new("d")).unwrap();
        assert!(dir.stat(OsStr::new("d")).is_err());
        assert!(!Path::new(&tmp.path().join("d")).exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_described_and_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("real")).unwrap();
        std::os::unix::fs::symlink("real", tmp.path().join("link")).unwrap();
        let dir = DirHandle::open(tmp.path()).unwrap();
        assert_eq!(dir.stat(OsStr::new("link")).unwrap().kind, Kind::Link);
        assert_eq!(dir.read_link(OsStr::new("link")).unwrap(), Path::new("real"));
        assert!(dir.open_dir(OsStr::new("link")).is_err());
        assert!(dir.open_read(OsStr::new("link")).is_err());
        assert!(dir.open_beneath(Path::new("link")).is_err());
        assert!(dir.open_beneath(Path::new("real")).is_ok());
    }
}
