//! Terminal bytes to text for the model: escape sequences stripped, carriage-return
//! overwrites applied, invalid UTF-8 replaced.

use vte::{Params, Parser, Perform};

/// Plain text of terminal output, and whether it held bytes that are not text.
pub fn to_text(bytes: &[u8]) -> (String, bool) {
    let mut plain = Plain { out: String::with_capacity(bytes.len()), line_start: 0, pending_cr: false };
    let mut parser = Parser::new();
    parser.advance(&mut plain, bytes);
    let binary = bytes.contains(&0) || std::str::from_utf8(bytes).is_err();
    (plain.out, binary)
}

struct Plain {
    out: String,
    line_start: usize,
    pending_cr: bool,
}

impl Plain {
    fn resolve_cr(&mut self) {
        if self.pending_cr {
            // A lone `\r` returns to the start of the line: what follows overwrites it.
            self.out.truncate(self.line_start);
            self.pending_cr = false;
        }
    }
}

impl Perform for Plain {
    fn print(&mut self, c: char) {
        self.resolve_cr();
        self.out.push(c);
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => {
                self.pending_cr = false;
                self.out.push('\n');
                self.line_start = self.out.len();
            }
            b'\r' => self.pending_cr = true,
            b'\t' => {
                self.resolve_cr();
                self.out.push('\t');
            }
            0x08 if self.out.len() > self.line_start => {
                self.out.pop();
            }
            _ => {}
        }
    }

    fn csi_dispatch(&mut self, _: &Params, _: &[u8], _: bool, _: char) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_escapes_and_applies_carriage_returns() {
        let (text, binary) = to_text(b"\x1b[1;31merror\x1b[0m: x\r\n10%\r50%\r100%\ndone\x07\n");
        assert_eq!(text, "error: x\n100%\ndone\n");
        assert!(!binary);
        assert_eq!(to_text(b"ab\x08c\x1b]0;title\x07!").0, "ac!");
        let (text, binary) = to_text(b"a\0b\xffc");
        assert!(binary && text.starts_with('a') && text.ends_with('c'), "{text:?}");
    }
}
