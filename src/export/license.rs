//! A `metadata.json` license as an SBOM states it.
//!
//! Kernel-builder writes the Hub's license identifiers (`apache-2.0`,
//! `mit`, `bsd-3-clause`), which are SPDX license identifiers in lower case
//! for the common licenses and free names (`other`, `llama2`) otherwise. SPDX
//! identifiers match without regard to case (SPDX 2.3 annex D), so a Hub
//! name is written as the SPDX list spells it when the list (of the `spdx`
//! crate) has it, and as a plain name otherwise.

/// What a license name is, for the formats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum License {
    /// An identifier of the SPDX license list, as the list spells it.
    Spdx(&'static str),
    /// A name that is no SPDX identifier, as written.
    Name(String),
}

impl License {
    /// Reads a `metadata.json` `license` value.
    pub fn parse(text: &str) -> License {
        let text = text.trim();
        if text.ends_with('+') {
            return License::Name(text.to_owned());
        }
        match spdx::identifiers::LICENSES
            .iter()
            .find(|(id, _, _)| id.eq_ignore_ascii_case(text))
        {
            Some((id, _, _)) => License::Spdx(id),
            None => License::Name(text.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_names_become_spdx_identifiers_where_the_list_has_them() {
        assert_eq!(License::parse("apache-2.0"), License::Spdx("Apache-2.0"));
        assert_eq!(License::parse("MIT"), License::Spdx("MIT"));
        assert_eq!(
            License::parse("bsd-3-clause"),
            License::Spdx("BSD-3-Clause")
        );
        assert_eq!(License::parse("llama2"), License::Name("llama2".into()));
        assert_eq!(License::parse("other"), License::Name("other".into()));
        assert_eq!(License::parse("MIT+"), License::Name("MIT+".into()));
    }
}
