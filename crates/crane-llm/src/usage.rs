//! Accounting: tokens (the provider's usage, or a tiktoken estimate marked as such), and cost
//! from a small price table that users can edit.

use std::collections::BTreeMap;
use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

use crate::model::{ModelSpec, Provider};

/// Tokens of one call or a sum of calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// True when any part is a tiktoken estimate rather than the provider's own count.
    pub estimated: bool,
}

impl Usage {
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Tokens of a call whose provider reported no usage, estimated with the o200k encoding.
    pub fn estimate(input: &str, output: &str) -> Usage {
        Usage {
            input_tokens: estimate_tokens(input),
            output_tokens: estimate_tokens(output),
            estimated: true,
        }
    }
}

impl Add for Usage {
    type Output = Usage;

    fn add(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens + other.input_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
            estimated: self.estimated || other.estimated,
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        *self = *self + other;
    }
}

/// Token count of `text` in the o200k encoding (GPT-4o/GPT-5); an approximation for other
/// model families.
pub fn estimate_tokens(text: &str) -> u64 {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len() as u64
}

/// US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
}

impl Price {
    pub const FREE: Price = Price {
        input: 0.0,
        output: 0.0,
    };

    /// Cost in US dollars of `usage` at this price.
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.input_tokens as f64 * self.input + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

/// Prices keyed by `provider:model`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriceTable {
    prices: BTreeMap<String, Price>,
}

#[derive(Debug, thiserror::Error)]
#[error("price table: {0}")]
pub struct PriceTableError(#[from] toml::de::Error);

const BUILT_IN_PRICES: &str = include_str!("prices.toml");

impl Default for PriceTable {
    /// The built-in table (`src/prices.toml`).
    fn default() -> Self {
        PriceTable::from_toml(BUILT_IN_PRICES).expect("the built-in price table is valid TOML")
    }
}

impl PriceTable {
    pub fn empty() -> PriceTable {
        PriceTable {
            prices: BTreeMap::new(),
        }
    }

    /// Reads a table written as `[prices."provider:model"] input = .. output = ..`.
    pub fn from_toml(text: &str) -> Result<PriceTable, PriceTableError> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            prices: BTreeMap<String, Price>,
        }
        let file: File = toml::from_str(text)?;
        Ok(PriceTable {
            prices: file.prices,
        })
    }

    /// Sets or replaces the price of `key` (`provider:model`).
    pub fn set(&mut self, key: impl Into<String>, price: Price) {
        self.prices.insert(key.into(), price);
    }

    /// Adds `overrides` on top of this table.
    pub fn with_overrides(mut self, overrides: &BTreeMap<String, Price>) -> PriceTable {
        for (key, price) in overrides {
            self.prices.insert(key.clone(), *price);
        }
        self
    }

    pub fn entries(&self) -> impl Iterator<Item = (&str, &Price)> {
        self.prices.iter().map(|(key, price)| (key.as_str(), price))
    }

    /// The price of a model: free for replay and local Ollama models; otherwise the longest
    /// key of the same provider whose model is the name or a prefix of it ending at `-`, `:`,
    /// `@` or `.`; `None` when the table does not know the model.
    pub fn price_of(&self, model: &ModelSpec) -> Option<Price> {
        let remote = match model {
            ModelSpec::Replay(_) => return Some(Price::FREE),
            ModelSpec::Remote(remote) if remote.provider == Provider::Ollama => {
                return Some(Price::FREE)
            }
            ModelSpec::Remote(remote) => remote,
        };
        let prefix = format!("{}:", remote.provider);
        self.prices
            .iter()
            .filter_map(|(key, price)| {
                let key_model = key.strip_prefix(&prefix)?;
                let rest = remote.name.strip_prefix(key_model)?;
                let at_boundary = rest.is_empty() || rest.starts_with(['-', ':', '@', '.']);
                at_boundary.then_some((key_model.len(), *price))
            })
            .max_by_key(|(len, _)| *len)
            .map(|(_, price)| price)
    }

    /// Cost in US dollars of `usage` with `model`, when its price is known.
    pub fn cost(&self, model: &ModelSpec, usage: &Usage) -> Option<f64> {
        self.price_of(model).map(|price| price.cost(usage))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> ModelSpec {
        ModelSpec::parse(s).unwrap()
    }

    #[test]
    fn longest_matching_key_prices_a_model() {
        let table = PriceTable::default();
        assert_eq!(table.price_of(&spec("openai:gpt-5")).unwrap().input, 1.25);
        assert_eq!(
            table
                .price_of(&spec("openai:gpt-5-2025-08-07"))
                .unwrap()
                .input,
            1.25
        );
        assert_eq!(
            table.price_of(&spec("openai:gpt-5-mini")).unwrap().input,
            0.25
        );
        assert_eq!(
            table
                .price_of(&spec("gemini:gemini-2.5-flash-lite"))
                .unwrap()
                .input,
            0.10
        );
        assert_eq!(table.price_of(&spec("openai:gpt-50")), None);
        assert_eq!(
            table.price_of(&spec("openai-compat:gpt-5@http://h/v1")),
            None
        );
        assert_eq!(
            table.price_of(&spec("ollama:qwen2.5-coder:32b")),
            Some(Price::FREE)
        );
        assert_eq!(table.price_of(&spec("replay:gpt_5")), Some(Price::FREE));
    }

    #[test]
    fn overrides_replace_and_extend_the_table() {
        let mut overrides = BTreeMap::new();
        overrides.insert(
            "openai-compat:my-model".to_string(),
            Price {
                input: 1.0,
                output: 2.0,
            },
        );
        let table = PriceTable::default().with_overrides(&overrides);
        let usage = Usage {
            input_tokens: 2_000_000,
            output_tokens: 500_000,
            estimated: false,
        };
        let cost = table
            .cost(
                &spec("openai-compat:my-model@http://127.0.0.1:1/v1"),
                &usage,
            )
            .unwrap();
        assert!((cost - 3.0).abs() < 1e-9);
    }

    #[test]
    fn estimates_are_marked_and_add_up() {
        let estimate = Usage::estimate("Hello world, this is a prompt.", "{\"detection\": true}");
        assert!(estimate.estimated);
        assert!(estimate.input_tokens >= 5 && estimate.input_tokens <= 12);
        let counted = Usage {
            input_tokens: 10,
            output_tokens: 5,
            estimated: false,
        };
        let sum = counted + estimate;
        assert!(sum.estimated);
        assert_eq!(sum.input_tokens, 10 + estimate.input_tokens);
    }
}
