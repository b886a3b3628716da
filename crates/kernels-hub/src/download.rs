//! File downloads: the resolve URL of one file streamed into a sink the
//! caller provides ([`BlobSink`]; the install engine's writes into the cache).
//!
//! * **Integrity**: the size is checked against `Content-Length` /
//!   `Content-Range` up front ([`BlobWrite::size_mismatch`]); the sink hashes
//!   what arrives and verifies it in [`BlobWrite::finish`]. Content that fails
//!   verification ([`BlobSink::is_mismatch`]) is fetched once more from byte 0,
//!   then the failure is returned.
//! * **Resume**: bytes the sink holds ([`BlobWrite::held`], from an
//!   interrupted attempt or an earlier run) are continued with
//!   `Range: bytes=N-` guarded by `If-Range` (the server's strong `ETag` seen
//!   earlier in this download, else [`BlobRequest::etag`], the Hub's
//!   `X-Linked-Etag`/`ETag` value). A `200` answer (range ignored or validator
//!   refused) or a `416` restarts from zero; nothing is ever spliced.
//! * **Timeouts**: the response headers within
//!   [`RetryPolicy::download_timeout`](crate::RetryPolicy::download_timeout)
//!   (`HF_HUB_DOWNLOAD_TIMEOUT`), then the stall watchdog: no body byte for
//!   [`RetryPolicy::stall_timeout`](crate::RetryPolicy::stall_timeout)
//!   (`KERNELS_STALL_TIMEOUT`) fails the attempt.
//! * **Retries** ([`crate::RetryState`]): what [`HubError::is_retryable`]
//!   accepts, with jittered exponential backoff or the server's wait; the
//!   sink hears of each ([`BlobSink::retry`]) and is opened again for the
//!   next attempt.
//! * **Refusals**: a `403` from a host other than the endpoint (a signed CDN
//!   URL, expired or refused) is asked once more at once, through the Hub for
//!   a fresh redirect ([`CDN_REFUSAL_RETRIES`]); refused again, it is
//!   definitive: the client remembers it and every later download fails with
//!   it without a request, so that a CDN that refuses every file ends the run
//!   after one file instead of retrying each one (issue 24).
//! * **Encoding**: `identity` is asked for; a gzip body (some CDNs) is
//!   inflated in bounded steps, any other encoding is refused.
//!
//! ```text
//! open ─┬─ None ───────────────────────────────▶ done (nothing received)
//!       └─ writer ─ GET (Range) ─ receiving ─ write… ─ finish ─▶ done
//!                        └──── failure ─▶ retry / restart ─▶ open
//! ```

use std::future::Future;
use std::io::Write;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_RANGE, ETAG, IF_RANGE, RANGE};

use kernels_types::RepoId;
use kernels_types::wire::RepoType;

use crate::client::HubClient;
use crate::error::{HubError, Target};
use crate::retry::{RetryNotice, RetryState};

/// How many times content that fails verification is fetched again from byte 0.
pub const MISMATCH_RESTARTS: u32 = 1;

/// Compressed bytes inflated at a time. Deflate expands at most ~1032:1, so
/// one step yields at most ~1 MiB: a gzip bomb in a single network chunk
/// cannot grow the process, and a sink refuses the first byte past the
/// expected size.
const GZIP_STEP: usize = 1024;

/// One file to download.
#[derive(Debug, Clone, Copy)]
pub struct BlobRequest<'a> {
    /// Repository type (decides the resolve URL).
    pub repo_type: RepoType,
    /// Repository.
    pub repo_id: &'a RepoId,
    /// The revision, normally a commit id.
    pub revision: &'a str,
    /// One repo path with this content.
    pub path: &'a str,
    /// Expected size in bytes.
    pub size: u64,
    /// The content's ETag as the Hub names it (the blob name, unquoted): the
    /// `If-Range` validator until the server sends a strong `ETag` of its own.
    pub etag: &'a str,
}

/// Where a download goes, opened once per attempt; implemented by the caller.
pub trait BlobSink: Send {
    /// The sink's errors (the cache's).
    type Error: std::error::Error + Send + Sync + 'static;
    /// The writer of one attempt.
    type Writer: BlobWrite<Error = Self::Error>;

    /// Opens the destination for an attempt: `None` when it already holds the
    /// complete, verified content.
    fn open(&mut self) -> impl Future<Output = Result<Option<Self::Writer>, Self::Error>> + Send;

    /// Whether `err` says the content was wrong (digest or size), the partial
    /// data being gone already: the download starts again from byte 0.
    fn is_mismatch(err: &Self::Error) -> bool;

    /// A failed attempt is tried again after `notice.wait`.
    fn retry(&mut self, notice: &RetryNotice);
}

/// The writer of one attempt ([`BlobSink::open`]).
pub trait BlobWrite: Send {
    /// The sink's errors.
    type Error;

    /// Bytes held now: kept from an interrupted attempt or run, or written.
    fn held(&self) -> u64;

    /// Drops the bytes held: the body starts at byte 0.
    fn restart(&mut self) -> Result<(), Self::Error>;

    /// The server announced `announced` bytes in all, not the expected size:
    /// drops the bytes held and returns the content-mismatch error.
    fn size_mismatch(&mut self, announced: u64) -> Self::Error;

    /// The body starts; its bytes follow the [`BlobWrite::held`] ones.
    fn receiving(&mut self);

    /// Appends decoded body bytes.
    fn write(&mut self, data: &[u8]) -> Result<(), Self::Error>;

    /// Every byte is there: verify and publish.
    fn finish(self) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// Why a download failed.
#[derive(Debug, thiserror::Error)]
pub enum BlobError<E> {
    /// The Hub, the CDN or the network.
    #[error(transparent)]
    Hub(#[from] HubError),
    /// The sink (writing, verification).
    #[error(transparent)]
    Sink(E),
}

/// How many times a download refused by the server the Hub redirected to (a
/// `403` from another origin) is asked again, at once, for a fresh signed URL.
pub const CDN_REFUSAL_RETRIES: u32 = 1;

/// What [`HubClient::download_blob`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Downloaded {
    /// The sink held the verified content already; no request was made.
    Present,
    /// The content was fetched (or completed from held bytes) and verified.
    Fetched {
        /// Bytes received over the network (all attempts, before decoding).
        bytes: u64,
    },
}

/// What one download carries from attempt to attempt.
struct Carry {
    /// Bytes received over the network so far.
    received: u64,
    /// The server's strong `ETag`, once seen: the next `If-Range` validator.
    validator: Option<String>,
}

impl HubClient {
    /// Downloads one file into `sink`, with resume and retries (see the module
    /// docs).
    ///
    /// # Errors
    /// [`BlobError::Hub`] when the last attempt failed at the Hub or on the
    /// network, [`BlobError::Sink`] when the sink failed (also content that
    /// still fails verification after [`MISMATCH_RESTARTS`]).
    pub async fn download_blob<S: BlobSink>(
        &self,
        request: &BlobRequest<'_>,
        sink: &mut S,
    ) -> Result<Downloaded, BlobError<S::Error>> {
        let mut state = RetryState::new(*self.retry_policy());
        let mut carry = Carry {
            received: 0,
            validator: None,
        };
        let mut restarts = 0;
        let mut refusals = 0;
        loop {
            let Some(writer) = sink.open().await.map_err(BlobError::Sink)? else {
                return Ok(match carry.received {
                    0 => Downloaded::Present,
                    bytes => Downloaded::Fetched { bytes },
                });
            };
            if let Some(refusal) = self.refusal() {
                return Err(refusal.into());
            }
            let Err(err) = self.attempt(request, writer, &mut carry).await else {
                return Ok(Downloaded::Fetched {
                    bytes: carry.received,
                });
            };
            match &err {
                BlobError::Sink(e) if S::is_mismatch(e) && restarts < MISMATCH_RESTARTS => {
                    restarts += 1;
                    carry.validator = None;
                    tracing::debug!("{}: fetching again from byte 0: {err}", request.path);
                }
                BlobError::Hub(hub) if self.is_cdn_refusal(hub) => {
                    if refusals >= CDN_REFUSAL_RETRIES {
                        self.remember_refusal(hub);
                        return Err(err);
                    }
                    refusals += 1;
                    tracing::debug!("{}: asking for a fresh download URL: {err}", request.path);
                }
                BlobError::Hub(hub) if hub.is_retryable() => {
                    let Some(wait) = self.backoff(&mut state, hub) else {
                        return Err(err);
                    };
                    tracing::debug!("{}: retrying after {wait:?}: {err}", request.path);
                    let file = format!("{}: {}", request.repo_id, request.path);
                    let reason = err
                        .to_string()
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .to_owned();
                    sink.retry(&state.notice(&self.blob_url(request), Some(file), reason, wait));
                    tokio::time::sleep(wait).await;
                }
                _ => return Err(err),
            }
        }
    }

    /// Whether a failed download attempt is a `403` from another origin than
    /// the endpoint: a signed CDN URL refused (expired while we waited, or
    /// never valid for this machine). Asked again through the Hub for a fresh
    /// one at most [`CDN_REFUSAL_RETRIES`] times, never with the backoff of a
    /// server failure.
    fn is_cdn_refusal(&self, err: &HubError) -> bool {
        match err {
            HubError::Status { response }
            | HubError::Forbidden { response }
            | HubError::Refused { response } => {
                response.status == 403 && !self.is_endpoint_url(&response.url)
            }
            _ => false,
        }
    }

    /// Remembers the first definitive refusal of the download server (see
    /// the module docs).
    fn remember_refusal(&self, err: &HubError) {
        let (HubError::Status { response }
        | HubError::Forbidden { response }
        | HubError::Refused { response }) = err
        else {
            return;
        };
        if let Ok(mut refused) = self.refused.lock() {
            refused.get_or_insert_with(|| (**response).clone());
        }
    }

    /// The definitive refusal remembered, as the error of a download that is
    /// not tried.
    fn refusal(&self) -> Option<HubError> {
        let refused = self.refused.lock().ok()?;
        refused.as_ref().map(|response| HubError::Refused {
            response: Box::new(response.clone()),
        })
    }

    fn blob_url(&self, request: &BlobRequest<'_>) -> String {
        self.resolve_url(
            request.repo_type,
            request.repo_id,
            request.revision,
            request.path,
        )
    }

    /// One GET of the resolve URL (with `Range` when bytes are held), streamed
    /// into `writer`, then finished.
    async fn attempt<W: BlobWrite>(
        &self,
        request: &BlobRequest<'_>,
        mut writer: W,
        carry: &mut Carry,
    ) -> Result<(), BlobError<W::Error>> {
        if writer.held() == request.size {
            // Every byte is already there (a run stopped before the rename).
            return writer.finish().await.map_err(BlobError::Sink);
        }
        let url = self.blob_url(request);
        let mut response = self.open_body(request, &url, &mut writer, carry).await?;
        let final_url = response.url().to_string();
        let mut decoder = Decoder::for_response(&response, request.size, &mut writer)?;
        if let Some(etag) = response.headers().get(ETAG).and_then(|v| v.to_str().ok())
            && etag.starts_with('"')
        {
            carry.validator = Some(etag.to_owned());
        }
        writer.receiving();
        let stall = self.retry_policy().stall_timeout;
        loop {
            let chunk = match tokio::time::timeout(stall, response.chunk()).await {
                Err(_) => {
                    let setting = "KERNELS_STALL_TIMEOUT";
                    return Err(timeout(&url, "no data received", stall, setting).into());
                }
                Ok(Ok(Some(chunk))) => chunk,
                Ok(Ok(None)) => break,
                Ok(Err(source)) => return Err(HubError::transport(final_url, source).into()),
            };
            carry.received += chunk.len() as u64;
            decoder.feed(&chunk, &mut writer, &final_url)?;
        }
        decoder.finish(&mut writer, &final_url)?;
        writer.finish().await.map_err(BlobError::Sink)
    }

    /// Sends the GET (restarting without `Range` after a `416`) and checks
    /// that the answer is the body from [`BlobWrite::held`] on, restarting the
    /// writer when the server sent the whole file instead.
    async fn open_body<W: BlobWrite>(
        &self,
        request: &BlobRequest<'_>,
        url: &str,
        writer: &mut W,
        carry: &Carry,
    ) -> Result<reqwest::Response, BlobError<W::Error>> {
        let repo_type = self.api_type(request.repo_type, request.repo_id);
        let target = Target::repo(repo_type, request.repo_id)
            .at(request.revision)
            .path(request.path);
        let limit = self.retry_policy().download_timeout;
        let response = loop {
            let offset = writer.held();
            let mut builder = self.get(url)?.header(ACCEPT_ENCODING, "identity");
            if offset > 0 {
                let guard = carry
                    .validator
                    .clone()
                    .unwrap_or_else(|| format!("\"{}\"", request.etag));
                builder = builder
                    .header(RANGE, format!("bytes={offset}-"))
                    .header(IF_RANGE, guard);
            }
            let response = tokio::time::timeout(limit, self.send_unchecked(builder))
                .await
                .map_err(|_| timeout(url, "no response", limit, "HF_HUB_DOWNLOAD_TIMEOUT"))??;
            if response.status() == StatusCode::RANGE_NOT_SATISFIABLE && offset > 0 {
                // The held bytes do not fit what the server has: start over.
                writer.restart().map_err(BlobError::Sink)?;
                continue;
            }
            break self.check_response(response, Some(&target)).await?;
        };
        let offset = writer.held();
        let size = request.size;
        match response.status() {
            StatusCode::PARTIAL_CONTENT if offset > 0 => {
                let expected = format!("bytes {offset}-{}/{size}", size - 1);
                let range = response
                    .headers()
                    .get(CONTENT_RANGE)
                    .and_then(|v| v.to_str().ok());
                if range != Some(expected.as_str()) {
                    return Err(BlobError::Sink(writer.size_mismatch(size)));
                }
            }
            StatusCode::OK if offset > 0 => {
                // Range ignored (or If-Range refused): never splice, restart.
                writer.restart().map_err(BlobError::Sink)?;
            }
            StatusCode::OK => {}
            status => {
                return Err(BlobError::Hub(HubError::InvalidResponse {
                    url: response.url().to_string(),
                    detail: format!("status {status} instead of the file content"),
                }));
            }
        }
        Ok(response)
    }
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

impl Decoder {
    /// The decoder a response's `Content-Encoding` asks for; an identity body
    /// must announce (if at all) exactly the bytes still missing.
    fn for_response<W: BlobWrite>(
        response: &reqwest::Response,
        size: u64,
        writer: &mut W,
    ) -> Result<Self, BlobError<W::Error>> {
        match response.headers().get(CONTENT_ENCODING) {
            Some(v) if v.as_bytes().eq_ignore_ascii_case(b"gzip") => Ok(Decoder::Gzip(Box::new(
                flate2::write::GzDecoder::new(Vec::new()),
            ))),
            Some(v) if !v.as_bytes().eq_ignore_ascii_case(b"identity") => {
                Err(BlobError::Hub(HubError::InvalidResponse {
                    url: response.url().to_string(),
                    detail: format!("unsupported Content-Encoding {v:?}"),
                }))
            }
            _ => {
                let held = writer.held();
                match response.content_length() {
                    Some(announced) if announced != size - held => {
                        Err(BlobError::Sink(writer.size_mismatch(held + announced)))
                    }
                    _ => Ok(Decoder::Identity),
                }
            }
        }
    }

    /// Feeds received bytes, handing decoded bytes to `writer` in bounded pieces.
    fn feed<W: BlobWrite>(
        &mut self,
        chunk: &[u8],
        writer: &mut W,
        url: &str,
    ) -> Result<(), BlobError<W::Error>> {
        match self {
            Decoder::Identity => writer.write(chunk).map_err(BlobError::Sink),
            Decoder::Gzip(gz) => {
                for step in chunk.chunks(GZIP_STEP) {
                    gz.write_all(step).map_err(|err| gzip_error(url, &err))?;
                    let out = std::mem::take(gz.get_mut());
                    if !out.is_empty() {
                        writer.write(&out).map_err(BlobError::Sink)?;
                    }
                }
                Ok(())
            }
        }
    }

    /// Ends the stream, handing the last decoded bytes to `writer`.
    fn finish<W: BlobWrite>(self, writer: &mut W, url: &str) -> Result<(), BlobError<W::Error>> {
        match self {
            Decoder::Identity => Ok(()),
            Decoder::Gzip(gz) => {
                let rest = gz.finish().map_err(|err| gzip_error(url, &err))?;
                writer.write(&rest).map_err(BlobError::Sink)
            }
        }
    }
}

fn gzip_error(url: &str, err: &std::io::Error) -> HubError {
    HubError::InvalidResponse {
        url: url.to_owned(),
        detail: format!("invalid gzip body: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts what it is given; never fails.
    #[derive(Default)]
    struct Counter {
        total: usize,
        largest: usize,
    }

    impl BlobWrite for Counter {
        type Error = std::io::Error;
        fn held(&self) -> u64 {
            self.total as u64
        }
        fn restart(&mut self) -> Result<(), Self::Error> {
            self.total = 0;
            Ok(())
        }
        fn size_mismatch(&mut self, _: u64) -> Self::Error {
            std::io::Error::other("size")
        }
        fn receiving(&mut self) {}
        fn write(&mut self, data: &[u8]) -> Result<(), Self::Error> {
            self.total += data.len();
            self.largest = self.largest.max(data.len());
            Ok(())
        }
        async fn finish(self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

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
        let mut counter = Counter::default();
        decoder.feed(&bomb, &mut counter, "http://h/x").unwrap();
        decoder.finish(&mut counter, "http://h/x").unwrap();
        assert_eq!(counter.total, 32 << 20);
        assert!(
            counter.largest <= 1100 * GZIP_STEP,
            "{} bytes at once",
            counter.largest
        );
    }
}
