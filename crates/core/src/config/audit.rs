//! Where the audit log goes and when it is rotated: plain settings, with the names of its files.
//! The writer (`policy::audit::AuditLog`) holds the open file.

use std::path::{Path, PathBuf};

/// Rotated files kept (`audit.jsonl.1` … `.3`).
pub const KEEP: u32 = 3;

/// The audit log's place (`None`: `--audit-log off`) and size limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSettings {
    path: Option<PathBuf>,
    /// Past this many bytes the log is rotated.
    pub max_bytes: u64,
}

impl AuditSettings {
    /// A log at `path` (none when `None`), rotated past `max_bytes`.
    pub fn new(path: Option<PathBuf>, max_bytes: u64) -> Self {
        Self { path, max_bytes }
    }

    /// The file, unless the log is off.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Whether `path` is the log or one of its rotated files (`audit.jsonl.1`, …).
    pub fn is_log_file(&self, path: &Path) -> bool {
        let Some(log) = &self.path else { return false };
        if path == log {
            return true;
        }
        let (Some(name), Some(log_name)) = (path.file_name(), log.file_name()) else { return false };
        path.parent() == log.parent()
            && name.to_str().zip(log_name.to_str()).is_some_and(|(name, log_name)| {
                name.strip_prefix(log_name)
                    .and_then(|rest| rest.strip_prefix('.'))
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
    }

    /// The log and its rotated files, as paths (whether they exist or not).
    pub fn files(&self) -> Vec<PathBuf> {
        let Some(log) = &self.path else { return Vec::new() };
        let mut files = vec![log.clone()];
        files.extend((1..=KEEP).map(|n| {
            let mut name = log.as_os_str().to_owned();
            name.push(format!(".{n}"));
            PathBuf::from(name)
        }));
        files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_and_its_rotations_are_its_files_and_nothing_else() {
        let settings = AuditSettings::new(Some(PathBuf::from("/s/audit.jsonl")), 10);
        assert!(settings.is_log_file(Path::new("/s/audit.jsonl")));
        assert!(settings.is_log_file(Path::new("/s/audit.jsonl.2")));
        assert!(!settings.is_log_file(Path::new("/s/audit.jsonl.")));
        assert!(!settings.is_log_file(Path::new("/s/audit.jsonl.x")));
        assert!(!settings.is_log_file(Path::new("/t/audit.jsonl.1")));
        assert_eq!(settings.files().len(), 1 + KEEP as usize);
        let off = AuditSettings::new(None, 10);
        assert!(!off.is_log_file(Path::new("/s/audit.jsonl")));
        assert!(off.files().is_empty());
    }
}
