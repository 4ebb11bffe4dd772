//! Protocol-level behaviour: listing, schemas, layouts, argument validation, budget.

use serde_json::{Value, json};

use super::common::{Client, Workspace, op};

const FORBIDDEN: &[&str] = &["oneOf", "anyOf", "allOf", "not", "$ref", "$defs", "definitions", "format", "nullable"];

/// Fails on any construct a host might reject.
fn assert_flat(schema: &Value, at: &str) {
    match schema {
        Value::Object(map) => {
            for (key, child) in map {
                if !at.ends_with("properties") {
                    assert!(!FORBIDDEN.contains(&key.as_str()), "`{key}` at {at}");
                    if key == "type" {
                        assert!(child.is_string(), "type array at {at}");
                    }
                }
                assert_flat(child, &format!("{at}/{key}"));
            }
        }
        Value::Array(items) => items.iter().for_each(|i| assert_flat(i, at)),
        _ => {}
    }
}

#[tokio::test]
async fn lists_flat_tools_deterministically() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let info = client.service.peer_info().unwrap();
    let server = info.server_info.clone().unwrap();
    assert_eq!((server.name.as_str(), server.version.as_str()), ("toolbelt-mcp", env!("CARGO_PKG_VERSION")));
    let tools = client.service.list_all_tools().await.unwrap();
    assert_eq!(
        tools.iter().map(|t| t.name.as_ref()).collect::<Vec<_>>(),
        ["file_operations", "terminal_operations", "todo_operations", "memory_operations"]
    );
    let terminal = serde_json::to_value(&tools[1]).unwrap();
    assert_flat(&terminal["inputSchema"], "");
    assert_flat(&terminal["outputSchema"], "");
    let tool = serde_json::to_value(&tools[0]).unwrap();
    assert_flat(&tool["inputSchema"], "");
    assert_flat(&tool["outputSchema"], "");
    assert_eq!(tool["inputSchema"]["type"], "object");
    assert_eq!(tool["inputSchema"]["required"], json!(["operation"]));
    let operations = tool["inputSchema"]["properties"]["operation"]["enum"].as_array().unwrap();
    assert_eq!(operations[..4], [json!("read_file"), json!("list_dir"), json!("file_search"), json!("grep_search")]);
    // The published schema is exactly what is served.
    let published: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/file_operations.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(published["inputSchema"], tool["inputSchema"]);
    assert_eq!(published["outputSchema"], tool["outputSchema"]);
    assert_eq!(published["description"], tool["description"]);
    // A second listing (and a second server) give identical bytes.
    let again = Client::start(&ws, &[]).await;
    assert_eq!(
        serde_json::to_string(&tools).unwrap(),
        serde_json::to_string(&again.service.list_all_tools().await.unwrap()).unwrap()
    );
    client.close().await;
    again.close().await;
}

/// What hosts cut: Claude Code 2.1.197 cuts a tool description at 2,048 characters and OpenAI
/// function descriptions are limited to 1,024; Codex strips every field description from a
/// tool whose compact input schema passes 5,000 bytes (`tool_input_schema_max_bytes`).
const MAX_DESCRIPTION_CHARS: usize = 1024;
const MAX_INPUT_SCHEMA_BYTES: usize = 5000;
/// The whole consolidated `tools/list` result: what a client parses (and compiles) at start.
const MAX_LISTING_BYTES: usize = 18 * 1024;

#[tokio::test]
async fn no_host_cuts_a_description_or_a_schema() {
    let ws = Workspace::new();
    for layout in ["consolidated", "granular"] {
        let client = Client::start(&ws, &["--tool-layout", layout]).await;
        let tools = client.service.list_all_tools().await.unwrap();
        for tool in &tools {
            let description = tool.description.as_deref().unwrap_or_default();
            assert!(description.chars().count() <= MAX_DESCRIPTION_CHARS, "{layout} `{}`: {description}", tool.name);
            let input = serde_json::to_string(&tool.input_schema).unwrap();
            assert!(input.len() <= MAX_INPUT_SCHEMA_BYTES, "{layout} `{}`: {} bytes", tool.name, input.len());
            // Every field is documented, however terse.
            for (name, field) in tool.input_schema["properties"].as_object().unwrap() {
                assert!(
                    field["description"].as_str().is_some_and(|d| !d.is_empty()),
                    "{layout} `{}`.{name}",
                    tool.name
                );
            }
        }
        if layout == "consolidated" {
            let listing = serde_json::to_string(&json!({"tools": tools})).unwrap();
            assert!(listing.len() <= MAX_LISTING_BYTES, "tools/list is {} bytes", listing.len());
        }
        client.close().await;
    }
}

/// Each host gets a budget it shows the model whole (Claude Code up to the cap the tools raise,
/// else it moves a result over 50,000 characters to a file; Codex cuts at about 10 KB; Qwen Code
/// shows both views together), and a budget the user sets is the same for every client.
#[tokio::test]
async fn the_budget_follows_the_host_unless_set() {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    let ws = Workspace::new();
    let no_hints = ws.config_home.join("no-hints.toml");
    std::fs::write(&no_hints, "host_tool_hints = false\n").unwrap();
    let no_hints = ["--config", no_hints.to_str().unwrap()];
    // Bigger than any budget below.
    let huge: String = (0..6000).map(|i| format!("line {i:05}: a file bigger than every host's budget\n")).collect();
    std::fs::write(ws.root.join("data/huge.txt"), huge).unwrap();
    let cases = [
        ("claude-code", &[][..], 100_000),
        ("claude-code", &no_hints[..], 40_000),
        ("codex-mcp-client", &[][..], 9_000),
        ("qwen-cli-mcp-client-x", &[][..], 12_000),
        ("some-editor", &[][..], 32_768),
        ("claude-code", &["--output-budget", "5000"][..], 5_000),
    ];
    for (name, extra, budget) in cases {
        let transport = TokioChildProcess::new(tokio::process::Command::new(super::common::BIN).configure(|cmd| {
            cmd.args(["serve", "--root", ws.root.to_str().unwrap()]).args(extra);
            cmd.env("XDG_CONFIG_HOME", &ws.config_home).env("XDG_STATE_HOME", &ws.state_home);
        }))
        .unwrap();
        let info = ClientConfig::new(ClientCapabilities::default(), Implementation::new(name, "1"));
        let service = info.serve(transport).await.unwrap();
        // The tools stay loaded in hosts that defer them, and raise Claude Code's result cap to
        // the budget (with room for a result's closing lines), unless `host_tool_hints = false`.
        let tools = service.list_all_tools().await.unwrap();
        for tool in &tools {
            let meta = tool.meta.as_ref().map(|m| m.0.clone()).unwrap_or_default();
            let hinted = !extra.contains(&"--config");
            assert_eq!(meta.get("anthropic/alwaysLoad").is_some(), hinted, "{name} {}: {meta:?}", tool.name);
            let cap = meta.get("anthropic/maxResultSizeChars").and_then(Value::as_u64);
            assert_eq!(cap, hinted.then_some((budget + budget / 4) as u64), "{name} {}", tool.name);
        }
        let args = op("read_file", json!({"path": "data/huge.txt", "details": true}));
        let params = CallToolRequestParams::new("file_operations").with_arguments(args.as_object().unwrap().clone());
        let reply = super::common::unpack(service.call_tool(params).await.unwrap());
        let structured = serde_json::to_string(&reply.structured).unwrap().len();
        let text = serde_json::to_string(&reply.text).unwrap().len();
        assert!(structured <= budget && text <= budget, "{name}: {structured} and {text} bytes, budget {budget}");
        assert!(structured > budget * 8 / 10, "{name}: the budget is used: {structured} of {budget}");
        service.cancel().await.unwrap();
    }
}

/// Every result fits its tool's output schema (the envelope every consolidated result carries)
/// and its operation's (the granular tool's, which lists the operation's own fields).
#[tokio::test]
async fn structured_content_fits_the_output_schema() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let tools = client.service.list_all_tools().await.unwrap();
    let envelope = serde_json::to_value(&tools[0]).unwrap()["outputSchema"].clone();
    let granular: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/granular.json")).unwrap(),
    )
    .unwrap();
    let calls = [
        op("read_file", json!({"path": "src/main.rs"})),
        op("read_file", json!({"path": "data/pixel.png"})),
        op("list_dir", json!({"depth": 2})),
        op("file_search", json!({"pattern": "*.rs"})),
        op("grep_search", json!({"pattern": "fn"})),
        op("grep_search", json!({"pattern": "fn", "output": "files"})),
    ];
    // Both views: the whole record and the lean one.
    let both = [true, false].into_iter().flat_map(|details| {
        calls.iter().map(move |call| {
            let mut call = call.clone();
            call["details"] = json!(details);
            call
        })
    });
    for call in both {
        let reply = client.ok(call.clone()).await;
        let operation = call["operation"].as_str().unwrap();
        let own = granular.as_array().unwrap().iter().find(|tool| tool["name"] == operation).unwrap();
        for schema in [&envelope, &own["outputSchema"]] {
            fits(&reply.structured, schema, &call, schema == &envelope);
        }
    }
    client.close().await;
}

/// `result` has every field `schema` requires, each declared field with its type, and (unless
/// `open`) no field the schema does not declare.
fn fits(result: &Value, schema: &Value, call: &Value, open: bool) {
    for (key, value) in result.as_object().unwrap() {
        let declared = &schema["properties"][key];
        if !declared.is_object() {
            assert!(open, "{call}: `{key}` is not in the output schema {schema}");
            continue;
        }
        let kind = declared["type"].as_str().unwrap();
        let fits = match kind {
            "integer" => value.is_u64(),
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            _ => false,
        };
        assert!(fits, "{call}: `{key}` = {value} is not {kind}");
    }
    for required in schema["required"].as_array().into_iter().flatten() {
        assert!(result.get(required.as_str().unwrap()).is_some(), "{call}: missing {required}");
    }
}

#[tokio::test]
async fn granular_layout_lists_each_operation_with_exact_annotations() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &["--tool-layout", "granular"]).await;
    let tools = client.service.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names[..4], ["read_file", "list_dir", "file_search", "grep_search"]);
    for tool in &tools {
        let value = serde_json::to_value(tool).unwrap();
        assert_flat(&value["inputSchema"], "");
        assert!(value["inputSchema"]["properties"].get("operation").is_none());
    }
    for tool in &tools[..4] {
        let value = serde_json::to_value(tool).unwrap();
        assert_eq!(value["annotations"]["readOnlyHint"], true, "{}", tool.name);
        assert_eq!(value["annotations"]["idempotentHint"], true, "{}", tool.name);
    }
    let read = serde_json::to_value(&tools[0]).unwrap();
    assert_eq!(read["inputSchema"]["required"], json!(["path"]));
    let reply = client.call("read_file", json!({"path": "src/main.rs"})).await;
    assert!(!reply.is_error && reply.text.contains("fn main()"), "{}", reply.text);
    let consolidated = rmcp::model::CallToolRequestParams::new("file_operations")
        .with_arguments(op("read_file", json!({"path": "src/main.rs"})).as_object().unwrap().clone());
    let err = client.service.call_tool(consolidated).await.unwrap_err().to_string();
    assert!(err.contains("unknown tool `file_operations`") && err.contains("`read_file`"), "{err}");
    let reply = client.call("read_file", json!({"operation": "read_file", "path": "src/main.rs"})).await;
    assert!(reply.is_error && reply.text.contains("unknown field `operation`"), "{}", reply.text);
    client.close().await;
}

#[tokio::test]
async fn bad_arguments_get_actionable_errors() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let cases: Vec<(Value, &[&str])> = vec![
        (json!({"path": "src/main.rs"}), &["needs an `operation` field", "`read_file`"]),
        (json!({"operation": "delete_everything"}), &["has no operation `delete_everything`", "`grep_search`"]),
        (json!({"operation": 7}), &["`operation` must be a string"]),
        (op("read_file", json!({})), &["missing field `path`", "`path` (required), `offset`, `limit`"]),
        (
            op("read_file", json!({"path": "src/main.rs", "lines": 3})),
            &["unknown field `lines`", "expected one of `path`, `offset`, `limit`"],
        ),
        (
            op("read_file", json!({"path": "src/main.rs", "offset": "ten"})),
            &["invalid type: string \"ten\"", "read_file"],
        ),
        (
            op("read_file", json!({"path": "src/main.rs", "offset": 0})),
            &["`offset` = 0 is out of range", "numbered from 1"],
        ),
        (op("read_file", json!({"path": "src/main.rs", "limit": 0})), &["`limit` = 0"]),
        (op("list_dir", json!({"depth": 11})), &["`depth` = 11 is out of range", "to 10"]),
        (op("list_dir", json!({"include_hidden": "yes"})), &["invalid type", "boolean"]),
        (
            op("grep_search", json!({"pattern": "x", "output": "lines"})),
            &["unknown variant `lines`", "`content`, `files`, `count`"],
        ),
        (op("file_search", json!({"pattern": "*", "sort": "size"})), &["unknown variant `size`"]),
    ];
    for (args, expected) in cases {
        let text = client.err(args.clone()).await;
        for fragment in expected {
            assert!(text.contains(fragment), "{args}: `{fragment}` not in: {text}");
        }
    }
    // An unknown tool is a protocol error, not a tool result.
    let params = rmcp::model::CallToolRequestParams::new("shell").with_arguments(serde_json::Map::new());
    let err = client.service.call_tool(params).await.unwrap_err().to_string();
    assert!(err.contains("unknown tool `shell`") && err.contains("`file_operations`"), "{err}");
    // Null for an optional field means "not given".
    client.ok(op("read_file", json!({"path": "src/main.rs", "offset": null, "limit": null}))).await;
    client.close().await;
}

/// Models fill in the merged schema of a consolidated tool: what they send for "nothing" (or
/// at another operation's default) is ignored, what would change another operation is not.
#[tokio::test]
async fn sloppy_arguments_that_mean_nothing_are_accepted() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let accepted = [
        json!({"path": "src/main.rs", "overwrite": false}),
        json!({"path": "src/main.rs", "offset": 1.0, "limit": 3.0}),
        json!({"path": "src/main.rs", "escalate": null, "justification": null}),
        json!({"path": "src/main.rs", "depth": 1, "respect_gitignore": true, "content": "", "edits": [], "pattern": null}),
    ];
    for args in accepted {
        let reply = client.file(op("read_file", args.clone())).await;
        assert!(!reply.is_error && reply.structured["lines"][0] == "1\tfn main() {", "{args}: {}", reply.text);
    }
    let sloppy_command =
        json!({"command": "echo hi", "background": false, "timeout_ms": 5000.0, "session_id": "", "signal": "TERM"});
    let ran = client.term("run_command", sloppy_command).await;
    assert_eq!(ran.joined("stdout"), "hi\n", "{}", ran.text);
    let refused: Vec<(Value, &[&str])> = vec![
        (
            json!({"path": "src/main.rs", "overwrite": true}),
            &[
                "`overwrite` = true is a field of `create_file`, `rename_file`, not of `read_file`",
                "`path` (required), `offset`, `limit`",
            ],
        ),
        (json!({"path": "src/main.rs", "depth": 3}), &["`depth` = 3 is a field of `list_dir`"]),
        (json!({"path": "src/main.rs", "offset": 1.5}), &["invalid type: floating point `1.5`"]),
        (json!({"path": "src/main.rs", "nonsense": false}), &["unknown field `nonsense`", "`path` (required)"]),
    ];
    for (args, expected) in refused {
        let text = client.err(op("read_file", args.clone())).await;
        for fragment in expected {
            assert!(text.contains(fragment), "{args}: `{fragment}` not in: {text}");
        }
    }
    client.close().await;
}

#[tokio::test]
async fn every_result_fits_the_output_budget() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &["--output-budget", "4096"]).await;
    let cases = [
        op("read_file", json!({"path": "data/big.txt"})),
        op("grep_search", json!({"pattern": "line", "limit": 100000})),
        op("grep_search", json!({"pattern": "line", "output": "count", "limit": 100000})),
        op("list_dir", json!({"depth": 10, "include_hidden": true, "respect_gitignore": false})),
        op("file_search", json!({"pattern": "**", "limit": 100000})),
    ];
    for call in cases {
        let reply = client.ok(call.clone()).await;
        assert!(reply.text.len() <= 4096, "{call}: {} bytes", reply.text.len());
        let json_size = serde_json::to_string(&reply.raw).unwrap().len();
        assert!(json_size < 4096 * 4, "{call}: whole result {json_size} bytes");
    }
    let reply = client.ok(op("read_file", json!({"path": "data/big.txt"}))).await;
    assert_eq!(reply.structured["truncated"], true);
    let next = reply.structured["next_offset"].as_u64().unwrap();
    assert!(reply.text.contains(&format!("output budget reached; more: offset={next}")), "{}", reply.text);
    let reply = client.ok(op("grep_search", json!({"pattern": "line", "limit": 100000}))).await;
    assert_eq!(
        (reply.structured["total_matches"].as_u64(), reply.structured["truncated"].as_bool()),
        (Some(50_003), Some(true)),
        "big.txt and crlf.txt"
    );
    client.close().await;
}
