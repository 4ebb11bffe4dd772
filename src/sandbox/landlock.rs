//! What Linux Landlock support this kernel offers; commands run under it (see `doctor`).

use landlock::{ABI, Access, AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr};

/// The kernel's Landlock support, as far as this build can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LandlockSupport {
    /// Human-readable status, e.g. `available (ABI 7)` or `not enabled by the kernel`.
    pub status: String,
    /// Whether a ruleset can be enforced.
    pub enforceable: bool,
}

/// Probes Landlock by enforcing a permissive ruleset on a short-lived thread (Landlock
/// restricts only the calling thread), so the calling process itself stays unrestricted.
pub fn probe() -> LandlockSupport {
    let outcome = std::thread::spawn(|| -> Result<String, String> {
        let access = AccessFs::from_all(ABI::V1);
        let root = PathFd::new("/").map_err(|e| e.to_string())?;
        let status = Ruleset::default()
            .handle_access(access)
            .and_then(|r| r.create())
            .and_then(|r| r.add_rule(PathBeneath::new(root, access)))
            .and_then(|r| r.restrict_self())
            .map_err(|e| e.to_string())?;
        Ok(format!("{:?}", status.landlock))
    })
    .join();
    match outcome {
        Ok(Ok(raw)) => describe(&raw),
        Ok(Err(err)) => LandlockSupport { status: format!("unavailable ({err})"), enforceable: false },
        Err(_) => LandlockSupport { status: "probe failed".into(), enforceable: false },
    }
}

/// Turns the crate's status (`Available { effective_abi: V6, kernel_abi: Some(7) }`,
/// `NotEnabled`, `NotImplemented`) into words.
fn describe(raw: &str) -> LandlockSupport {
    if raw.starts_with("NotEnabled") {
        return LandlockSupport {
            status: "not enabled by the kernel (boot with lsm=landlock)".into(),
            enforceable: false,
        };
    }
    if raw.starts_with("NotImplemented") {
        return LandlockSupport { status: "not implemented by this kernel".into(), enforceable: false };
    }
    let number_after = |key: &str| {
        raw.split(key).nth(1).map(|rest| {
            rest.chars().skip_while(|c| !c.is_ascii_digit()).take_while(char::is_ascii_digit).collect::<String>()
        })
    };
    let effective = number_after("effective_abi").unwrap_or_default();
    let status = match number_after("kernel_abi: Some").filter(|n| !n.is_empty()) {
        Some(kernel) => format!("available: kernel ABI {kernel} (this build uses up to ABI {effective})"),
        None => format!("available: ABI {effective}"),
    };
    LandlockSupport { status, enforceable: true }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_each_status() {
        assert_eq!(describe("Available { effective_abi: V6, kernel_abi: None }").status, "available: ABI 6");
        let newer = describe("Available { effective_abi: V6, kernel_abi: Some(7) }");
        assert_eq!(newer.status, "available: kernel ABI 7 (this build uses up to ABI 6)");
        assert!(!describe("NotEnabled").enforceable);
        assert!(!describe("NotImplemented").enforceable);
    }

    #[test]
    fn probe_sees_the_kernel_landlock() {
        // These machines' kernels enforce Landlock; a failure here means the probe is wrong.
        let support = probe();
        assert!(support.enforceable, "{support:?}");
    }
}
