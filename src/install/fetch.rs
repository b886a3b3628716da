//! Fetching one blob into the cache: the cache's [`BlobWriter`] as the sink of
//! [`HubClient::download_blob`], which owns the request, resume, the stall
//! watchdog and retries (see [`kernels_hub::download`]).
//!
//! * **Integrity**: bytes are hashed as they arrive and the size is checked
//!   (against `Content-Length` / `Content-Range` up front and the byte count at
//!   the end); only verified content is renamed to `blobs/<etag>`. A digest or
//!   size mismatch ([`CacheError::Mismatch`]) deletes the partial data and
//!   starts once more from byte 0, then fails naming the file and both digests.
//! * **Resume**: partial data from an interrupted attempt or an earlier run
//!   (`blobs/<etag>.incomplete`) is what the writer holds, continued by the
//!   Hub client with a guarded `Range` request.
//! * **Digest**: with [`ExpectedContent`]s (the files' digests in their
//!   variant's metadata.json), the complete content is hashed by that rule
//!   before the rename too; content that differs is discarded and never
//!   becomes a blob ([`DownloadError::Digest`]).
//! * **Locking**: the blob's `.locks/` file lock is held while checking and
//!   writing, and released while waiting between retries (each attempt opens
//!   the blob again); small blobs ([`UNLOCKED_MAX`]) take none and are
//!   opened, verified and renamed on the task itself, without a hop to the
//!   blocking pool.
//! * **Hashing**: a blob of at least [`BACKGROUND_HASH_MIN`] bytes is hashed
//!   on a thread of its own when the machine has
//!   [`BACKGROUND_HASH_CORES`] cores or more, so that receiving, writing and
//!   hashing overlap; otherwise on the receiving task.

use std::future::Future;

use kernels_cache::{BlobWriter, CacheError, PartialBlob, RepoCache, UNLOCKED_MAX};
use kernels_hub::{
    BlobError, BlobRequest, BlobSink, BlobWrite, Downloaded, HubClient, RetryNotice,
};
use kernels_types::BlobId;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

use super::digest::{ExpectedContent, check_content};
use super::error::DownloadError;
use super::reporter::{FileReporter, Reporter};

/// Blobs of at least this many bytes (8 MiB, some 5 ms of SHA-256) are
/// hashed on a thread of their own on a machine with enough cores
/// ([`BACKGROUND_HASH_CORES`]); a thread costs tens of microseconds.
pub(crate) const BACKGROUND_HASH_MIN: u64 = 8 * 1024 * 1024;

/// Cores from which a large blob is hashed on a thread of its own. On two
/// cores the thread competes with the receiving one (and, against a local
/// server, with the server), which measured slower than hashing inline.
pub(crate) const BACKGROUND_HASH_CORES: usize = 4;

/// Whether a blob of `size` bytes is hashed on a thread of its own here.
fn hash_in_background(size: u64) -> bool {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from));
    size >= BACKGROUND_HASH_MIN && cores >= BACKGROUND_HASH_CORES
}

/// Where a blob comes from.
pub(crate) struct Source<'a> {
    pub client: &'a HubClient,
    pub repo_type: RepoType,
    pub repo_id: &'a RepoId,
    pub commit: &'a str,
    /// One repo path with this content (the one requested).
    pub path: &'a str,
    /// What the metadata digests of the paths it backs say of the content
    /// (empty: nothing beyond the blob's name is checked).
    pub expected: &'a [ExpectedContent],
}

/// Outcome of [`ensure_blob`].
pub(crate) enum Fetched {
    /// The blob was already in the cache and verified.
    Cached,
    /// The blob was downloaded; `bytes` crossed the network.
    Downloaded {
        /// Bytes received over the network (all attempts).
        bytes: u64,
    },
}

/// Makes sure `blobs/<etag>` holds verified content, downloading it when absent
/// or corrupt (see the module docs).
pub(crate) async fn ensure_blob(
    repo: &RepoCache,
    digest: &BlobId,
    source: &Source<'_>,
    progress: &dyn Reporter,
) -> Result<Fetched, DownloadError> {
    let etag = digest.etag();
    let request = BlobRequest {
        repo_type: source.repo_type,
        repo_id: source.repo_id,
        revision: source.commit,
        path: source.path,
        size: digest.size,
        etag: &etag,
    };
    let mut sink = CacheSink {
        repo,
        digest: *digest,
        repo_id: source.repo_id,
        commit: source.commit,
        path: source.path,
        expected: source.expected,
        progress,
    };
    match source.client.download_blob(&request, &mut sink).await {
        Ok(Downloaded::Present) => Ok(Fetched::Cached),
        Ok(Downloaded::Fetched { bytes }) => Ok(Fetched::Downloaded { bytes }),
        Err(BlobError::Hub(err)) => Err(err.into()),
        Err(BlobError::Sink(err)) => Err(err),
    }
}

/// The cache as the sink of one blob's download.
struct CacheSink<'a> {
    repo: &'a RepoCache,
    digest: BlobId,
    repo_id: &'a RepoId,
    commit: &'a str,
    path: &'a str,
    expected: &'a [ExpectedContent],
    progress: &'a dyn Reporter,
}

impl<'a> BlobSink for CacheSink<'a> {
    type Error = DownloadError;
    type Writer = CacheWriter<'a>;

    fn open(
        &mut self,
    ) -> impl Future<Output = Result<Option<CacheWriter<'a>>, DownloadError>> + Send {
        let repo = self.repo.clone();
        let digest = self.digest;
        let (repo_id, commit, path) = (self.repo_id, self.commit, self.path);
        let (expected, progress) = (self.expected, self.progress);
        async move {
            let partial = if digest.size <= UNLOCKED_MAX {
                // No lock to wait for: a few calls, cheaper than a hop to the
                // blocking pool.
                repo.open_blob(&digest)?
            } else {
                tokio::task::spawn_blocking(move || repo.open_blob(&digest))
                    .await
                    .map_err(|err| DownloadError::Internal(format!("blob task failed: {err}")))??
            };
            Ok(match partial {
                PartialBlob::Complete => None,
                PartialBlob::Missing(mut writer) => {
                    if hash_in_background(digest.size) {
                        writer.hash_in_background();
                    }
                    Some(CacheWriter {
                        writer: *writer,
                        repo_id,
                        commit,
                        path,
                        expected,
                        progress,
                        bar: None,
                    })
                }
            })
        }
    }

    fn is_mismatch(err: &DownloadError) -> bool {
        matches!(err, DownloadError::Cache(CacheError::Mismatch { .. }))
    }

    fn retry(&mut self, notice: &RetryNotice) {
        self.progress.retry(notice);
    }
}

/// One attempt's writer: the cache's blob writer and the file's progress.
struct CacheWriter<'a> {
    writer: BlobWriter,
    repo_id: &'a RepoId,
    commit: &'a str,
    path: &'a str,
    expected: &'a [ExpectedContent],
    progress: &'a dyn Reporter,
    /// Shown once the body starts; dropped unfinished when the attempt fails.
    bar: Option<Box<dyn FileReporter>>,
}

impl BlobWrite for CacheWriter<'_> {
    type Error = DownloadError;

    fn held(&self) -> u64 {
        self.writer.written()
    }

    fn restart(&mut self) -> Result<(), DownloadError> {
        Ok(self.writer.restart()?)
    }

    /// A size or framing error detected before the body is read: the partial
    /// data is dropped and the error counts as a content mismatch.
    fn size_mismatch(&mut self, announced: u64) -> DownloadError {
        if let Err(err) = self.writer.restart() {
            return err.into();
        }
        let expected = self.writer.expected();
        DownloadError::Cache(CacheError::Mismatch {
            path: self.path.to_owned(),
            kind: expected.kind(),
            expected: expected.etag(),
            actual: "(not computed: the server announced a different size)".to_owned(),
            expected_size: expected.size,
            actual_size: announced,
        })
    }

    fn receiving(&mut self) {
        let mut bar = self
            .progress
            .file(self.repo_id, self.path, self.writer.expected().size);
        bar.inc(self.writer.written());
        self.bar = Some(bar);
    }

    fn write(&mut self, data: &[u8]) -> Result<(), DownloadError> {
        self.writer.write(data, self.path)?;
        if let Some(bar) = &mut self.bar {
            bar.inc(data.len() as u64);
        }
        Ok(())
    }

    /// Verifies the written data (its name, then the expected digests) and
    /// renames it, or discards it (blocking work off the runtime).
    fn finish(self) -> impl Future<Output = Result<(), DownloadError>> + Send {
        let CacheWriter {
            writer,
            repo_id,
            commit,
            path,
            expected,
            bar,
            ..
        } = self;
        let (path, expected) = (path.to_owned(), expected.to_vec());
        let small = writer.expected().size <= UNLOCKED_MAX;
        let publish = move || {
            let problems = check_content(writer.partial_path(), &expected);
            if problems.is_empty() {
                writer.finish(&path)?;
            } else {
                writer.discard()?;
            }
            Ok::<_, DownloadError>(problems)
        };
        async move {
            let problems = if small {
                publish()?
            } else {
                tokio::task::spawn_blocking(publish)
                    .await
                    .map_err(|err| DownloadError::Internal(format!("blob task failed: {err}")))??
            };
            if !problems.is_empty() {
                return Err(digest_error(repo_id, commit, problems)?);
            }
            if let Some(mut bar) = bar {
                bar.done();
            }
            Ok(())
        }
    }
}

/// The [`DownloadError::Digest`] of the first variant among `problems`
/// (`(variant, problem)` pairs), with every problem of that variant.
pub(crate) fn digest_error(
    repo_id: &RepoId,
    commit: &str,
    problems: Vec<(String, kernels_trust::DigestProblem)>,
) -> Result<DownloadError, DownloadError> {
    let commit = commit
        .parse()
        .map_err(|_| DownloadError::Internal(format!("`{commit}` is not a commit id")))?;
    let variant = problems.first().map(|(v, _)| v.clone()).unwrap_or_default();
    let problems = problems
        .into_iter()
        .filter(|(v, _)| *v == variant)
        .map(|(_, p)| p)
        .collect();
    Ok(DownloadError::Digest {
        repo_id: repo_id.clone(),
        commit,
        variant,
        problems,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::NoReporter;
    use kernels_cache::HubCache;
    use kernels_types::{DigestKind, Hasher};

    #[tokio::test]
    async fn the_cache_sink_writes_verifies_and_refuses_a_wrong_size() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HubCache::new(dir.path());
        let repo_id: RepoId = "acme/relu".parse().unwrap();
        let repo = cache.repo(&repo_id, RepoType::Kernel);
        let content = b"0123456789";
        let mut h = Hasher::new(DigestKind::Sha256, content.len() as u64);
        h.update(content);
        let digest = BlobId {
            digest: h.finish(),
            size: content.len() as u64,
        };
        let mut sink = CacheSink {
            repo: &repo,
            digest,
            repo_id: &repo_id,
            commit: "0123456789abcdef0123456789abcdef01234567",
            path: "build/x/f.so",
            expected: &[],
            progress: &NoReporter,
        };
        let mut writer = sink.open().await.unwrap().expect("nothing cached yet");
        writer.receiving();
        writer.write(&content[..4]).unwrap();
        assert_eq!(writer.held(), 4);
        let err = writer.size_mismatch(12);
        assert!(CacheSink::is_mismatch(&err), "{err}");
        assert_eq!(writer.held(), 0);
        writer.write(content).unwrap();
        writer.finish().await.unwrap();
        assert!(
            sink.open().await.unwrap().is_none(),
            "verified and in place"
        );
    }
}
