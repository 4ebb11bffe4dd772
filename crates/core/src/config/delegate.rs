//! `[delegate]`: the model a `delegate` call's sub-agent uses when the client offers none
//! through sampling. The same provider settings as `toolbelt-mcp agent`; the key is read from
//! the environment only (the file names the variable, never the key).

use serde::Deserialize;

use crate::error::ConfigError;

/// Most turns a sub-agent takes unless the call asks for fewer.
pub const DEFAULT_MAX_TURNS: u32 = 30;
/// The most turns `max_turns` may allow.
const TURNS_LIMIT: u32 = 500;
/// How deep delegation may nest: 1 lets the caller delegate and no sub-agent delegate again.
pub const DEFAULT_MAX_DEPTH: u32 = 1;
/// The deepest nesting `max_depth` may allow.
const DEPTH_LIMIT: u32 = 4;

/// The wire format of the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DelegateProvider {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI-compatible Chat Completions.
    Openai,
}

/// The `[delegate]` table as the file holds it.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DelegateTable {
    /// `anthropic` or `openai`.
    pub provider: Option<DelegateProvider>,
    /// The model name (required for `openai`; `anthropic` has a default).
    pub model: Option<String>,
    /// The API's base URL (a local OpenAI-compatible server, a gateway).
    pub base_url: Option<String>,
    /// The environment variable holding the key (default `ANTHROPIC_API_KEY` or `OPENAI_API_KEY`).
    pub api_key_env: Option<String>,
    /// Most model turns per delegation (a call may ask for fewer).
    pub max_turns: Option<u32>,
    /// How deep delegation may nest (1: sub-agents cannot delegate).
    pub max_depth: Option<u32>,
}

/// The resolved `[delegate]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delegate {
    /// The wire format.
    pub provider: DelegateProvider,
    /// The model, when the file named one.
    pub model: Option<String>,
    /// The base URL, when the file named one.
    pub base_url: Option<String>,
    /// The variable the key is read from.
    pub api_key_env: String,
    /// Most model turns per delegation.
    pub max_turns: u32,
    /// How deep delegation may nest.
    pub max_depth: u32,
}

impl DelegateTable {
    /// Checks the table and fills in the defaults.
    pub fn resolve(self) -> Result<Delegate, ConfigError> {
        let provider = self.provider.ok_or(ConfigError::OutOfRange {
            key: "delegate.provider",
            value: "(none)".into(),
            expected: "`anthropic` or `openai`",
        })?;
        if provider == DelegateProvider::Openai && self.model.is_none() {
            return Err(ConfigError::OutOfRange {
                key: "delegate.model",
                value: "(none)".into(),
                expected: "a model name: the `openai` provider has no default model",
            });
        }
        let max_turns = self.max_turns.unwrap_or(DEFAULT_MAX_TURNS);
        if !(1..=TURNS_LIMIT).contains(&max_turns) {
            return Err(ConfigError::OutOfRange {
                key: "delegate.max_turns",
                value: max_turns.to_string(),
                expected: "between 1 and 500",
            });
        }
        let max_depth = self.max_depth.unwrap_or(DEFAULT_MAX_DEPTH);
        if !(1..=DEPTH_LIMIT).contains(&max_depth) {
            return Err(ConfigError::OutOfRange {
                key: "delegate.max_depth",
                value: max_depth.to_string(),
                expected: "between 1 (sub-agents cannot delegate) and 4",
            });
        }
        let default_key = match provider {
            DelegateProvider::Anthropic => "ANTHROPIC_API_KEY",
            DelegateProvider::Openai => "OPENAI_API_KEY",
        };
        if let Some(name) = &self.api_key_env
            && (name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            return Err(ConfigError::OutOfRange {
                key: "delegate.api_key_env",
                value: format!("{name:?}"),
                expected: "the name of an environment variable (letters, digits, `_`), never the key itself",
            });
        }
        Ok(Delegate {
            provider,
            model: self.model,
            base_url: self.base_url,
            api_key_env: self.api_key_env.unwrap_or_else(|| default_key.to_string()),
            max_turns,
            max_depth,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> DelegateTable {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn defaults_fill_in_and_bad_values_are_named() {
        let anthropic = table("provider = \"anthropic\"").resolve().unwrap();
        assert_eq!(anthropic.api_key_env, "ANTHROPIC_API_KEY");
        assert_eq!((anthropic.max_turns, anthropic.max_depth), (DEFAULT_MAX_TURNS, DEFAULT_MAX_DEPTH));
        let err = table("provider = \"openai\"").resolve().unwrap_err().to_string();
        assert!(err.contains("delegate.model"), "{err}");
        let err = table("provider = \"openai\"\nmodel = \"m\"\nmax_depth = 9").resolve().unwrap_err().to_string();
        assert!(err.contains("delegate.max_depth"), "{err}");
        let err = table("provider = \"anthropic\"\napi_key_env = \"sk-ant-123\"").resolve().unwrap_err().to_string();
        assert!(err.contains("never the key itself"), "{err}");
        assert!(toml::from_str::<DelegateTable>("provider = \"anthropic\"\napi_key = \"x\"").is_err());
    }
}
