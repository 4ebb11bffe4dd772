//! Numbers as the model reads them: sizes in binary units, decimals written without the
//! formatting machinery.

/// Appends `number` in decimal: `write!`'s result, without the formatting machinery (rows of
/// listings and numbered lines are written by the thousand).
pub fn push_decimal(out: &mut String, number: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = number;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|&digit| char::from(digit)));
}

/// `1.2 KiB`-style sizes for the model.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        let mut size = String::with_capacity(22);
        push_decimal(&mut size, bytes);
        size.push_str(" B");
        size
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_decimal_writes_what_display_writes() {
        for number in [0, 7, 10, 99, 100, 65_536, 12_345_678_901, u64::MAX] {
            let mut out = String::from("n=");
            push_decimal(&mut out, number);
            assert_eq!(out, format!("n={number}"));
        }
    }

    #[test]
    fn human_size_picks_units() {
        assert_eq!(super::human_size(0), "0 B");
        assert_eq!(super::human_size(12), "12 B");
        assert_eq!(super::human_size(1023), "1023 B");
        assert_eq!(super::human_size(1536), "1.5 KiB");
        assert_eq!(super::human_size(5 * 1024 * 1024), "5.0 MiB");
    }
}
