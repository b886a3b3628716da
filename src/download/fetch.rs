//! Fetching one blob into the cache: verify what is there, else stream the
//! resolve URL into `.incomplete` while hashing, retrying once from zero.

use reqwest::StatusCode;
use reqwest::header::{CONTENT_RANGE, RANGE};

use crate::cache::{BlobWriter, CacheError, Digest, PartialBlob, RepoCache};
use crate::hub::types::RepoType;
use crate::hub::{HubClient, HubError, Target};
use crate::repo_id::RepoId;

use super::DownloadError;
use super::progress::Progress;

/// How many times a file is fetched from byte 0 before giving up.
const ATTEMPTS: u32 = 2;

/// Where a blob comes from.
pub(crate) struct Source<'a> {
    pub client: &'a HubClient,
    pub repo_type: RepoType,
    pub repo_id: &'a RepoId,
    pub commit: &'a str,
    /// One repo path with this content (the one requested).
    pub path: &'a str,
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

async fn open(repo: &RepoCache, digest: &Digest) -> Result<PartialBlob, DownloadError> {
    let repo = repo.clone();
    let digest = digest.clone();
    tokio::task::spawn_blocking(move || repo.open_blob(&digest))
        .await
        .map_err(|err| DownloadError::Internal(format!("blob task failed: {err}")))?
        .map_err(DownloadError::from)
}

/// Makes sure `blobs/<etag>` holds verified content, downloading it when absent
/// or corrupt. Holds the blob's `.locks/` file lock while checking and writing.
pub(crate) async fn ensure_blob(
    repo: &RepoCache,
    digest: &Digest,
    source: &Source<'_>,
    progress: &Progress,
) -> Result<Fetched, DownloadError> {
    let mut received = 0u64;
    let mut attempt = 1;
    loop {
        let writer = match open(repo, digest).await? {
            PartialBlob::Complete if received == 0 => return Ok(Fetched::Cached),
            PartialBlob::Complete => return Ok(Fetched::Downloaded { bytes: received }),
            PartialBlob::Missing(writer) => *writer,
        };
        let result = stream_into(writer, source, progress, &mut received).await;
        match result {
            Ok(()) => return Ok(Fetched::Downloaded { bytes: received }),
            // Wrong content: the `.incomplete` file was deleted; start over once.
            Err(DownloadError::Cache(CacheError::Mismatch { .. })) if attempt < ATTEMPTS => {}
            // Interrupted transfer: the partial data stays; resume once.
            Err(DownloadError::Hub(HubError::Transport { .. })) if attempt < ATTEMPTS => {}
            Err(err) => return Err(err),
        }
        attempt += 1;
    }
}

/// One GET of the resolve URL (with `Range` when partial data exists), streamed
/// into `writer`, then verified and moved into `blobs/`.
async fn stream_into(
    mut writer: BlobWriter,
    source: &Source<'_>,
    progress: &Progress,
    received: &mut u64,
) -> Result<(), DownloadError> {
    let url =
        source
            .client
            .resolve_url(source.repo_type, source.repo_id, source.commit, source.path);
    let target = Target::repo(source.repo_type, source.repo_id)
        .at(source.commit)
        .path(source.path);
    let mut request = source.client.get(&url)?;
    let offset = writer.offset();
    if offset > 0 {
        request = request.header(RANGE, format!("bytes={offset}-"));
    }
    let mut response = source.client.send(request, Some(&target)).await?;
    let resumed = response.status() == StatusCode::PARTIAL_CONTENT
        && response
            .headers()
            .get(CONTENT_RANGE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with(&format!("bytes {offset}-")));
    if !response.status().is_success() {
        return Err(DownloadError::Hub(HubError::InvalidResponse {
            url,
            detail: format!("status {} instead of the file content", response.status()),
        }));
    }
    if offset > 0 && !resumed {
        // The server sent the whole body (or an unexpected range): start over.
        writer.restart()?;
    }
    let mut bar = progress.file(source.path, writer.expected().size);
    bar.inc(writer.written());
    let final_url = response.url().to_string();
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(source) => {
                return Err(DownloadError::Hub(HubError::Transport {
                    url: final_url,
                    source,
                }));
            }
        };
        writer.write(&chunk, source.path)?;
        *received += chunk.len() as u64;
        bar.inc(chunk.len() as u64);
    }
    let path = source.path.to_owned();
    tokio::task::spawn_blocking(move || writer.finish(&path))
        .await
        .map_err(|err| DownloadError::Internal(format!("blob task failed: {err}")))??;
    bar.done();
    Ok(())
}
