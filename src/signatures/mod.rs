//! Signatures of kernel variants under a project's trust settings
//! ([`crate::lock::trust_settings`]): the verdict of one outcome
//! ([`Verdict`]), the variants of locked kernels in the cache ([`cached`],
//! `kernels verify --signatures`), a kernel version fetched from the Hub
//! ([`remote`], `kernels verify-signature`) and the per-variant audit
//! ([`audit`], `kernels audit`).
//!
//! Outcomes are those of `kernels_trust::verify_variant`, named as reference
//! 0.17.2 names them.

pub mod audit;
pub mod cached;
pub mod remote;

use kernels_trust::Outcome;

/// What the trust settings make of a variant's outcome: an invalid
/// signature, metadata or digest is always refused; an unsigned variant
/// (`SignatureBundleMissing`) is accepted with a line naming it, and refused
/// with `require-signed` (issue 22's default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Signed by an accepted signer, every file matching the digest.
    Accepted,
    /// Unsigned, accepted because signatures are not required.
    Unsigned,
    /// Refused by the policy.
    Refused,
}

impl Verdict {
    /// The verdict on `outcome`; `require_signed` refuses unsigned variants.
    pub fn of(outcome: &Outcome, require_signed: bool) -> Verdict {
        match outcome {
            Outcome::Success(_) => Verdict::Accepted,
            Outcome::SignatureBundleMissing if !require_signed => Verdict::Unsigned,
            _ => Verdict::Refused,
        }
    }

    /// `accepted`, `unsigned` or `refused` (text and JSON).
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Accepted => "accepted",
            Verdict::Unsigned => "unsigned",
            Verdict::Refused => "refused",
        }
    }
}

/// What an outcome carries besides its name, for one line of text: the
/// signer of a success, the reason of a failure, the digest violations
/// joined with `; `; the signer as `signed by WORKFLOW (workflow commit C,
/// Rekor log index N)`. `None` for the outcomes that carry nothing.
pub fn outcome_detail(outcome: &Outcome) -> Option<String> {
    match outcome {
        Outcome::Success(identity) => {
            let mut about = Vec::new();
            if let Some(commit) = &identity.workflow_commit {
                about.push(format!("workflow commit {commit}"));
            }
            if let Some(index) = identity.log_index {
                about.push(format!("Rekor log index {index}"));
            }
            let workflow = identity.workflow.as_deref().unwrap_or("(no workflow)");
            Some(if about.is_empty() {
                format!("signed by {workflow}")
            } else {
                format!("signed by {workflow} ({})", about.join(", "))
            })
        }
        Outcome::SignatureBundleInvalid(reason)
        | Outcome::MetadataInvalid(reason)
        | Outcome::SignatureVerificationFailure(reason) => Some(reason.clone()),
        Outcome::DigestVerificationFailure(problems) => Some(
            problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        ),
        Outcome::SignatureBundleMissing | Outcome::MetadataMissing | Outcome::DigestMissing => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unsigned_variants_depend_on_require_signed() {
        let missing = Outcome::SignatureBundleMissing;
        assert_eq!(Verdict::of(&missing, false), Verdict::Unsigned);
        assert_eq!(Verdict::of(&missing, true), Verdict::Refused);
        for outcome in [
            Outcome::DigestMissing,
            Outcome::MetadataMissing,
            Outcome::SignatureVerificationFailure("x".into()),
        ] {
            assert_eq!(Verdict::of(&outcome, false), Verdict::Refused, "{outcome}");
        }
    }
}
