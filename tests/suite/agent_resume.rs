//! `toolbelt-mcp agent --resume FILE`: a second run goes on from the first run's transcript
//! (its messages reach the provider before the new instruction, in both wire formats, and the
//! transcript it appended to resumes a third run); a transcript cut by a crash resumes with the
//! unrecorded result said so; files that are not transcripts fail with a clear error.

use serde_json::Value;

use super::agent::{project, run};
use super::llm::{ScriptedLlm, Wire};

fn records(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

#[tokio::test]
async fn a_resumed_run_sends_the_first_runs_messages_and_finishes_the_task() {
    for wire in Wire::BOTH {
        let ws = project();
        let transcript = ws.state_home.with_file_name("run.jsonl");
        let file = transcript.to_str().unwrap();
        let first = ScriptedLlm::start("resume_first", wire).await;
        let ran = run(&ws, &first, "look at answer.txt", &["--transcript", file]).await;
        assert_eq!(ran.code, 0, "{wire:?}: {}", ran.stderr);
        first.assert_played();

        let second = ScriptedLlm::start("resume_second", wire).await;
        let ran = run(&ws, &second, "go ahead: make it 42", &["--resume", file, "--transcript", file]).await;
        assert_eq!(ran.code, 0, "{wire:?}: {}", ran.stderr);
        second.assert_played();
        assert_eq!(ran.stdout, "answer.txt now says 42.\n");
        assert_eq!(std::fs::read_to_string(ws.root.join("answer.txt")).unwrap(), "answer = 42\n");
        assert!(ran.stderr.contains("resuming 4 earlier messages"), "{}", ran.stderr);
        // The first request of the second run carries the first run's task, result and answer.
        let sent = second.requests()[0].to_string();
        for earlier in ["look at answer.txt", "answer = 41", "waiting for the go-ahead"] {
            assert!(sent.contains(earlier), "{wire:?}: the resumed request lacks {earlier:?}");
        }
        // Appended to the same file: both runs, and the second one resumes again.
        let kinds: Vec<String> = records(&transcript).iter().map(|r| r["type"].as_str().unwrap().to_string()).collect();
        assert_eq!(kinds.iter().filter(|k| *k == "start").count(), 2, "{kinds:?}");
        assert!(kinds.contains(&"resume".to_string()), "{kinds:?}");
        let third = ScriptedLlm::start("resume_third", wire).await;
        let ran = run(&ws, &third, "is it done?", &["--resume", file]).await;
        assert_eq!(ran.code, 0, "{wire:?}: {}", ran.stderr);
        third.assert_played();
        assert!(ran.stderr.contains("resuming 8 earlier messages"), "{}", ran.stderr);
        let sent = third.requests()[0].to_string();
        assert!(sent.contains("look at answer.txt") && sent.contains("answer.txt now says 42"), "{wire:?}");
    }
}

#[tokio::test]
async fn a_transcript_cut_by_a_crash_resumes_and_foreign_files_fail_clearly() {
    let ws = project();
    let transcript = ws.state_home.with_file_name("run.jsonl");
    let file = transcript.to_str().unwrap();
    let first = ScriptedLlm::start("resume_first", Wire::Anthropic).await;
    assert_eq!(run(&ws, &first, "look at answer.txt", &["--transcript", file]).await.code, 0);
    // Cut it as a crash would: after the model asked for the read, in the middle of a line.
    let text = std::fs::read_to_string(&transcript).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let asked = lines.iter().position(|l| l.contains("\"role\":\"assistant\"")).unwrap();
    let cut = format!("{}\n{}", lines[..=asked].join("\n"), &lines[asked + 1][..20]);
    std::fs::write(&transcript, cut).unwrap();

    let after = ScriptedLlm::start("resume_after_crash", Wire::Anthropic).await;
    let ran = run(&ws, &after, "carry on", &["--resume", file, "--transcript", file]).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    after.assert_played();
    assert!(ran.stderr.contains("was cut off"), "{}", ran.stderr);
    assert!(ran.stderr.contains("1 tool call(s) had no recorded result"), "{}", ran.stderr);
    // The appended records start on a line of their own.
    assert!(records(&transcript).iter().any(|r| r["type"] == "resume"));

    let never = ScriptedLlm::start("resume_after_crash", Wire::Anthropic).await;
    let foreign = ws.state_home.with_file_name("notes.txt");
    std::fs::write(&foreign, "these are my notes\n").unwrap();
    let ran = run(&ws, &never, "carry on", &["--resume", foreign.to_str().unwrap()]).await;
    assert_eq!(ran.code, 1);
    assert!(ran.stderr.contains("holds no conversation to resume"), "{}", ran.stderr);
    let newer = ws.state_home.with_file_name("newer.jsonl");
    std::fs::write(&newer, "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"hologram\"}]}\n").unwrap();
    let ran = run(&ws, &never, "carry on", &["--resume", newer.to_str().unwrap()]).await;
    assert_eq!(ran.code, 1);
    assert!(ran.stderr.contains("line 1 of"), "{}", ran.stderr);
    assert!(ran.stderr.contains("not a transcript record this version can read"), "{}", ran.stderr);
    let ran = run(&ws, &never, "carry on", &["--resume", "/nonexistent/run.jsonl"]).await;
    assert_eq!(ran.code, 1);
    assert!(ran.stderr.contains("cannot read the transcript"), "{}", ran.stderr);
    assert!(never.requests().is_empty());
}
