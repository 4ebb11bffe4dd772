//! `read_file`: windows, totals, hashes, encodings, images, binaries, errors.

use base64::Engine;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::common::{BIG_LINES, Client, Workspace, op};

pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn reads_numbered_lines_with_total_and_hash() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let reply = client.ok(op("read_file", json!({"path": "src/main.rs"}))).await;
    let bytes = std::fs::read(ws.root.join("src/main.rs")).unwrap();
    let hash = sha256_hex(&bytes);
    assert!(reply.text.starts_with("1\tfn main() {\n2\t    let greeting = greet(\"world\");\n"), "{}", reply.text);
    assert!(reply.text.ends_with(&format!("[`src/main.rs` lines 1-8 of 8; sha256 {hash}]")), "{}", reply.text);
    let s = &reply.structured;
    assert_eq!(s["operation"], "read_file");
    assert_eq!(
        (s["path"].as_str(), s["kind"].as_str(), s["size"].as_u64()),
        (Some("src/main.rs"), Some("text"), Some(bytes.len() as u64))
    );
    assert_eq!(
        (s["total_lines"].as_u64(), s["start_line"].as_u64(), s["end_line"].as_u64()),
        (Some(8), Some(1), Some(8))
    );
    assert_eq!((s["sha256"].as_str(), s["line_endings"].as_str()), (Some(hash.as_str()), Some("lf")));
    assert_eq!((s["truncated"].as_bool(), s.get("next_offset")), (Some(false), None));
    let footer = format!("[`src/main.rs` lines 1-8 of 8; sha256 {hash}]");
    assert_eq!(reply.text, format!("{}{footer}", reply.joined("lines")), "the structured view carries the same lines");
    // Absolute paths inside the root work too and show relative.
    let abs = ws.root.join("src/main.rs").display().to_string();
    assert_eq!(client.ok(op("read_file", json!({"path": abs}))).await.structured["path"], "src/main.rs");
    client.close().await;
}

/// Windows of files read before start from a checkpoint: inside the 8 KB sniffed already (a
/// small file, read on the call's own thread) or past it (a file over 16 KB, read on a
/// blocking thread), and show the same lines either way.
#[tokio::test]
async fn windows_of_a_file_read_before_show_the_right_lines() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    for (name, lines) in [("small.txt", 40u64), ("over-inline.txt", 600)] {
        let text: String = (1..=lines).map(|n| format!("line {n} of {name}, padded to be longer\n")).collect();
        std::fs::write(ws.root.join(name), &text).unwrap();
        let whole = client.ok(op("read_file", json!({"path": name}))).await;
        assert_eq!(whole.structured["total_lines"].as_u64(), Some(lines));
        for (offset, limit) in [(10, 5), (15, 5), (3, 2), (lines - 1, 5), (300.min(lines - 2), 3)] {
            let window = client.ok(op("read_file", json!({"path": name, "offset": offset, "limit": limit}))).await;
            let end = (offset + limit - 1).min(lines);
            let expected: String =
                (offset..=end).map(|n| format!("{n}\tline {n} of {name}, padded to be longer\n")).collect();
            assert_eq!(window.joined("lines"), expected, "{name} at {offset}");
            assert_eq!(window.structured["sha256"], whole.structured["sha256"]);
        }
    }
    client.close().await;
}

#[tokio::test]
async fn windows_of_a_huge_file() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let reply = client.ok(op("read_file", json!({"path": "data/big.txt", "offset": 49_990, "limit": 5}))).await;
    assert!(reply.text.starts_with("49990\tline 49990 of the big file\n"), "{}", reply.text);
    assert!(
        reply.text.contains(
            "49994\tline 49994 of the big file\n[`data/big.txt` lines 49990-49994 of 50000; more: offset=49995;"
        ),
        "{}",
        reply.text
    );
    assert_eq!(reply.structured["next_offset"], 49_995);
    assert_eq!(reply.structured["total_lines"], BIG_LINES);
    assert_eq!(reply.structured["truncated"], false, "a window the caller chose is not a truncation");
    let tail = client.ok(op("read_file", json!({"path": "data/big.txt", "offset": 50_000}))).await;
    assert!(tail.text.starts_with("50000\tline 50000 of the big file\n"));
    assert!(tail.structured.get("next_offset").is_none());
    let past = client.err(op("read_file", json!({"path": "data/big.txt", "offset": 50_001}))).await;
    assert!(past.contains("`offset` 50001 is past the end of `data/big.txt`, which has 50000 lines"), "{past}");
    // The default window is 2000 lines, cut where either view would pass the budget (32 KiB
    // for a client no host table row names).
    let full = client.ok(op("read_file", json!({"path": "data/big.txt"}))).await;
    assert!(full.text.len() <= 32 * 1024);
    assert!(serde_json::to_string(&full.structured).unwrap().len() <= 32 * 1024);
    let next = full.structured["next_offset"].as_u64().unwrap();
    assert!((800..1000).contains(&next), "{next}");
    let note = format!("output budget reached; more: offset={next}");
    assert_eq!(full.structured["note"], note.as_str());
    assert!(
        full.text.contains(&format!("[`data/big.txt` lines 1-{} of 50000; {note};", next - 1)),
        "{}",
        &full.text[full.text.len() - 200..]
    );
    client.close().await;
}

#[tokio::test]
async fn line_endings_encodings_and_long_lines() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("long.txt"), format!("short\n{}\nno newline at end", "z".repeat(10_000))).unwrap();
    std::fs::write(ws.root.join("empty.txt"), "").unwrap();
    let client = Client::start(&ws, &[]).await;
    let crlf = client.ok(op("read_file", json!({"path": "data/crlf.txt"}))).await;
    assert!(crlf.text.starts_with("1\tfirst line\n2\tsecond line\n"), "{}", crlf.text);
    assert!(crlf.text.contains("CRLF line endings") && !crlf.text.contains('\r'));
    assert_eq!(crlf.structured["line_endings"], "crlf");
    let latin = client.ok(op("read_file", json!({"path": "data/latin1.txt"}))).await;
    assert!(
        latin.text.contains("caf\u{fffd} au lait") && latin.text.contains("invalid UTF-8 shown as U+FFFD"),
        "{}",
        latin.text
    );
    assert_eq!(latin.structured["lossy_utf8"], true);
    let unicode = client.ok(op("read_file", json!({"path": "données/été.txt"}))).await;
    assert!(unicode.text.contains("résumé des vacances"));
    assert_eq!(unicode.structured["path"], "données/été.txt");
    let long = client.ok(op("read_file", json!({"path": "long.txt"}))).await;
    assert!(
        long.text.contains(&format!("2\t{}… [line cut: 8000 more bytes]\n", "z".repeat(2000))),
        "{}",
        &long.text[..200]
    );
    assert!(long.text.contains("no final newline"));
    assert_eq!(
        (long.structured["long_lines_cut"].as_u64(), long.structured["total_lines"].as_u64()),
        (Some(1), Some(3))
    );
    assert_eq!(long.structured["truncated"], true);
    let empty = client.ok(op("read_file", json!({"path": "empty.txt"}))).await;
    assert!(empty.text.starts_with("[`empty.txt` is empty;"), "{}", empty.text);
    assert_eq!(empty.structured["total_lines"], 0);
    client.close().await;
}

#[tokio::test]
async fn images_come_back_as_images_and_binaries_are_refused() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let reply = client.ok(op("read_file", json!({"path": "data/pixel.png"}))).await;
    let image = reply.raw.content.iter().find_map(|c| c.as_image()).expect("image content");
    assert_eq!(image.mime_type, "image/png");
    let bytes = std::fs::read(ws.root.join("data/pixel.png")).unwrap();
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(&image.data).unwrap(), bytes);
    assert_eq!(
        (reply.structured["kind"].as_str(), reply.structured["mime_type"].as_str()),
        (Some("image"), Some("image/png"))
    );
    assert_eq!(reply.structured["sha256"], sha256_hex(&bytes));
    let binary = client.err(op("read_file", json!({"path": "data/blob.bin"}))).await;
    assert!(binary.contains("`data/blob.bin` is a binary file (binary data, 1.1 KiB)"), "{binary}");
    // A real executable is named by its type.
    std::fs::copy("/bin/true", ws.root.join("prog")).unwrap();
    let elf = client.err(op("read_file", json!({"path": "prog"}))).await;
    assert!(elf.contains("binary file (application/x-executable"), "{elf}");
    client.close().await;
}

#[tokio::test]
async fn wrong_targets_are_clear_errors() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let dir = client.err(op("read_file", json!({"path": "src"}))).await;
    assert!(dir.contains("`src` is a directory; use `list_dir`"), "{dir}");
    let missing = client.err(op("read_file", json!({"path": "src/nope.rs"}))).await;
    assert!(missing.contains("`src/nope.rs` does not exist"), "{missing}");
    let dangling = client.err(op("read_file", json!({"path": "dangling"}))).await;
    assert!(dangling.contains("does not exist"), "{dangling}");
    client.close().await;
}

#[tokio::test]
async fn images_over_the_cap_are_refused_with_the_limit() {
    let ws = Workspace::new();
    let config = ws.config_home.join("small.toml");
    std::fs::write(&config, "max_image_bytes = 50\n").unwrap();
    let client = Client::start(&ws, &["--config", config.to_str().unwrap()]).await;
    let text = client.err(op("read_file", json!({"path": "data/pixel.png"}))).await;
    let size = std::fs::metadata(ws.root.join("data/pixel.png")).unwrap().len();
    assert!(text.contains(&format!("`data/pixel.png` is {size} B, over the 50 B limit for images")), "{text}");
    client.close().await;
}

#[tokio::test]
async fn a_window_of_a_huge_file_does_not_load_the_file() {
    let ws = Workspace::new();
    // 80 MB in one line (the worst case for line buffering), then a short last line.
    let mut file = std::fs::File::create(ws.root.join("huge.log")).unwrap();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..80 {
        std::io::Write::write_all(&mut file, &chunk).unwrap();
    }
    std::io::Write::write_all(&mut file, b"\nthe end\n").unwrap();
    drop(file);
    std::fs::write(ws.root.join("small.txt"), "small\n").unwrap();
    let client = Client::start(&ws, &[]).await;
    // What the server itself peaks at (a debug build: about 40 MiB), once a read has run.
    client.ok(op("read_file", json!({"path": "small.txt"}))).await;
    let before_kib = client.peak_rss_kib();
    let reply = client.ok(op("read_file", json!({"path": "huge.log", "offset": 2}))).await;
    assert!(reply.text.starts_with("2\tthe end\n"), "{}", &reply.text[..100]);
    assert_eq!(reply.structured["total_lines"], 2);
    let first = client.ok(op("read_file", json!({"path": "huge.log", "limit": 1}))).await;
    assert!(first.text.contains(&format!("… [line cut: {} more bytes]", 80 * (1 << 20) - 2000)));
    // The file is 80 MiB: reading its windows may add a line's cap and buffers, never the file.
    let grown_mib = client.peak_rss_kib().saturating_sub(before_kib) / 1024;
    assert!(grown_mib < 16, "reading windows of an 80 MB file raised the peak by {grown_mib} MiB");
    client.close().await;
}

#[tokio::test]
async fn every_image_type_is_recognised() {
    let ws = Workspace::new();
    let headers: [(&str, &[u8], &str); 3] = [
        ("photo.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", "image/jpeg"),
        ("anim.gif", b"GIF89a\x01\x00\x01\x00\x00\x00\x00;", "image/gif"),
        ("pic.webp", b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00", "image/webp"),
    ];
    for (name, bytes, _) in headers {
        std::fs::write(ws.root.join(name), bytes).unwrap();
    }
    let client = Client::start(&ws, &[]).await;
    for (name, bytes, mime) in headers {
        let reply = client.ok(op("read_file", json!({"path": name}))).await;
        let image =
            reply.raw.content.iter().find_map(|c| c.as_image()).unwrap_or_else(|| panic!("{name}: {}", reply.text));
        assert_eq!(image.mime_type, mime);
        assert_eq!(base64::engine::general_purpose::STANDARD.decode(&image.data).unwrap(), bytes);
    }
    client.close().await;
}

/// Reading a 9 MB file page by page: the first call reads the whole file (count, sha256); the
/// next pages read only from the nearest checkpoint to their window, so they cost a fraction
/// of it, and together they give back the file line for line with one sha256. A change to the
/// file is seen at once.
#[tokio::test]
async fn pages_of_a_large_file_cost_their_window() {
    use std::time::{Duration, Instant};
    // Not beside the symlink-swap race, which keeps both cores busy for its whole run.
    let _heavy = super::common::HEAVY.lock().await;
    let ws = Workspace::new();
    let filler = "x".repeat(70);
    let text: String = (0..120_000).map(|n| format!("{n:07} {filler}\n")).collect();
    let path = ws.root.join("large.txt");
    std::fs::write(&path, &text).unwrap();
    // Summaries are kept only for files that settled (last changed 2 s before the read).
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let client = Client::start(&ws, &[]).await;
    let started = Instant::now();
    let first = client.ok(op("read_file", json!({"path": "large.txt"}))).await;
    let full = started.elapsed();
    let sha = first.structured["sha256"].as_str().unwrap().to_string();
    assert_eq!(sha, sha256_hex(text.as_bytes()));
    let mut got: Vec<String> = first.joined("lines").lines().map(str::to_string).collect();
    let mut next = first.structured["next_offset"].as_u64();
    let mut pages = Vec::new();
    while let Some(offset) = next {
        let started = Instant::now();
        let page = client.ok(op("read_file", json!({"path": "large.txt", "offset": offset}))).await;
        pages.push(started.elapsed());
        assert_eq!(page.structured["sha256"], sha.as_str());
        assert_eq!(page.structured["total_lines"], 120_000);
        got.extend(page.joined("lines").lines().map(str::to_string));
        next = page.structured["next_offset"].as_u64();
    }
    let expected: Vec<String> = text.lines().enumerate().map(|(i, l)| format!("{}\t{l}", i + 1)).collect();
    assert!(got == expected, "the pages do not give the file back line for line");
    pages.sort();
    let median = pages[pages.len() / 2];
    assert!(median * 4 < full, "a page cost {median:?}, the whole file {full:?}");
    // Changed (a line appended): the next read sees it.
    let mut changed = text.clone();
    changed.push_str("appended\n");
    std::fs::write(&path, &changed).unwrap();
    let again = client.ok(op("read_file", json!({"path": "large.txt", "offset": 119_990}))).await;
    assert_eq!(again.structured["total_lines"], 120_001);
    assert_eq!(again.structured["sha256"], sha256_hex(changed.as_bytes()).as_str());
    assert!(again.text.contains("120001\tappended"), "{}", again.text);
    client.close().await;
}
