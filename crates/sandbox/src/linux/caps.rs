//! Capabilities in the sandbox's init (the helper's fork: in a user namespace it holds the
//! namespace's capabilities, enough to mount the new `/proc`), which drops every capability
//! before the command starts: securebits locked so root gains
//! none on `exec`, the bounding set emptied, ambient cleared, and the thread's own sets
//! emptied.

use rustix::thread::{
    CapabilitiesSecureBits, CapabilitySet, CapabilitySets, capabilities, clear_ambient_capability_set,
    remove_capability_from_bounding_set, set_capabilities, set_capabilities_secure_bits,
};

/// Drops every capability for good. Securebits and the bounding set need `CAP_SETPCAP`,
/// which only root (outside a user namespace) has here; without it there is nothing they
/// would add: the command runs as a non-root id with `no_new_privs`.
pub fn drop_all() -> Result<(), String> {
    let held = capabilities(None).map_err(|e| format!("cannot read capabilities: {e}"))?;
    if held.effective.contains(CapabilitySet::SETPCAP) {
        let bits = CapabilitiesSecureBits::NO_ROOT
            | CapabilitiesSecureBits::NO_ROOT_LOCKED
            | CapabilitiesSecureBits::NO_SETUID_FIXUP
            | CapabilitiesSecureBits::NO_SETUID_FIXUP_LOCKED
            | CapabilitiesSecureBits::KEEP_CAPS_LOCKED
            | CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE
            | CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE_LOCKED;
        set_capabilities_secure_bits(bits).map_err(|e| format!("cannot lock the securebits: {e}"))?;
        for bit in 0..64 {
            match remove_capability_from_bounding_set(CapabilitySet::from_bits_retain(1 << bit)) {
                Ok(()) => {}
                // Past the kernel's last capability.
                Err(rustix::io::Errno::INVAL) => break,
                Err(e) => return Err(format!("cannot drop capability {bit} from the bounding set: {e}")),
            }
        }
    }
    clear_ambient_capability_set().map_err(|e| format!("cannot clear ambient capabilities: {e}"))?;
    let none = CapabilitySets {
        effective: CapabilitySet::empty(),
        permitted: CapabilitySet::empty(),
        inheritable: CapabilitySet::empty(),
    };
    set_capabilities(None, none).map_err(|e| format!("cannot drop capabilities: {e}"))?;
    let left = capabilities(None).map_err(|e| format!("cannot read capabilities: {e}"))?;
    if left != none {
        return Err(format!("capabilities left after dropping them: {left:?}"));
    }
    Ok(())
}
