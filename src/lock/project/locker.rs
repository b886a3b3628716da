//! The context of one lock run ([`Locker`]) and what both formats share:
//! the resolver of a repository type, the `model` API fallback, the trust rule.

use kernels_hub::{HubClient, HubError};
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

use crate::lock::profile::Profile;
use crate::lock::project::depends::MetadataCache;
use crate::lock::project::error::LockError;
use crate::lock::project::outcome::LockOptions;
use crate::lock::resolver::{ResolveError, Resolver};

/// One lock run: the client, the target profile and the options.
pub(super) struct Locker<'a> {
    pub(super) client: &'a HubClient,
    pub(super) profile: &'a Profile,
    pub(super) options: &'a LockOptions,
    pub(super) metadata: Option<MetadataCache>,
}

/// Whether an error is the `kernel` API's RepoNotFound.
fn is_kernel_repo_not_found(err: &ResolveError) -> bool {
    matches!(
        err,
        ResolveError::Hub(HubError::RepoNotFound { target, .. }) if target.repo_type == RepoType::Kernel
    )
}

impl Locker<'_> {
    pub(super) fn resolver(&self, repo_type: RepoType) -> Resolver {
        Resolver::new(self.client.clone(), repo_type)
            .exclude_bytecode(self.profile.exclude_bytecode)
            .cooldown(self.options.cooldown.clone())
            .reads_specifiers(
                self.profile.requirements != crate::lock::profile::RequirementSupport::IntegersOnly,
                !self.profile.transitive,
            )
    }

    /// After a failed resolution: when it is the `kernel` API's RepoNotFound and
    /// the `model` API knows the repository, `Ok(())` means retry as a model
    /// repository (allowed by the options); every other case is the error to report.
    pub(super) async fn model_fallback(
        &self,
        repo_id: &RepoId,
        err: ResolveError,
        warnings: &mut Vec<String>,
    ) -> Result<(), LockError> {
        if !is_kernel_repo_not_found(&err)
            || self
                .client
                .list_refs(RepoType::Model, repo_id)
                .await
                .is_err()
        {
            return Err(err.into());
        }
        if !self.options.allow_model_repos {
            return Err(LockError::ModelRepoOnly {
                repo_id: repo_id.clone(),
            });
        }
        warnings.push(format!(
            "`{repo_id}` is not a kernel repository; locked from the model API (--allow-model-repos). Runtimes ≥0.14 cannot load it"
        ));
        Ok(())
    }

    /// Whether a locked `commit` of `repo_id` may be kept under the release
    /// cooldown: always without one, for an exempt repository or a revision
    /// requirement; else when its commit date (the commits API) is at or
    /// before the cut-off. A failed request says no: resolving again reports it.
    pub(super) async fn cooldown_keeps(
        &self,
        repo_type: RepoType,
        repo_id: &RepoId,
        requirement: &crate::lock::requirement::Requirement,
        commit: &kernels_types::CommitId,
    ) -> bool {
        let Some(cooldown) = self
            .options
            .cooldown
            .as_ref()
            .filter(|c| c.applies_to(repo_id))
        else {
            return true;
        };
        if matches!(
            requirement,
            crate::lock::requirement::Requirement::Revision(_)
        ) {
            return true;
        }
        match self
            .client
            .list_commits_until(repo_type, repo_id, commit.as_str(), |_| true)
            .await
        {
            Ok(history) => history.first().is_some_and(|c| cooldown.admits(&c.date)),
            Err(_) => false,
        }
    }

    /// Whether locking `repo_id` needs its publisher's trust status.
    pub(super) fn needs_trust(&self, repo_id: &RepoId) -> bool {
        self.profile.check_trust && !self.options.trust.contains(repo_id)
    }
}
