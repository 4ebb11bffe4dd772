//! Shell patterns as bash reads them in `${X%pattern}` and its kin: `*`, `?` and bracket
//! expressions (`[f]`, `[!a-z]`, `[[:alpha:]]`), with quoting (`'…'`, `"…"`, `\x`) making
//! what it covers literal, and parameters expanded first (a quoted one literal, an unquoted
//! one a pattern itself). A value that names a place through such a removal must be read the
//! way the shell will read it, or the place goes unguarded.

/// What a parameter's value is.
type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// One element of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// This character.
    Char(char),
    /// `*`: any run of characters.
    Any,
    /// `?`: any one character.
    One,
    /// `[…]`: one character of the set (or, negated, not of it).
    Class { negated: bool, items: Vec<Item> },
}

/// One element of a bracket expression.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    Char(char),
    Range(char, char),
    Named(String),
}

/// A pattern, read from its text as the shell reads it; `lookup` gives a parameter's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pattern(Vec<Token>);

impl Pattern {
    /// `raw` (the text after `%`, `%%`, `#` or `##`) with its quoting and parameters resolved.
    pub(super) fn read(raw: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Self {
        Self(tokens(raw, Some(lookup)))
    }

    /// Whether the pattern matches all of `text`.
    pub(super) fn matches(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        matches_at(&self.0, &text)
    }
}

/// The tokens of `raw`. With `lookup`, quotes quote and parameters are expanded; without it
/// (the value of an unquoted parameter, a pattern itself), only `\\` still escapes.
fn tokens(raw: &str, lookup: Option<Lookup<'_>>) -> Vec<Token> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = raw.chars().collect();
    let mut at = 0;
    while at < chars.len() {
        match (chars[at], lookup) {
            ('\\', _) => {
                if let Some(&next) = chars.get(at + 1) {
                    tokens.push(Token::Char(next));
                }
                at += 2;
            }
            ('\'', Some(_)) => {
                let end = chars[at + 1..].iter().position(|c| *c == '\'').map_or(chars.len(), |p| at + 1 + p);
                tokens.extend(chars[at + 1..end].iter().map(|c| Token::Char(*c)));
                at = end + 1;
            }
            ('"', Some(lookup)) => {
                at += 1;
                let mut quoted = String::new();
                while at < chars.len() && chars[at] != '"' {
                    if chars[at] == '\\' && matches!(chars.get(at + 1), Some('$' | '`' | '"' | '\\')) {
                        quoted.push(chars[at + 1]);
                        at += 2;
                    } else if chars[at] == '$' {
                        let (value, used) = parameter_at(&chars[at..], lookup);
                        quoted.push_str(&value);
                        at += used;
                    } else {
                        quoted.push(chars[at]);
                        at += 1;
                    }
                }
                tokens.extend(quoted.chars().map(Token::Char));
                at += 1;
            }
            ('$', Some(lookup)) => {
                let (value, used) = parameter_at(&chars[at..], lookup);
                tokens.extend(tokens_of_value(&value));
                at += used;
            }
            ('*', _) => {
                tokens.push(Token::Any);
                at += 1;
            }
            ('?', _) => {
                tokens.push(Token::One);
                at += 1;
            }
            ('[', _) => match bracket(&chars[at..]) {
                Some((class, used)) => {
                    tokens.push(class);
                    at += used;
                }
                None => {
                    tokens.push(Token::Char('['));
                    at += 1;
                }
            },
            (c, _) => {
                tokens.push(Token::Char(c));
                at += 1;
            }
        }
    }
    tokens
}

/// An unquoted parameter's value in a pattern: its `*`, `?`, `[…]` and `\\` are active, its
/// quotes and `$` are characters.
fn tokens_of_value(value: &str) -> Vec<Token> {
    tokens(value, None)
}

/// The value of the parameter `$…` at the start of `chars` (`$NAME` or `${…}` with its
/// operators), and how many characters it took; a lone `$` is itself.
fn parameter_at(chars: &[char], lookup: &dyn Fn(&str) -> Option<String>) -> (String, usize) {
    if chars.get(1) == Some(&'{') {
        let mut depth = 0usize;
        for (at, c) in chars.iter().enumerate().skip(2) {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    let text: String = chars[..=at].iter().collect();
                    let [value, _] = super::places::expand(&text, lookup);
                    return (value, at + 1);
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        return ("$".into(), 1);
    }
    let name: String = chars[1..].iter().take_while(|c| c.is_ascii_alphanumeric() || **c == '_').collect();
    if name.is_empty() {
        return ("$".into(), 1);
    }
    (lookup(&name).unwrap_or_default(), 1 + name.chars().count())
}

/// The bracket expression at the start of `chars` (which starts with `[`), and its length;
/// `None` when it does not close (the `[` is then literal).
fn bracket(chars: &[char]) -> Option<(Token, usize)> {
    let mut at = 1;
    let negated = matches!(chars.get(at), Some('!' | '^'));
    if negated {
        at += 1;
    }
    let mut items = Vec::new();
    let mut first = true;
    while at < chars.len() {
        let c = chars[at];
        if c == ']' && !first {
            return Some((Token::Class { negated, items }, at + 1));
        }
        first = false;
        if c == '[' && chars.get(at + 1) == Some(&':') {
            let rest: String = chars[at + 2..].iter().collect();
            if let Some(end) = rest.find(":]") {
                items.push(Item::Named(rest[..end].to_string()));
                at += 2 + rest[..end].chars().count() + 2;
                continue;
            }
        }
        let c = if c == '\\' && at + 1 < chars.len() {
            at += 1;
            chars[at]
        } else {
            c
        };
        if chars.get(at + 1) == Some(&'-') && chars.get(at + 2).is_some_and(|end| *end != ']') {
            items.push(Item::Range(c, chars[at + 2]));
            at += 3;
        } else {
            items.push(Item::Char(c));
            at += 1;
        }
    }
    None
}

fn matches_at(pattern: &[Token], text: &[char]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((Token::Any, rest)) => (0..=text.len()).any(|skip| matches_at(rest, &text[skip..])),
        Some((token, rest)) => {
            let Some((first, more)) = text.split_first() else { return false };
            let one = match token {
                Token::Char(c) => c == first,
                Token::One => true,
                Token::Class { negated, items } => items.iter().any(|item| in_item(item, *first)) != *negated,
                // Matched above: never here.
                Token::Any => false,
            };
            one && matches_at(rest, more)
        }
    }
}

fn in_item(item: &Item, c: char) -> bool {
    match item {
        Item::Char(x) => *x == c,
        Item::Range(low, high) => (*low..=*high).contains(&c),
        Item::Named(class) => match class.as_str() {
            "alpha" => c.is_alphabetic(),
            "digit" => c.is_ascii_digit(),
            "alnum" => c.is_alphanumeric(),
            "upper" => c.is_uppercase(),
            "lower" => c.is_lowercase(),
            "space" => c.is_whitespace(),
            "blank" => c == ' ' || c == '\t',
            "punct" => c.is_ascii_punctuation(),
            "xdigit" => c.is_ascii_hexdigit(),
            "word" => c.is_alphanumeric() || c == '_',
            "cntrl" => c.is_control(),
            "print" => !c.is_control(),
            "graph" => !c.is_control() && !c.is_whitespace(),
            _ => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(raw: &str, text: &str) -> bool {
        let lookup = |name: &str| match name {
            "STAR" => Some("*".to_string()),
            "SLASH" => Some("/".to_string()),
            _ => None,
        };
        Pattern::read(raw, &lookup).matches(text)
    }

    #[test]
    fn patterns_match_as_bash_matches_them() {
        // Each pair checked against bash: `x=TEXT; [[ ${x%RAW} == "" ]]`-style removals.
        for (raw, text, want) in [
            ("/fh", "/fh", true),
            ("/[f]h", "/fh", true),
            ("/[!f]h", "/fh", false),
            ("/[^g]h", "/fh", true),
            ("/[a-g]h", "/fh", true),
            ("/[[:alpha:]]h", "/fh", true),
            ("/[[:digit:]]h", "/fh", false),
            ("\\/fh", "/fh", true),
            ("/f\\h", "/fh", true),
            ("/\"f\"h", "/fh", true),
            ("/'f'h", "/fh", true),
            ("\"${NOPE}\"/fh", "/fh", true),
            ("${NOPE}/fh", "/fh", true),
            ("/*", "/fh", true),
            ("/??", "/fh", true),
            ("\"/*\"", "/fh", false),
            ("\"/*\"", "/*", true),
            ("'/?h'", "/fh", false),
            ("/\\*", "/fh", false),
            ("$STAR", "/fh", true),
            ("\"$STAR\"", "/fh", false),
            ("${SLASH}fh", "/fh", true),
            ("[]]", "]", true),
            ("[", "[", true),
            ("/[f", "/[f", true),
        ] {
            assert_eq!(matches(raw, text), want, "{raw} against {text}");
        }
    }
}
