//! Ablations: which of the S, R, V sections to keep.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::model::{RuntimeInfo, Section, Variable};

/// The sections kept. Written as the sections removed: `-S`, `-R-V`, `-S-R-V`; `full` keeps all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Sections {
    pub s: bool,
    pub r: bool,
    pub v: bool,
}

impl Sections {
    pub const ALL: Sections = Sections {
        s: true,
        r: true,
        v: true,
    };
    pub const NONE: Sections = Sections {
        s: false,
        r: false,
        v: false,
    };

    pub fn keeps(self, section: Section) -> bool {
        match section {
            Section::S => self.s,
            Section::R => self.r,
            Section::V => self.v,
        }
    }

    pub fn without(mut self, section: Section) -> Sections {
        match section {
            Section::S => self.s = false,
            Section::R => self.r = false,
            Section::V => self.v = false,
        }
        self
    }
}

impl Default for Sections {
    fn default() -> Self {
        Sections::ALL
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid sections {0:?}: expected `full` or removals like `-S`, `-R-V`, `-S-R-V`")]
pub struct ParseSectionsError(String);

impl FromStr for Sections {
    type Err = ParseSectionsError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || ParseSectionsError(text.to_owned());
        let compact: String = text
            .chars()
            .filter(|c| !c.is_whitespace() && *c != ',')
            .collect();
        if compact.is_empty() || compact.eq_ignore_ascii_case("full") {
            return Ok(Sections::ALL);
        }
        let mut sections = Sections::ALL;
        let mut chars = compact.chars();
        while let Some(dash) = chars.next() {
            if dash != '-' {
                return Err(invalid());
            }
            let section = match chars.next().map(|c| c.to_ascii_uppercase()) {
                Some('S') => Section::S,
                Some('R') => Section::R,
                Some('V') => Section::V,
                _ => return Err(invalid()),
            };
            if !sections.keeps(section) {
                return Err(invalid());
            }
            sections = sections.without(section);
        }
        Ok(sections)
    }
}

impl fmt::Display for Sections {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Sections::ALL {
            return f.write_str("full");
        }
        for section in Section::ALL {
            if !self.keeps(section) {
                write!(f, "-{}", section.letter())?;
            }
        }
        Ok(())
    }
}

impl TryFrom<String> for Sections {
    type Error = ParseSectionsError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

impl From<Sections> for String {
    fn from(sections: Sections) -> String {
        sections.to_string()
    }
}

impl Variable {
    /// The same variable with the removed sections emptied; type, kind, origin and error stay.
    pub fn filtered(&self, sections: Sections) -> Variable {
        let mut variable = self.clone();
        for section in Section::ALL {
            if !sections.keeps(section) {
                variable.section_mut(section).clear();
            }
        }
        if !sections.v {
            variable.sampled = false;
        }
        variable
    }
}

impl RuntimeInfo {
    /// The same information with only the kept sections (`-S`, `-R`, `-V` ablations).
    pub fn filtered(&self, sections: Sections) -> RuntimeInfo {
        RuntimeInfo {
            variables: self
                .variables
                .iter()
                .map(|(expression, variable)| (expression.clone(), variable.filtered(sections)))
                .collect(),
            missing: self.missing.clone(),
            libraries: self.libraries.clone(),
            registries: self.registries.clone(),
            cost: self.cost,
        }
    }
}
