//! Repositories the `model` API no longer serves, read through the `kernel`
//! API instead.
//!
//! The Hub removes model-type kernel repositories from 2026-09-13
//! (huggingface/kernels#757); the same repositories stay available as
//! `kernel` repositories. Runtimes 0.13 and older only know the `model` API
//! and the `models--` cache folders, so a project that targets them would
//! stop locking and downloading. A client built with
//! [`HubClient::with_kernel_fallback`] asks the `kernel` API again whenever
//! the `model` API answers [`HubError::RepoNotFound`], remembers each
//! repository that answered there (later requests, file downloads included,
//! go straight to the `kernel` API), and lists them through
//! [`HubClient::served_as_kernel`] so that the caller can say so once. Only
//! the API path changes: where the files land in the cache is the caller's
//! choice (the `models--` layout the old runtime reads).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use kernels_types::RepoId;
use kernels_types::wire::RepoType;

use crate::client::HubClient;
use crate::error::HubError;

/// The repositories found only through the `kernel` API (shared by clones).
#[derive(Debug, Clone, Default)]
pub(crate) struct KernelFallback {
    served: Arc<Mutex<BTreeSet<RepoId>>>,
}

impl KernelFallback {
    fn contains(&self, repo_id: &RepoId) -> bool {
        self.served.lock().is_ok_and(|s| s.contains(repo_id))
    }

    fn insert(&self, repo_id: &RepoId) {
        if let Ok(mut served) = self.served.lock() {
            served.insert(repo_id.clone());
        }
    }
}

impl HubClient {
    /// This client, asking the `kernel` API for every `model` repository the
    /// `model` API does not know; see the module docs.
    pub fn with_kernel_fallback(mut self) -> Self {
        self.kernel_fallback = Some(KernelFallback::default());
        self
    }

    /// The repositories a `model` request was answered for through the
    /// `kernel` API, in name order (empty without
    /// [`HubClient::with_kernel_fallback`]).
    pub fn served_as_kernel(&self) -> Vec<RepoId> {
        self.kernel_fallback
            .as_ref()
            .and_then(|f| f.served.lock().ok().map(|s| s.iter().cloned().collect()))
            .unwrap_or_default()
    }

    /// The repository type to ask for `repo_id`: `kernel` for a `model`
    /// repository already found only there, else `repo_type`.
    pub(crate) fn api_type(&self, repo_type: RepoType, repo_id: &RepoId) -> RepoType {
        match &self.kernel_fallback {
            Some(fallback) if repo_type == RepoType::Model && fallback.contains(repo_id) => {
                RepoType::Kernel
            }
            _ => repo_type,
        }
    }

    /// Runs `request` with the type [`HubClient::api_type`] gives; when that
    /// is `model`, the answer is [`HubError::RepoNotFound`] and the fallback
    /// is on, runs it again as `kernel`. A repository the `kernel` API does
    /// not serve either keeps the `model` API's error.
    pub(crate) async fn typed<T>(
        &self,
        repo_type: RepoType,
        repo_id: &RepoId,
        mut request: impl AsyncFnMut(RepoType) -> Result<T, HubError>,
    ) -> Result<T, HubError> {
        let first = self.api_type(repo_type, repo_id);
        let answer = request(first).await;
        let Some(fallback) = &self.kernel_fallback else {
            return answer;
        };
        match answer {
            Err(err @ HubError::RepoNotFound { .. }) if first == RepoType::Model => {
                match request(RepoType::Kernel).await {
                    Ok(found) => {
                        fallback.insert(repo_id);
                        Ok(found)
                    }
                    Err(HubError::RepoNotFound { .. }) => Err(err),
                    Err(other) => Err(other),
                }
            }
            other => other,
        }
    }
}
