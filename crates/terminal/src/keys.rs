//! Named keys for PTY input (`ctrl-c`, `up`, `f5`, `alt-x`, …) as the bytes a terminal sends.

/// The bytes for key `name`, or `None` if it is not a key we know. Arrow keys follow the
/// program's cursor-key mode (`application`: `ESC O A` instead of `ESC [ A`).
pub fn bytes(name: &str, application: bool) -> Option<Vec<u8>> {
    let lower = name.trim().to_ascii_lowercase();
    let fixed: &[u8] = match lower.as_str() {
        "enter" | "return" => b"\r",
        "tab" => b"\t",
        "escape" | "esc" => b"\x1b",
        "backspace" => b"\x7f",
        "space" => b" ",
        "up" if application => b"\x1bOA",
        "down" if application => b"\x1bOB",
        "right" if application => b"\x1bOC",
        "left" if application => b"\x1bOD",
        "up" => b"\x1b[A",
        "down" => b"\x1b[B",
        "right" => b"\x1b[C",
        "left" => b"\x1b[D",
        "home" => b"\x1b[H",
        "end" => b"\x1b[F",
        "pageup" | "page-up" => b"\x1b[5~",
        "pagedown" | "page-down" => b"\x1b[6~",
        "insert" => b"\x1b[2~",
        "delete" | "del" => b"\x1b[3~",
        "f1" => b"\x1bOP",
        "f2" => b"\x1bOQ",
        "f3" => b"\x1bOR",
        "f4" => b"\x1bOS",
        "f5" => b"\x1b[15~",
        "f6" => b"\x1b[17~",
        "f7" => b"\x1b[18~",
        "f8" => b"\x1b[19~",
        "f9" => b"\x1b[20~",
        "f10" => b"\x1b[21~",
        "f11" => b"\x1b[23~",
        "f12" => b"\x1b[24~",
        _ => return modified(&lower),
    };
    Some(fixed.to_vec())
}

/// `ctrl-X` and `alt-X`.
fn modified(name: &str) -> Option<Vec<u8>> {
    if let Some(key) = name.strip_prefix("ctrl-").or_else(|| name.strip_prefix("ctrl+")) {
        let byte = match key {
            "space" | "@" => 0,
            "[" => 0x1b,
            "\\" => 0x1c,
            "]" => 0x1d,
            "^" => 0x1e,
            "_" | "-" => 0x1f,
            _ if key.len() == 1 && key.as_bytes()[0].is_ascii_lowercase() => key.as_bytes()[0] & 0x1f,
            _ => return None,
        };
        return Some(vec![byte]);
    }
    let key = name.strip_prefix("alt-").or_else(|| name.strip_prefix("alt+"))?;
    let mut out = vec![0x1b];
    if key.chars().count() == 1 {
        out.extend(key.as_bytes());
        return Some(out);
    }
    out.extend(bytes(key, false)?);
    Some(out)
}

/// The names `bytes` accepts, for error messages.
pub const NAMES: &str = "`enter`, `tab`, `escape`, `backspace`, `space`, `up`, `down`, `left`, `right`, `home`, `end`, `pageup`, `pagedown`, `insert`, `delete`, `f1`…`f12`, `ctrl-a`…`ctrl-z`, `ctrl-\\`, `alt-X`";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_keys() {
        assert_eq!(bytes("ctrl-c", false), Some(vec![3]));
        assert_eq!(bytes("Ctrl-D", false), Some(vec![4]));
        assert_eq!(bytes("up", false), Some(b"\x1b[A".to_vec()));
        assert_eq!(bytes("up", true), Some(b"\x1bOA".to_vec()));
        assert_eq!(bytes("alt-x", false), Some(b"\x1bx".to_vec()));
        assert_eq!(bytes("f5", false), Some(b"\x1b[15~".to_vec()));
        assert_eq!(bytes("ctrl-\\", false), Some(vec![0x1c]));
        assert_eq!(bytes("hyper-q", false), None);
        assert_eq!(bytes("ctrl-1", false), None);
    }
}
