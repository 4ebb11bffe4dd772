//! Section `lean`: what the model reads, ours against Claude Code's own tools, the same five
//! steps in the same run: runs `tests/hosts/lean_table.py` (Claude Code headless against the
//! scripted model endpoint) on the server and prints its table.

use std::path::Path;
use std::process::Command;

/// Runs the lean table on `bin`; says why when it cannot (no python3, no Claude Code to install).
pub(crate) fn lean_table(bin: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hosts/lean_table.py");
    println!("\n## What the model reads: ours against Claude Code's own tools (same run)\n");
    let out = match Command::new("python3").arg(&script).arg(bin).output() {
        Ok(out) => out,
        Err(err) => {
            println!("skipped: `python3 {}` could not start ({err})", script.display());
            return;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    // The table and its verdict; the per-step texts stay in the script's own output.
    for line in text.lines().filter(|l| l.starts_with('|') || l.starts_with("lean table:") || l.starts_with("SKIP")) {
        println!("{line}");
    }
    if !out.status.success() {
        eprintln!("{text}{}", String::from_utf8_lossy(&out.stderr));
        panic!("the lean table failed ({}): see above", out.status);
    }
}
