//! A todo list's words, the same on every engine: an item, its status and priority, what a
//! call asks to add or change, and what a read or a save returns.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An item's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Not begun yet.
    NotStarted,
    /// Being worked on now (at most one item at a time).
    InProgress,
    /// Done.
    Completed,
    /// Waiting on something outside the list (needs a `blocked_reason`).
    Blocked,
}

impl Status {
    /// The word stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotStarted => "not_started",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
            Self::Blocked => "blocked",
        }
    }

    pub(super) fn parse(word: &str) -> Self {
        match word {
            "in_progress" => Self::InProgress,
            "completed" => Self::Completed,
            "blocked" => Self::Blocked,
            _ => Self::NotStarted,
        }
    }
}

/// How much an item matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Can wait.
    Low,
    /// The default.
    #[default]
    Medium,
    /// Soon.
    High,
    /// Before anything else.
    Critical,
}

impl Priority {
    /// The word stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Critical => "critical",
        }
    }

    pub(super) fn parse(word: &str) -> Self {
        match word {
            "low" => Self::Low,
            "high" => Self::High,
            "critical" => Self::Critical,
            _ => Self::Medium,
        }
    }
}

/// One item of a list, as stored and returned.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Item {
    /// Its id, unique in the list.
    pub id: u32,
    /// What to do, in a few words.
    pub title: String,
    /// Details.
    pub description: Option<String>,
    /// `not_started`, `in_progress`, `completed` or `blocked`.
    pub status: Status,
    /// `low`, `medium`, `high` or `critical`.
    pub priority: Priority,
    /// Ids of the items that must be completed first.
    pub dependencies: Vec<u32>,
    /// What a `blocked` item waits for.
    pub blocked_reason: Option<String>,
    /// How far along it is, from 0 to 1.
    pub progress: Option<f64>,
}

/// An item as given to `write` or `add`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Draft {
    /// Default: next after the highest.
    pub id: Option<u32>,
    /// What to do.
    pub title: String,
    /// Details.
    pub description: Option<String>,
    /// Default `not_started`.
    pub status: Option<Status>,
    /// Default `medium`.
    pub priority: Option<Priority>,
    /// Ids to finish first.
    #[serde(default)]
    pub dependencies: Vec<u32>,
    /// What a `blocked` item waits for.
    pub blocked_reason: Option<String>,
    /// 0 to 1.
    pub progress: Option<f64>,
}

/// A change to one item, given to `update`: only the fields present change. The fields mean
/// what they do in [`Draft`]; they carry no docs of their own, which would repeat Draft's in
/// every `tools/list` (doc comments become schema descriptions).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Patch {
    /// The item.
    pub id: u32,
    pub status: Option<Status>,
    pub title: Option<String>,
    /// New details (`""` clears).
    pub description: Option<String>,
    pub priority: Option<Priority>,
    pub dependencies: Option<Vec<u32>>,
    pub blocked_reason: Option<String>,
    pub progress: Option<f64>,
}

/// A list as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct TodoList {
    /// Its name.
    pub name: String,
    /// Its items, in order.
    pub items: Vec<Item>,
    /// How many times it was saved (0: never).
    pub revision: i64,
    /// When it was last saved (ms since the epoch), if ever.
    pub updated_at: Option<i64>,
}

/// A list after a change: the list, what changed, and warnings that did not stop it.
#[derive(Debug, Clone)]
pub struct Saved {
    /// The list as now stored.
    pub list: TodoList,
    /// What the call changed, one line each.
    pub changes: Vec<String>,
    /// Things worth a look (e.g. an item in progress before its dependencies are done).
    pub warnings: Vec<String>,
}

/// One list of a workspace, for resource listings.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Its name.
    pub name: String,
    /// Items in it.
    pub total: i64,
    /// Completed items.
    pub completed: i64,
}
