//! The rules of a todo list, pure: how `write`, `add` and `update` derive the new items, and
//! the checks every saved list passes. Each error names the item and says what to send.

use std::collections::{BTreeMap, BTreeSet};

use crate::StoreError;
use crate::todo_list::{Draft, Item, Patch, Priority, Status};

/// Items a list may hold.
pub const MAX_ITEMS: usize = 200;
/// Characters a title may have.
const MAX_TITLE: usize = 200;
/// Characters a description or blocked reason may have.
const MAX_TEXT: usize = 4000;

/// The items a call derived, and what it changed.
#[derive(Debug)]
pub struct Applied {
    /// The new items, in order.
    pub items: Vec<Item>,
    /// One line per change.
    pub changes: Vec<String>,
}

fn rule(message: String) -> StoreError {
    StoreError::Rule(message)
}

/// `"title"` of an item, for messages.
fn label(item: &Item) -> String {
    format!("item {} (\"{}\")", item.id, item.title)
}

/// `write`: the drafts become the list; missing ids follow the highest id given or already
/// in the list, so an id never comes to mean another item.
pub fn replace(current: &[Item], drafts: Vec<Draft>) -> Result<Applied, StoreError> {
    let highest = current.iter().map(|i| i.id).max().unwrap_or(0);
    let items = from_drafts(drafts, highest, &[])?;
    let kept: BTreeSet<u32> = items.iter().map(|i| i.id).collect();
    let dropped = current.iter().filter(|i| !kept.contains(&i.id)).count();
    let mut changes = vec![format!("wrote {} items", items.len())];
    if dropped > 0 {
        changes.push(format!("dropped {dropped} earlier items"));
    }
    Ok(Applied { items, changes })
}

/// `add`: the drafts follow the current items; missing ids follow the highest id so far.
pub fn append(current: &[Item], drafts: Vec<Draft>) -> Result<Applied, StoreError> {
    if drafts.is_empty() {
        return Err(rule("`todos` is empty; give at least one item, e.g. `[{\"title\": \"Write tests\"}]`".into()));
    }
    let highest = current.iter().map(|i| i.id).max().unwrap_or(0);
    let added = from_drafts(drafts, highest, current)?;
    let ids: Vec<String> = added.iter().map(|i| i.id.to_string()).collect();
    let changes = vec![format!("added {} (ids {})", plural(added.len(), "item"), ids.join(", "))];
    let mut items = current.to_vec();
    items.extend(added);
    Ok(Applied { items, changes })
}

/// Drafts as items: ids checked for clashes with each other and with `existing`, missing
/// ones numbered after `after` and every given id.
fn from_drafts(drafts: Vec<Draft>, after: u32, existing: &[Item]) -> Result<Vec<Item>, StoreError> {
    let mut next = drafts.iter().filter_map(|d| d.id).max().unwrap_or(0).max(after) + 1;
    let mut seen = BTreeSet::new();
    let mut items = Vec::with_capacity(drafts.len());
    for draft in drafts {
        let id = match draft.id {
            Some(0) => return Err(rule(format!("item \"{}\" has id 0; ids are positive integers", draft.title))),
            Some(id) if existing.iter().any(|i| i.id == id) => {
                return Err(rule(format!(
                    "item {id} already exists; `update` changes it, or leave `id` out to get the next free id"
                )));
            }
            Some(id) => id,
            None => {
                next += 1;
                next - 1
            }
        };
        if !seen.insert(id) {
            return Err(rule(format!("id {id} is given to two items; give each item its own id, or leave `id` out")));
        }
        items.push(Item {
            id,
            title: draft.title.trim().to_string(),
            description: draft.description.filter(|d| !d.trim().is_empty()),
            status: draft.status.unwrap_or(Status::NotStarted),
            priority: draft.priority.unwrap_or(Priority::Medium),
            dependencies: draft.dependencies,
            blocked_reason: draft.blocked_reason.filter(|r| !r.trim().is_empty()),
            progress: draft.progress,
        });
    }
    Ok(items)
}

/// `update`: each patch changes the fields it gives of an existing item.
pub fn patch(current: &[Item], list: &str, patches: Vec<Patch>) -> Result<Applied, StoreError> {
    if patches.is_empty() {
        return Err(rule(
            "`updates` is empty; give at least one change, e.g. `[{\"id\": 1, \"status\": \"completed\"}]`".into(),
        ));
    }
    let mut items = current.to_vec();
    let mut changes = Vec::new();
    let mut seen = BTreeSet::new();
    for patch in patches {
        if !seen.insert(patch.id) {
            return Err(rule(format!(
                "item {} appears twice in `updates`; merge its changes into one entry",
                patch.id
            )));
        }
        let Some(item) = items.iter_mut().find(|i| i.id == patch.id) else {
            let ids: Vec<String> = current.iter().map(|i| i.id.to_string()).collect();
            let known = if ids.is_empty() { "it is empty".to_string() } else { format!("ids: {}", ids.join(", ")) };
            return Err(StoreError::NotFound(format!(
                "no item {} in list `{list}` ({known}); `add` creates new items",
                patch.id
            )));
        };
        changes.push(apply(item, patch));
    }
    Ok(Applied { items, changes })
}

/// Applies one patch, returning a line saying what changed.
fn apply(item: &mut Item, patch: Patch) -> String {
    let mut said = Vec::new();
    if let Some(status) = patch.status.filter(|s| *s != item.status) {
        said.push(format!("status {} → {}", item.status.as_str(), status.as_str()));
        item.status = status;
        if status != Status::Blocked && patch.blocked_reason.is_none() && item.blocked_reason.take().is_some() {
            said.push("blocked reason cleared".into());
        }
        if status == Status::Completed && item.progress.is_some_and(|p| p < 1.0) && patch.progress.is_none() {
            item.progress = Some(1.0);
        }
    }
    if let Some(title) = patch.title {
        said.push("title".into());
        item.title = title.trim().to_string();
    }
    if let Some(description) = patch.description {
        said.push(if description.trim().is_empty() { "description cleared" } else { "description" }.into());
        item.description = Some(description).filter(|d| !d.trim().is_empty());
    }
    if let Some(priority) = patch.priority {
        said.push(format!("priority {}", priority.as_str()));
        item.priority = priority;
    }
    if let Some(dependencies) = patch.dependencies {
        said.push(format!("dependencies {dependencies:?}"));
        item.dependencies = dependencies;
    }
    if let Some(reason) = patch.blocked_reason {
        said.push("blocked reason".into());
        item.blocked_reason = Some(reason).filter(|r| !r.trim().is_empty());
    }
    if let Some(progress) = patch.progress {
        said.push(format!("progress {}", percent(progress)));
        item.progress = Some(progress);
    }
    if said.is_empty() {
        format!("item {}: no change", item.id)
    } else {
        format!("item {}: {}", item.id, said.join(", "))
    }
}

/// Checks a list about to be saved; returns warnings that do not stop it. `before` is the
/// stored list; with `replacing`, none of its completed items may be missing.
pub fn check(items: &[Item], before: &[Item], replacing: bool) -> Result<Vec<String>, StoreError> {
    if items.len() > MAX_ITEMS {
        return Err(rule(format!(
            "the list would have {} items, over the limit of {MAX_ITEMS}; finish or split the plan (another `list` name)",
            items.len()
        )));
    }
    for item in items {
        check_item(item)?;
    }
    let in_progress: Vec<&Item> = items.iter().filter(|i| i.status == Status::InProgress).collect();
    if let [first, second, ..] = in_progress.as_slice() {
        return Err(rule(format!(
            "{} and {} are both `in_progress`; only one item may be in progress at a time: set the other to `not_started`, `completed` or `blocked`",
            label(first),
            label(second)
        )));
    }
    let by_id: BTreeMap<u32, &Item> = items.iter().map(|i| (i.id, i)).collect();
    for item in items {
        for dependency in &item.dependencies {
            if *dependency == item.id {
                return Err(rule(format!(
                    "{} depends on itself; remove {} from its `dependencies`",
                    label(item),
                    item.id
                )));
            }
            if !by_id.contains_key(dependency) {
                let ids: Vec<String> = by_id.keys().map(u32::to_string).collect();
                return Err(rule(format!(
                    "{} depends on item {dependency}, which is not in the list (ids: {}); fix its `dependencies`",
                    label(item),
                    ids.join(", ")
                )));
            }
        }
    }
    if let Some(cycle) = find_cycle(items) {
        let path: Vec<String> = cycle.iter().map(u32::to_string).collect();
        return Err(rule(format!(
            "the dependencies form a cycle: {} (each waits for the next); remove one of these dependencies",
            path.join(" → ")
        )));
    }
    let kept = |old: &Item| by_id.get(&old.id).is_some_and(|new| new.title == old.title);
    if replacing && let Some(dropped) = before.iter().find(|old| old.status == Status::Completed && !kept(old)) {
        return Err(rule(format!(
            "`write` would drop completed {}; completed items stay as the record of work done: include it in `todos` with its id and title (e.g. `{{\"id\": {}, \"title\": \"{}\", \"status\": \"completed\"}}`), or start a new plan under another `list` name",
            label(dropped),
            dropped.id,
            dropped.title.replace('"', "\\\"")
        )));
    }
    let mut warnings = Vec::new();
    for item in items.iter().filter(|i| matches!(i.status, Status::InProgress | Status::Completed)) {
        for dependency in item.dependencies.iter().filter_map(|d| by_id.get(d)) {
            if dependency.status != Status::Completed {
                warnings.push(format!(
                    "{} is `{}` but depends on {}, which is `{}`",
                    label(item),
                    item.status.as_str(),
                    label(dependency),
                    dependency.status.as_str()
                ));
            }
        }
    }
    Ok(warnings)
}

/// The rules of one item on its own.
fn check_item(item: &Item) -> Result<(), StoreError> {
    let title_chars = item.title.chars().count();
    if title_chars == 0 {
        return Err(rule(format!("item {} has an empty `title`; give it a short title saying what to do", item.id)));
    }
    if title_chars > MAX_TITLE || item.title.contains('\n') {
        return Err(rule(format!(
            "{} has a title of {title_chars} characters{}; keep titles to one line of at most {MAX_TITLE} and put details in `description`",
            label(item),
            if item.title.contains('\n') { " on several lines" } else { "" }
        )));
    }
    for (field, text) in [("description", &item.description), ("blocked_reason", &item.blocked_reason)] {
        if let Some(text) = text.as_ref().filter(|t| t.chars().count() > MAX_TEXT) {
            return Err(rule(format!(
                "{} has a `{field}` of {} characters, over {MAX_TEXT}; shorten it (long notes belong in `memory_operations`)",
                label(item),
                text.chars().count()
            )));
        }
    }
    match (item.status, &item.blocked_reason) {
        (Status::Blocked, None) => {
            return Err(rule(format!(
                "{} is `blocked` without a `blocked_reason`; say what it waits for (e.g. \"waiting for the API key\")",
                label(item)
            )));
        }
        (status, Some(_)) if status != Status::Blocked => {
            return Err(rule(format!(
                "{} has a `blocked_reason` but is `{}`; set `status` to `blocked`, or leave the reason out",
                label(item),
                status.as_str()
            )));
        }
        _ => {}
    }
    if let Some(progress) = item.progress
        && !(0.0..=1.0).contains(&progress)
    {
        return Err(rule(format!(
            "{} has `progress` {progress}; give a fraction from 0 to 1 (0.5 is half done)",
            label(item)
        )));
    }
    Ok(())
}

/// A dependency cycle, as ids from its first item back to it, if there is one.
fn find_cycle(items: &[Item]) -> Option<Vec<u32>> {
    let edges: BTreeMap<u32, &[u32]> = items.iter().map(|i| (i.id, i.dependencies.as_slice())).collect();
    // 0: unvisited, 1: on the current path, 2: done.
    let mut state: BTreeMap<u32, u8> = BTreeMap::new();
    let mut path = Vec::new();
    for &start in edges.keys() {
        if let Some(cycle) = visit(start, &edges, &mut state, &mut path) {
            return Some(cycle);
        }
    }
    None
}

fn visit(
    id: u32,
    edges: &BTreeMap<u32, &[u32]>,
    state: &mut BTreeMap<u32, u8>,
    path: &mut Vec<u32>,
) -> Option<Vec<u32>> {
    match state.get(&id) {
        Some(2) => return None,
        Some(1) => {
            let start = path.iter().position(|p| *p == id).unwrap_or(0);
            let mut cycle = path[start..].to_vec();
            cycle.push(id);
            return Some(cycle);
        }
        _ => {}
    }
    state.insert(id, 1);
    path.push(id);
    for &next in edges.get(&id).copied().unwrap_or_default() {
        if let Some(cycle) = visit(next, edges, state, path) {
            return Some(cycle);
        }
    }
    path.pop();
    state.insert(id, 2);
    None
}

/// `40%`.
pub fn percent(progress: f64) -> String {
    format!("{}%", (progress * 100.0).round())
}

/// `1 item`, `3 items`.
pub fn plural(count: usize, noun: &str) -> String {
    if count == 1 { format!("1 {noun}") } else { format!("{count} {noun}s") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft(title: &str) -> Draft {
        Draft {
            id: None,
            title: title.into(),
            description: None,
            status: None,
            priority: None,
            dependencies: Vec::new(),
            blocked_reason: None,
            progress: None,
        }
    }

    fn items(drafts: Vec<Draft>) -> Vec<Item> {
        replace(&[], drafts).unwrap().items
    }

    fn error(result: Result<Vec<String>, StoreError>) -> String {
        result.unwrap_err().to_string()
    }

    #[test]
    fn ids_are_assigned_after_the_highest() {
        let list = items(vec![Draft { id: Some(5), ..draft("a") }, draft("b")]);
        assert_eq!(list.iter().map(|i| i.id).collect::<Vec<_>>(), [5, 6]);
        let appended = append(&list, vec![draft("c"), draft("d")]).unwrap();
        assert_eq!(appended.items.iter().map(|i| i.id).collect::<Vec<_>>(), [5, 6, 7, 8]);
        assert_eq!(appended.changes, ["added 2 items (ids 7, 8)"]);
        let clash = append(&list, vec![Draft { id: Some(6), ..draft("x") }]).unwrap_err().to_string();
        assert!(clash.contains("item 6 already exists"), "{clash}");
        let twice = replace(&[], vec![Draft { id: Some(2), ..draft("x") }, Draft { id: Some(2), ..draft("y") }]);
        assert!(twice.unwrap_err().to_string().contains("id 2 is given to two items"));
    }

    #[test]
    fn one_item_in_progress() {
        let list = items(vec![
            Draft { status: Some(Status::InProgress), ..draft("a") },
            Draft { status: Some(Status::InProgress), ..draft("b") },
        ]);
        let message = error(check(&list, &[], true));
        assert!(message.contains("item 1 (\"a\") and item 2 (\"b\") are both `in_progress`"), "{message}");
    }

    #[test]
    fn blocked_needs_a_reason_and_only_blocked_has_one() {
        let list = items(vec![Draft { status: Some(Status::Blocked), ..draft("deploy") }]);
        assert!(error(check(&list, &[], true)).contains("`blocked` without a `blocked_reason`"));
        let list = items(vec![Draft { blocked_reason: Some("keys".into()), ..draft("deploy") }]);
        assert!(error(check(&list, &[], true)).contains("has a `blocked_reason` but is `not_started`"));
    }

    #[test]
    fn progress_titles_and_size_are_bounded() {
        let list = items(vec![Draft { progress: Some(1.5), ..draft("a") }]);
        assert!(error(check(&list, &[], true)).contains("`progress` 1.5"));
        let list = items(vec![draft("  ")]);
        assert!(error(check(&list, &[], true)).contains("empty `title`"));
        let list = items(vec![draft(&"t".repeat(201))]);
        assert!(error(check(&list, &[], true)).contains("201 characters"));
        let list = items((0..=MAX_ITEMS).map(|_| draft("x")).collect());
        assert!(error(check(&list, &[], true)).contains("over the limit of 200"));
    }

    #[test]
    fn dependencies_exist_and_form_no_cycle() {
        let list = items(vec![Draft { dependencies: vec![9], ..draft("a") }]);
        assert!(error(check(&list, &[], true)).contains("depends on item 9, which is not in the list (ids: 1)"));
        let list = items(vec![Draft { dependencies: vec![1], ..draft("a") }]);
        assert!(error(check(&list, &[], true)).contains("depends on itself"));
        let list = items(vec![
            Draft { dependencies: vec![3], ..draft("a") },
            Draft { dependencies: vec![1], ..draft("b") },
            Draft { dependencies: vec![2], ..draft("c") },
        ]);
        assert!(error(check(&list, &[], true)).contains("cycle: 1 → 3 → 2 → 1"));
    }

    #[test]
    fn completed_items_survive_write() {
        let before = items(vec![Draft { status: Some(Status::Completed), ..draft("done") }, draft("next")]);
        let after = items(vec![Draft { id: Some(2), ..draft("next") }]);
        let message = error(check(&after, &before, true));
        assert!(message.contains("would drop completed item 1 (\"done\")"), "{message}");
        assert!(check(&after, &before, false).is_ok());
    }

    #[test]
    fn patches_change_only_what_they_give() {
        let before = items(vec![
            Draft { status: Some(Status::Blocked), blocked_reason: Some("keys".into()), ..draft("a") },
            Draft { progress: Some(0.4), ..draft("b") },
        ]);
        let patch_of = |id, status| Patch {
            id,
            status,
            title: None,
            description: None,
            priority: None,
            dependencies: None,
            blocked_reason: None,
            progress: None,
        };
        let applied = patch(
            &before,
            "default",
            vec![patch_of(1, Some(Status::InProgress)), patch_of(2, Some(Status::Completed))],
        )
        .unwrap();
        assert_eq!(applied.items[0].blocked_reason, None);
        assert_eq!(applied.items[1].progress, Some(1.0));
        assert_eq!(applied.changes[0], "item 1: status blocked → in_progress, blocked reason cleared");
        let unknown = patch(&before, "default", vec![patch_of(7, None)]).unwrap_err().to_string();
        assert_eq!(unknown, "no item 7 in list `default` (ids: 1, 2); `add` creates new items");
    }

    #[test]
    fn warnings_for_work_ahead_of_dependencies() {
        let list =
            items(vec![draft("a"), Draft { status: Some(Status::InProgress), dependencies: vec![1], ..draft("b") }]);
        let warnings = check(&list, &[], true).unwrap();
        assert_eq!(warnings, ["item 2 (\"b\") is `in_progress` but depends on item 1 (\"a\"), which is `not_started`"]);
    }
}
