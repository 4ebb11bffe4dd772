//! Prompts and completions: each prompt's text is the workspace's real state (the session's
//! changes, the todo list, the memories), and arguments and resource template names complete
//! from what the store holds.

use rmcp::model::{ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, PromptReference, Reference};
use rmcp::model::{ResourceTemplateReference, Role};
use serde_json::{Value, json};

use super::common::{Client, Workspace, op};

async fn prompt(client: &Client, name: &str, arguments: Value) -> Result<String, rmcp::ServiceError> {
    let mut params = GetPromptRequestParams::new(name);
    if let Value::Object(arguments) = arguments {
        params = params.with_arguments(arguments);
    }
    let result = client.service.get_prompt(params).await?;
    assert_eq!(result.messages.len(), 1);
    assert_eq!(result.messages[0].role, Role::User);
    Ok(result.messages[0].content.as_text().unwrap().text.clone())
}

async fn complete(client: &Client, reference: Reference, argument: &str, typed: &str) -> Vec<String> {
    let params = CompleteRequestParams::new(reference, ArgumentInfo::new(argument, typed));
    client.service.complete(params).await.unwrap().completion.values
}

#[tokio::test]
async fn prompts_are_built_from_the_workspaces_state_and_their_arguments_complete() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let info = client.service.peer_info().unwrap();
    assert!(info.capabilities.prompts.is_some() && info.capabilities.completions.is_some());
    let names: Vec<String> = client.service.list_all_prompts().await.unwrap().into_iter().map(|p| p.name).collect();
    assert_eq!(names, ["review_changes", "plan", "recall"]);

    // review_changes: the session's diff.
    client.ok(op("create_file", json!({"path": "notes/prompt-marker.txt", "content": "the marker line\n"}))).await;
    let review = prompt(&client, "review_changes", json!({})).await.unwrap();
    assert!(review.contains("notes/prompt-marker.txt") && review.contains("+the marker line"), "{review}");
    let elsewhere = prompt(&client, "review_changes", json!({"path": "src"})).await.unwrap();
    assert!(!elsewhere.contains("prompt-marker"), "only changes under `src`: {elsewhere}");

    // plan: the task and what the list holds now.
    let todos = json!({"list": "release", "todos": [{"title": "Tag the release", "status": "not_started"}]});
    assert!(!client.todo("write", todos).await.is_error);
    let plan = prompt(&client, "plan", json!({"task": "Ship version 2", "list": "release"})).await.unwrap();
    assert!(
        plan.contains("Ship version 2") && plan.contains("Tag the release") && plan.contains("`release`"),
        "{plan}"
    );
    let missing = prompt(&client, "plan", json!({})).await.unwrap_err().to_string();
    assert!(missing.contains("needs the argument `task`"), "{missing}");

    // recall: the memories found for the topic, in both scopes.
    let memory = json!({"content": "Deploys go through scripts/deploy.sh with VAULT_ADDR set", "title": "Deploy how-to",
        "tags": ["deployment"], "collection": "ops"});
    assert!(!client.memory("store", memory).await.is_error);
    let recall = prompt(&client, "recall", json!({"topic": "deploy script"})).await.unwrap();
    assert!(recall.contains("VAULT_ADDR") && recall.contains("### global"), "{recall}");

    let unknown = prompt(&client, "nope", json!({})).await.unwrap_err().to_string();
    assert!(unknown.contains("no prompt `nope`") && unknown.contains("`recall`"), "{unknown}");

    // Completions: todo lists, memory collections and topics, by what was typed.
    let plan_ref = Reference::Prompt(PromptReference::new("plan"));
    assert_eq!(complete(&client, plan_ref.clone(), "list", "").await, ["default", "release"]);
    assert_eq!(complete(&client, plan_ref, "list", "RE").await, ["release"]);
    let lists = Reference::Resource(ResourceTemplateReference::new("todo://{list}"));
    assert_eq!(complete(&client, lists, "list", "d").await, ["default"]);
    let collections = Reference::Resource(ResourceTemplateReference::new("memory://{collection}"));
    assert_eq!(complete(&client, collections, "collection", "").await, ["ops"]);
    let recall_ref = Reference::Prompt(PromptReference::new("recall"));
    assert_eq!(complete(&client, recall_ref.clone(), "topic", "dep").await, ["Deploy how-to", "deployment"]);
    assert!(complete(&client, recall_ref, "nothing", "").await.is_empty(), "an argument with no values");
    client.close().await;
}

/// The Skills extension: one skill whose SKILL.md teaches the toolbelt, listed, fetched and
/// read as a resource, its digest matching what is read.
#[tokio::test]
async fn the_toolbelt_skill_is_served_with_its_digest() {
    use rmcp::model::{GetSkillRequestParams, ReadResourceRequestParams, ResourceContents, SkillResources};
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let skills = client.service.list_skills(None).await.unwrap().skills;
    assert_eq!(skills.len(), 1);
    assert_eq!((skills[0].name(), skills[0].uri.as_str()), ("toolbelt", "skill://toolbelt/SKILL.md"));
    let got = client.service.get_skill(GetSkillRequestParams::new("skill://toolbelt/SKILL.md")).await.unwrap();
    let read = client.service.read_resource(ReadResourceRequestParams::new("skill://toolbelt/SKILL.md")).await.unwrap();
    let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else { panic!("text: {read:?}") };
    assert!(text.starts_with("---\nname: toolbelt\n") && text.contains("`undo`"), "{text}");
    let SkillResources::Files(files) = &got.skill.resources else { panic!("files") };
    files[0].verify(text.as_bytes()).unwrap();
    let missing = client.service.get_skill(GetSkillRequestParams::new("skill://other/SKILL.md")).await.unwrap_err();
    assert!(missing.to_string().contains("this server serves `skill://toolbelt/SKILL.md`"), "{missing}");
    client.close().await;
}
