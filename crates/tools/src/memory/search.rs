//! `search`: memories ranked by relevance (BM25), as short highlighted snippets.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::memory::{Scope, titled};
use crate::{Call, Effect, EffectKind, Operation, Reply};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_store::memory;
use toolbelt_mcp_store::search::{MAX_LIMIT, Mode, Query, RANK_WINDOW};
use toolbelt_mcp_store::timestamp;

/// The `search` operation.
pub(super) struct Search;

/// Arguments of `search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// Words (all, else any) or FTS5: `"phrase"`, `pre*`, `a OR b`, `NEAR(a b)`, `title:x`.
    pub query: String,
    /// Default `default` (search: every one).
    #[schemars(extend("default" = "default"))]
    pub collection: Option<String>,
    /// Tags, lowercased. search: all must match; update: replaces.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Per page (default 10, max 100).
    #[schemars(extend("default" = 10))]
    pub limit: Option<u32>,
    /// Results to skip (`next_offset`).
    #[serde(default)]
    pub offset: u32,
    /// Default `workspace`.
    #[serde(default)]
    pub scope: Scope,
}

/// Structured result of `search`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Output {
    /// The scope searched.
    pub scope: Scope,
    /// How the query was read: `fts` (FTS5 syntax), `plain` (not valid FTS5: as words, all required) or `any_word` (no memory had every word: any of them).
    pub query_mode: String,
    /// Matches in all (see `capped`).
    pub total: i64,
    /// More matched than `total`: only the newest `total` were ranked. Narrow the query to reach older ones.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub capped: bool,
    /// This page, best first.
    pub results: Vec<Hit>,
    /// The `offset` of the next page, if there are more matches.
    pub next_offset: Option<u32>,
}

/// One match.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Hit {
    /// The memory's id, for `get`, `update` and `delete`.
    pub id: i64,
    /// Its collection.
    pub collection: String,
    /// Its title.
    pub title: Option<String>,
    /// Its tags.
    pub tags: Vec<String>,
    /// The best-matching part of its content, matches in `**bold**`.
    pub snippet: String,
    /// Relevance (higher is better).
    pub score: f64,
    /// Characters of content (`get` returns all of it).
    pub chars: i64,
    /// When it last changed (UTC).
    pub updated: String,
}

impl Operation for Search {
    const NAME: &'static str = "search";
    const DESCRIPTION: &'static str = "Ranked search with snippets. Words or FTS5 syntax over titles, content and tags; paged by `limit`/`offset`; `get` an id for the whole text.";
    const KIND: EffectKind = EffectKind::Read;
    const ON_WORKSPACE: bool = false;
    type Args = Args;
    type Output = Output;
    const LEAN: crate::Lean = super::MEMORY_LEAN;

    fn effect(_args: &Args) -> Effect {
        Effect::Read(Vec::new())
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let limit = args.limit.unwrap_or(10);
        if limit == 0 || limit > MAX_LIMIT {
            return Err(ToolError::BadValue {
                field: "limit",
                value: limit.to_string(),
                expected: format!("1 to {MAX_LIMIT} results per page"),
            });
        }
        if let Some(collection) = &args.collection {
            toolbelt_mcp_store::check_name("collection", collection)?;
        }
        let query = Query {
            text: args.query.clone(),
            collection: args.collection,
            tags: memory::tags(&args.tags)?,
            limit,
            offset: args.offset,
        };
        let workspace = args.scope.key(&call.context);
        let found = call.context.store.memory_search(&workspace, &query).await?;
        let shown = found.hits.len() as u32;
        let next_offset = (i64::from(args.offset + shown) < found.total).then_some(args.offset + shown);
        let matched = if found.capped {
            format!("more than {RANK_WINDOW} memories match `{}`, the newest {} ranked", args.query, found.total)
        } else {
            format!("{} {} match `{}`", found.total, if found.total == 1 { "memory" } else { "memories" }, args.query)
        };
        let mut text = match (found.total, shown) {
            (0, _) => format!("no memory matches `{}` ({} scope)", args.query, args.scope.as_str()),
            (_, 0) => format!("{matched}; none at offset {}", args.offset),
            _ => format!("{matched} ({} scope); {}–{}:", args.scope.as_str(), args.offset + 1, args.offset + shown),
        };
        if found.capped {
            text.push_str("\n(older ones are not ranked: add words, a `collection` or `tags` to narrow it)");
        }
        match found.mode {
            Mode::Fts => {}
            Mode::Plain => text.push_str("\n(the query is not valid FTS5 syntax, so its words were searched for)"),
            Mode::AnyWord => text.push_str("\n(no memory has every word, so these have some of them)"),
        }
        let mut results = Vec::with_capacity(found.hits.len());
        for hit in found.hits {
            let tags = if hit.tags.is_empty() { String::new() } else { format!(" [{}]", hit.tags.join(", ")) };
            text.push_str(&format!(
                "\n\n#{} in `{}`{}{tags} (score {:.2}, {} chars)\n{}",
                hit.id,
                hit.collection,
                titled(&hit.title),
                hit.score,
                hit.chars,
                hit.snippet
            ));
            results.push(Hit {
                id: hit.id,
                collection: hit.collection,
                title: Some(hit.title).filter(|t| !t.is_empty()),
                tags: hit.tags,
                snippet: hit.snippet,
                score: hit.score,
                chars: hit.chars,
                updated: timestamp(hit.updated_at),
            });
        }
        if let Some(next) = next_offset {
            text.push_str(&format!("\n\nmore: `offset: {next}` for the next page"));
        }
        let data = Output {
            scope: args.scope,
            query_mode: found.mode.as_str().into(),
            total: found.total,
            capped: found.capped,
            results,
            next_offset,
        };
        Ok(Reply::new(text, data))
    }
}
