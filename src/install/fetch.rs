//! Fetching one blob into the cache: verify what is there, else stream the
//! resolve URL into `blobs/<etag>.incomplete` while hashing it.
//!
//! * **Integrity**: bytes are hashed as they arrive and the size is checked
//!   (against `Content-Length` / `Content-Range` up front and the byte count at
//!   the end); only verified content is renamed to `blobs/<etag>`. A digest or
//!   size mismatch deletes the partial data and starts once more from byte 0,
//!   then fails naming the file and both digests.
//! * **Resume**: partial data from an interrupted attempt or an earlier run is
//!   continued with `Range: bytes=N-` guarded by `If-Range` (the server's strong
//!   `ETag` seen earlier in this run, else the blob name, which is the Hub's
//!   `X-Linked-Etag`/`ETag` value). A `200` answer (range ignored or validator
//!   refused) or a `416` restarts from zero; nothing is ever spliced.
//! * **Retries** ([`kernels_hub::RetryPolicy`]): transport errors, timeouts,
//!   the stall watchdog, 408/429/500/502/503/504 and an expired signed CDN URL
//!   (a `403` from a host other than the Hub, answered by asking the Hub for a
//!   fresh redirect) are retried with jittered exponential backoff or the
//!   server's `Retry-After`.

use std::io::Write;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_RANGE, ETAG, IF_RANGE, RANGE};

use kernels_cache::{BlobWriter, CacheError, PartialBlob, RepoCache};
use kernels_hub::{HubClient, HubError, Target};
use kernels_types::BlobId;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

use super::DownloadError;
use super::reporter::Reporter;

/// How many times content that fails verification is fetched again from byte 0.
const MISMATCH_RESTARTS: u32 = 1;

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

async fn open(repo: &RepoCache, digest: &BlobId) -> Result<PartialBlob, DownloadError> {
    let repo = repo.clone();
    let digest = *digest;
    tokio::task::spawn_blocking(move || repo.open_blob(&digest))
        .await
        .map_err(|err| DownloadError::Internal(format!("blob task failed: {err}")))?
        .map_err(DownloadError::from)
}

/// What to do after a failed attempt.
enum Next {
    /// Content was wrong; the partial data is gone. Start again from zero.
    Restart,
    /// Transient failure; wait (the server's `RateLimit` / `Retry-After`, if
    /// any) and resume from the partial data kept.
    Retry,
    /// Give up.
    Fail,
}

fn classify(err: &DownloadError, endpoint: &str) -> Next {
    match err {
        DownloadError::Cache(CacheError::Mismatch { .. }) => Next::Restart,
        DownloadError::Hub(err) if err.is_retryable() => Next::Retry,
        // A signed CDN URL that expired (or was refused) while we waited: the
        // next attempt asks the Hub again and gets a fresh one.
        DownloadError::Hub(
            HubError::Status { response }
            | HubError::Forbidden { response }
            | HubError::Refused { response },
        ) if response.status == 403 && !same_origin(&response.url, endpoint) => Next::Retry,
        _ => Next::Fail,
    }
}

fn same_origin(url: &str, endpoint: &str) -> bool {
    match (url::Url::parse(url), url::Url::parse(endpoint)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}

/// Makes sure `blobs/<etag>` holds verified content, downloading it when absent
/// or corrupt. Holds the blob's `.locks/` file lock while checking and writing
/// (released while waiting between retries).
pub(crate) async fn ensure_blob(
    repo: &RepoCache,
    digest: &BlobId,
    source: &Source<'_>,
    progress: &dyn Reporter,
) -> Result<Fetched, DownloadError> {
    let policy = *source.client.retry_policy();
    let mut received = 0u64;
    let mut retries = 0;
    let mut restarts = 0;
    let mut validator = None;
    loop {
        let writer = match open(repo, digest).await? {
            PartialBlob::Complete if received == 0 => return Ok(Fetched::Cached),
            PartialBlob::Complete => return Ok(Fetched::Downloaded { bytes: received }),
            PartialBlob::Missing(writer) => *writer,
        };
        let result = attempt(writer, source, progress, &mut received, &mut validator).await;
        let Err(err) = result else {
            return Ok(Fetched::Downloaded { bytes: received });
        };
        match classify(&err, source.client.endpoint()) {
            Next::Restart if restarts < MISMATCH_RESTARTS => {
                restarts += 1;
                validator = None;
                tracing::debug!("{}: fetching again from byte 0: {err}", source.path);
            }
            Next::Retry if retries < policy.max_retries => {
                let wait = match &err {
                    DownloadError::Hub(hub) => source.client.retry_wait(retries, hub),
                    _ => policy.delay(retries, None),
                };
                tracing::debug!("{}: retrying after {wait:?}: {err}", source.path);
                progress.retry(&super::RetryEvent {
                    what: format!("{}: {}", source.repo_id, source.path),
                    reason: one_line(&err),
                    wait,
                    attempt: retries + 1,
                    max: policy.max_retries,
                });
                tokio::time::sleep(wait).await;
                retries += 1;
            }
            _ => return Err(err),
        }
    }
}

/// A size or framing error detected before the body is read: the partial data
/// is dropped and the error counts as a content mismatch.
fn framing_error(writer: &mut BlobWriter, path: &str, announced: u64) -> DownloadError {
    if let Err(err) = writer.restart() {
        return err.into();
    }
    let expected = writer.expected();
    DownloadError::Cache(CacheError::Mismatch {
        path: path.to_owned(),
        kind: expected.kind(),
        expected: expected.etag(),
        actual: "(not computed: the server announced a different size)".to_owned(),
        expected_size: expected.size,
        actual_size: announced,
    })
}

fn timeout(url: &str, what: &'static str, limit: Duration, setting: &'static str) -> HubError {
    HubError::Timeout {
        url: url.to_owned(),
        what,
        seconds: limit.as_secs_f64(),
        setting,
    }
}

/// Body decoding: identity, or gzip when a server compressed the file although
/// we asked for `identity` (seen behind some CDNs).
enum Decoder {
    Identity,
    Gzip(Box<flate2::write::GzDecoder<Vec<u8>>>),
}

/// Compressed bytes inflated at a time. Deflate expands at most ~1032:1, so
/// one step yields at most ~1 MiB: a gzip bomb in a single network chunk
/// cannot grow the process, and the blob writer refuses the first byte past
/// the expected size.
const GZIP_STEP: usize = 1024;

impl Decoder {
    /// Feeds received bytes, handing decoded bytes to `sink` in bounded pieces.
    fn feed(
        &mut self,
        chunk: &[u8],
        sink: &mut dyn FnMut(&[u8]) -> Result<(), DownloadError>,
        url: &str,
    ) -> Result<(), DownloadError> {
        match self {
            Decoder::Identity => sink(chunk),
            Decoder::Gzip(gz) => {
                for step in chunk.chunks(GZIP_STEP) {
                    gz.write_all(step).map_err(|err| gzip_error(url, &err))?;
                    let out = std::mem::take(gz.get_mut());
                    if !out.is_empty() {
                        sink(&out)?;
                    }
                }
                Ok(())
            }
        }
    }

    /// Ends the stream, handing the last decoded bytes to `sink`.
    fn finish(
        self,
        sink: &mut dyn FnMut(&[u8]) -> Result<(), DownloadError>,
        url: &str,
    ) -> Result<(), DownloadError> {
        match self {
            Decoder::Identity => Ok(()),
            Decoder::Gzip(gz) => sink(&gz.finish().map_err(|err| gzip_error(url, &err))?),
        }
    }
}

/// Verifies and renames the written data (blocking work off the runtime).
async fn finish(writer: BlobWriter, path: &str) -> Result<(), DownloadError> {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || writer.finish(&path))
        .await
        .map_err(|err| DownloadError::Internal(format!("blob task failed: {err}")))??;
    Ok(())
}

/// One GET of the resolve URL (with `Range` when partial data exists), streamed
/// into `writer`, then verified and moved into `blobs/`.
async fn attempt(
    mut writer: BlobWriter,
    source: &Source<'_>,
    progress: &dyn Reporter,
    received: &mut u64,
    validator: &mut Option<String>,
) -> Result<(), DownloadError> {
    let policy = source.client.retry_policy();
    let size = writer.expected().size;
    if writer.offset() == size {
        // Every byte is already there (a run stopped before the rename).
        return finish(writer, source.path).await;
    }
    let url =
        source
            .client
            .resolve_url(source.repo_type, source.repo_id, source.commit, source.path);
    let target = Target::repo(source.repo_type, source.repo_id)
        .at(source.commit)
        .path(source.path);
    let mut response = loop {
        let offset = writer.offset();
        let mut request = source.client.get(&url)?.header(ACCEPT_ENCODING, "identity");
        if offset > 0 {
            let guard = validator
                .clone()
                .unwrap_or_else(|| format!("\"{}\"", writer.expected().etag()));
            request = request
                .header(RANGE, format!("bytes={offset}-"))
                .header(IF_RANGE, guard);
        }
        let limit = policy.download_timeout;
        let response = tokio::time::timeout(limit, source.client.send_unchecked(request))
            .await
            .map_err(|_| timeout(&url, "no response", limit, "HF_HUB_DOWNLOAD_TIMEOUT"))??;
        if response.status() == StatusCode::RANGE_NOT_SATISFIABLE && offset > 0 {
            // The partial data does not fit what the server has: start over.
            writer.restart()?;
            continue;
        }
        break source
            .client
            .check_response(response, Some(&target))
            .await?;
    };
    let final_url = response.url().to_string();
    let offset = writer.offset();
    match response.status() {
        StatusCode::PARTIAL_CONTENT if offset > 0 => {
            let expected_range = format!("bytes {offset}-{}/{size}", size - 1);
            let range = response
                .headers()
                .get(CONTENT_RANGE)
                .and_then(|v| v.to_str().ok());
            if range != Some(expected_range.as_str()) {
                return Err(framing_error(&mut writer, source.path, size));
            }
        }
        StatusCode::OK => {
            if offset > 0 {
                // Range ignored (or If-Range refused): never splice, restart.
                writer.restart()?;
            }
        }
        status => {
            return Err(DownloadError::Hub(HubError::InvalidResponse {
                url: final_url,
                detail: format!("status {status} instead of the file content"),
            }));
        }
    }
    let mut decoder = match response.headers().get(CONTENT_ENCODING) {
        Some(v) if v.as_bytes().eq_ignore_ascii_case(b"gzip") => {
            Decoder::Gzip(Box::new(flate2::write::GzDecoder::new(Vec::new())))
        }
        Some(v) if !v.as_bytes().eq_ignore_ascii_case(b"identity") => {
            return Err(DownloadError::Hub(HubError::InvalidResponse {
                url: final_url,
                detail: format!("unsupported Content-Encoding {v:?}"),
            }));
        }
        _ => {
            let written = writer.written();
            if let Some(announced) = response.content_length()
                && announced != size - written
            {
                return Err(framing_error(&mut writer, source.path, written + announced));
            }
            Decoder::Identity
        }
    };
    if let Some(etag) = response.headers().get(ETAG).and_then(|v| v.to_str().ok())
        && etag.starts_with('"')
    {
        *validator = Some(etag.to_owned());
    }

    let mut bar = progress.file(source.repo_id, source.path, size);
    bar.inc(writer.written());
    let stall = policy.stall_timeout;
    loop {
        let chunk = match tokio::time::timeout(stall, response.chunk()).await {
            Err(_) => {
                return Err(
                    timeout(&url, "no data received", stall, "KERNELS_STALL_TIMEOUT").into(),
                );
            }
            Ok(Ok(Some(chunk))) => chunk,
            Ok(Ok(None)) => break,
            Ok(Err(source)) => {
                return Err(DownloadError::Hub(HubError::transport(final_url, source)));
            }
        };
        *received += chunk.len() as u64;
        decoder.feed(
            &chunk,
            &mut |data| {
                writer.write(data, source.path)?;
                bar.inc(data.len() as u64);
                Ok(())
            },
            &final_url,
        )?;
    }
    decoder.finish(&mut |data| Ok(writer.write(data, source.path)?), &final_url)?;
    finish(writer, source.path).await?;
    bar.done();
    Ok(())
}

/// The first line of an error's message.
fn one_line(err: &DownloadError) -> String {
    err.to_string()
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

fn gzip_error(url: &str, err: &std::io::Error) -> DownloadError {
    DownloadError::Hub(HubError::InvalidResponse {
        url: url.to_owned(),
        detail: format!("invalid gzip body: {err}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A whole gzip bomb in one network chunk is inflated in bounded pieces.
    #[test]
    fn gzip_chunk_inflates_in_bounded_pieces() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..32 {
            gz.write_all(&zeros).unwrap();
        }
        let bomb = gz.finish().unwrap();
        let mut decoder = Decoder::Gzip(Box::new(flate2::write::GzDecoder::new(Vec::new())));
        let (mut total, mut largest) = (0usize, 0usize);
        let mut sink = |data: &[u8]| {
            total += data.len();
            largest = largest.max(data.len());
            Ok(())
        };
        decoder.feed(&bomb, &mut sink, "http://h/x").unwrap();
        decoder.finish(&mut sink, "http://h/x").unwrap();
        assert_eq!(total, 32 << 20);
        assert!(largest <= 1100 * GZIP_STEP, "{largest} bytes at once");
    }
}
