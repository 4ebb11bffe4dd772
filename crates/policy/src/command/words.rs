//! What a shell word means, as far as it can be known without running anything: backslash
//! escapes removed (`r\m` is `rm`), quotes and ANSI-C strings decoded (`$'\x74ouch'` is
//! `touch`), brace lists expanded (`{touch,F}` is `touch F`), `~` and `$HOME` as the home
//! directory; any other expansion (a variable, a substitution) is unknown.

use tree_sitter::Node;

/// A word of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word {
    /// Its value.
    Known(String),
    /// An expansion whose value is known only when the command runs.
    Unknown,
}

impl Word {
    /// The value, if known.
    pub fn known(&self) -> Option<&str> {
        match self {
            Self::Known(text) => Some(text),
            Self::Unknown => None,
        }
    }
}

/// The words a node expands to (one, or several for a brace list).
pub(super) fn expand(node: Node<'_>, source: &str, home: Option<&str>) -> Vec<Word> {
    match value(node, source, home) {
        Some(text) if node.kind() == "word" || node.kind() == "concatenation" => {
            braces(&text).into_iter().map(Word::Known).collect()
        }
        Some(text) => vec![Word::Known(text)],
        None => vec![Word::Unknown],
    }
}

/// The literal value of a node, or `None` if it holds an expansion only known at run time.
fn value(node: Node<'_>, source: &str, home: Option<&str>) -> Option<String> {
    let raw = node.utf8_text(source.as_bytes()).unwrap_or_default();
    match node.kind() {
        "word" => Some(tilde(&unescape(raw), home)),
        "number" => Some(raw.to_string()),
        "command_name" => value(node.named_child(0)?, source, home),
        "raw_string" => Some(raw.trim_start_matches('\'').trim_end_matches('\'').to_string()),
        "ansi_c_string" => Some(ansi_c(raw.trim_start_matches("$'").trim_end_matches('\''))),
        "string" => {
            let mut out = String::new();
            for child in node.named_children(&mut node.walk()) {
                out.push_str(&value(child, source, home)?);
            }
            if node.named_child_count() == 0 {
                out = raw.trim_start_matches('"').trim_end_matches('"').to_string();
            }
            Some(out)
        }
        "string_content" => Some(unescape_double(raw)),
        "simple_expansion" | "expansion" => {
            let name = node.named_children(&mut node.walk()).find(|c| c.kind() == "variable_name");
            let name = name.map(|n| n.utf8_text(source.as_bytes()).unwrap_or_default());
            // Only a plain `$HOME` / `${HOME}` is known; `${HOME:-x}` and the like are not.
            match (name, node.named_child_count()) {
                (Some("HOME"), 1) => home.map(str::to_string),
                _ => None,
            }
        }
        "concatenation" => {
            let mut out = String::new();
            for child in node.named_children(&mut node.walk()) {
                out.push_str(&value(child, source, home)?);
            }
            // Unnamed pieces (`{`, `,`, `}` of a brace list) are in the raw text: keep it when
            // the named pieces are plain words.
            let plain = node.named_children(&mut node.walk()).all(|c| c.kind() == "word");
            Some(if plain { tilde(&unescape(raw), home) } else { out })
        }
        _ => None,
    }
}

/// `r\m` → `rm`: an unquoted backslash quotes the next character.
fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Inside double quotes a backslash quotes only `$`, `` ` ``, `"`, `\` and a newline.
fn unescape_double(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek().is_some_and(|n| matches!(n, '$' | '`' | '"' | '\\' | '\n')) {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A leading `~` or `~/` as the home directory.
fn tilde(word: &str, home: Option<&str>) -> String {
    match (word, home) {
        ("~", Some(home)) => home.to_string(),
        (w, Some(home)) if w.starts_with("~/") => format!("{home}{}", &w[1..]),
        (w, _) => w.to_string(),
    }
}

/// The value of `$'…'`: `\n`, `\t`, `\xHH`, `\NNN` (octal), `\uHHHH`, `\\`, `\'`.
fn ansi_c(body: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    let digits = |from: usize, max: usize, radix: u32| -> (Option<char>, usize) {
        let taken: String = chars[from..].iter().take(max).take_while(|c| c.is_digit(radix)).collect();
        (u32::from_str_radix(&taken, radix).ok().and_then(char::from_u32), taken.len())
    };
    while i < chars.len() {
        if chars[i] != '\\' || i + 1 == chars.len() {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let next = chars[i + 1];
        i += 2;
        let simple = match next {
            'n' => Some('\n'),
            't' => Some('\t'),
            'r' => Some('\r'),
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'v' => Some('\x0b'),
            '\\' | '\'' | '"' | '?' => Some(next),
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            continue;
        }
        let (decoded, used) = match next {
            'x' => digits(i, 2, 16),
            'u' => digits(i, 4, 16),
            'U' => digits(i, 8, 16),
            '0'..='7' => {
                let (c, n) = digits(i - 1, 3, 8);
                (c, n.saturating_sub(1))
            }
            _ => (None, 0),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                i += used;
            }
            None => {
                out.push('\\');
                out.push(next);
            }
        }
    }
    out
}

/// A brace list (`{a,b}`, `x{a,b}y`) expanded; a word without one stays as it is.
pub(super) fn braces(word: &str) -> Vec<String> {
    let (Some(open), Some(close)) = (word.find('{'), word.find('}')) else { return vec![word.to_string()] };
    if close < open || !word[open..close].contains(',') {
        return vec![word.to_string()];
    }
    let (head, inner, tail) = (&word[..open], &word[open + 1..close], &word[close + 1..]);
    inner.split(',').flat_map(|part| braces(&format!("{head}{part}{tail}"))).collect()
}

/// A path as the kernel would see it, lexically: `//` is `/`, `/.` and trailing slashes go,
/// `..` goes up. Words that are not absolute paths are returned as they are.
pub(super) fn normalize_path(word: &str) -> String {
    if !word.starts_with('/') {
        return word.to_string();
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in word.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Word> {
        let tree = super::super::parse(line).unwrap();
        let mut out = Vec::new();
        let mut stack = vec![tree.root_node()];
        while let Some(node) = stack.pop() {
            if node.kind() == "command" {
                for child in node.named_children(&mut node.walk()) {
                    out.extend(expand(child, line, Some("/home/u")));
                }
                return out;
            }
            stack.extend(node.children(&mut node.walk()));
        }
        out
    }

    fn known(line: &str) -> Vec<String> {
        words(line).into_iter().map(|w| w.known().unwrap_or("?").to_string()).collect()
    }

    #[test]
    fn spellings_of_a_name_decode_to_it() {
        assert_eq!(known("\\touch F"), ["touch", "F"]);
        assert_eq!(known("r\\m -rf /"), ["rm", "-rf", "/"]);
        assert_eq!(known("$'\\x74ouch' F"), ["touch", "F"]);
        assert_eq!(known("$'\\164ouch' F"), ["touch", "F"]);
        assert_eq!(known("'to'\"uch\" F"), ["touch", "F"]);
        assert_eq!(known("rm -rf ~ ${HOME} $HOME ~/x"), ["rm", "-rf", "/home/u", "/home/u", "/home/u", "/home/u/x"]);
        assert_eq!(known("rm $X ${HOME:-/}"), ["rm", "?", "?"]);
        assert_eq!(known("echo x{a,b}y"), ["echo", "xay", "xby"]);
    }

    #[test]
    fn paths_and_braces() {
        assert_eq!(normalize_path("//"), "/");
        assert_eq!(normalize_path("/."), "/");
        assert_eq!(normalize_path("/tmp/./x//"), "/tmp/x");
        assert_eq!(normalize_path("/a/../.."), "/");
        assert_eq!(normalize_path("rel/x/"), "rel/x/");
        assert_eq!(braces("{touch,F}"), ["touch", "F"]);
        assert_eq!(braces("a{1,2}{x,y}"), ["a1x", "a1y", "a2x", "a2y"]);
        assert_eq!(braces("{solo}"), ["{solo}"]);
    }
}
