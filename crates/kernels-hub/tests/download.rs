//! `HubClient::download_blob` against a scripted server, into a sink in memory.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kernels_hub::{
    BlobRequest, BlobSink, BlobWrite, ClientConfig, Downloaded, HubClient, RetryNotice, RetryPolicy,
};
use kernels_types::RepoId;
use kernels_types::wire::RepoType;
use support::{Listener, Reply};

const CONTENT: &[u8] = b"0123456789";
const ETAG: &str = "abc123";

fn client(endpoint: &str) -> HubClient {
    HubClient::new(&ClientConfig {
        endpoint: endpoint.to_owned(),
        token: None,
        token_source: Default::default(),
        token_origin: None,
        network: Default::default(),
        offline: false,
        retry: RetryPolicy {
            max_retries: 2,
            download_timeout: Duration::from_secs(5),
            stall_timeout: Duration::from_secs(5),
            ..RetryPolicy::default()
        },
        events: None,
    })
    .unwrap()
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct MemoryError(&'static str);

/// Bytes kept across attempts, as a cache keeps `.incomplete` files.
#[derive(Default)]
struct Memory {
    held: Arc<Mutex<Vec<u8>>>,
    complete: bool,
    notices: Vec<RetryNotice>,
}

struct MemoryWriter {
    held: Arc<Mutex<Vec<u8>>>,
}

impl BlobSink for Memory {
    type Error = MemoryError;
    type Writer = MemoryWriter;

    async fn open(&mut self) -> Result<Option<MemoryWriter>, MemoryError> {
        let complete = self.complete || *self.held.lock().unwrap() == CONTENT;
        self.complete = complete;
        Ok((!complete).then(|| MemoryWriter {
            held: self.held.clone(),
        }))
    }

    fn is_mismatch(err: &MemoryError) -> bool {
        err.0 == "mismatch"
    }

    fn retry(&mut self, notice: &RetryNotice) {
        self.notices.push(notice.clone());
    }
}

impl BlobWrite for MemoryWriter {
    type Error = MemoryError;

    fn held(&self) -> u64 {
        self.held.lock().unwrap().len() as u64
    }

    fn restart(&mut self) -> Result<(), MemoryError> {
        self.held.lock().unwrap().clear();
        Ok(())
    }

    fn size_mismatch(&mut self, _: u64) -> MemoryError {
        self.held.lock().unwrap().clear();
        MemoryError("mismatch")
    }

    fn receiving(&mut self) {}

    fn write(&mut self, data: &[u8]) -> Result<(), MemoryError> {
        self.held.lock().unwrap().extend_from_slice(data);
        Ok(())
    }

    async fn finish(self) -> Result<(), MemoryError> {
        let mut held = self.held.lock().unwrap();
        if *held != CONTENT {
            held.clear();
            return Err(MemoryError("mismatch"));
        }
        Ok(())
    }
}

fn request(repo_id: &RepoId) -> BlobRequest<'_> {
    BlobRequest {
        repo_type: RepoType::Kernel,
        repo_id,
        revision: "0123456789abcdef0123456789abcdef01234567",
        path: "build/x.so",
        size: CONTENT.len() as u64,
        etag: ETAG,
    }
}

fn ok(body: &[u8]) -> Reply {
    Reply::Full("HTTP/1.1 200 OK".into(), body.to_vec())
}

#[tokio::test]
async fn a_resume_answered_with_the_whole_file_starts_over() {
    let hub = Listener::start("127.0.0.1", |_| ok(CONTENT)).await;
    let repo_id: RepoId = "acme/relu".parse().unwrap();
    let mut sink = Memory::default();
    sink.held.lock().unwrap().extend_from_slice(b"0123");
    let done = client(&hub.base)
        .download_blob(&request(&repo_id), &mut sink)
        .await
        .unwrap();
    assert_eq!(done, Downloaded::Fetched { bytes: 10 });
    assert_eq!(*sink.held.lock().unwrap(), CONTENT);
    let seen = hub.received().to_ascii_lowercase();
    assert!(seen.contains("range: bytes=4-\r\n"), "{seen}");
    assert!(
        seen.contains(&format!("if-range: \"{ETAG}\"\r\n")),
        "{seen}"
    );
    assert!(seen.contains("accept-encoding: identity\r\n"), "{seen}");
}

#[tokio::test]
async fn a_server_failure_is_retried_and_announced() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let hub = Listener::start("127.0.0.1", move |_| {
        match counter.fetch_add(1, Ordering::SeqCst) {
            0 => Reply::Full(
                "HTTP/1.1 503 Service Unavailable\r\nretry-after: 0".into(),
                Vec::new(),
            ),
            _ => ok(CONTENT),
        }
    })
    .await;
    let repo_id: RepoId = "acme/relu".parse().unwrap();
    let mut sink = Memory::default();
    let done = client(&hub.base)
        .download_blob(&request(&repo_id), &mut sink)
        .await
        .unwrap();
    assert_eq!(done, Downloaded::Fetched { bytes: 10 });
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let [notice] = sink.notices.as_slice() else {
        panic!("{:?}", sink.notices);
    };
    assert_eq!(notice.file.as_deref(), Some("acme/relu: build/x.so"));
    assert_eq!((notice.attempt, notice.max), (1, 2));
    assert!(notice.reason.contains("HTTP 503"), "{}", notice.reason);
}

#[tokio::test]
async fn wrong_content_is_fetched_once_more_then_refused() {
    let hub = Listener::start("127.0.0.1", |_| ok(b"9876543210")).await;
    let repo_id: RepoId = "acme/relu".parse().unwrap();
    let mut sink = Memory::default();
    let err = client(&hub.base)
        .download_blob(&request(&repo_id), &mut sink)
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        kernels_hub::BlobError::Sink(MemoryError("mismatch"))
    ));
    assert_eq!(hub.received().matches("GET ").count(), 2);
    assert!(sink.notices.is_empty());
}

#[tokio::test]
async fn content_already_held_costs_no_request() {
    let hub = Listener::start("127.0.0.1", |_| ok(CONTENT)).await;
    let repo_id: RepoId = "acme/relu".parse().unwrap();
    let mut sink = Memory {
        complete: true,
        ..Memory::default()
    };
    let done = client(&hub.base)
        .download_blob(&request(&repo_id), &mut sink)
        .await
        .unwrap();
    assert_eq!(done, Downloaded::Present);
    assert_eq!(hub.received(), "");
}

/// A CDN that refuses every signed URL (issue 24): the first file is asked
/// again once for a fresh URL, then the refusal is definitive and a later file
/// fails with it without a request, instead of each one being retried with
/// backoff.
#[tokio::test]
async fn a_cdn_refusal_is_asked_once_more_then_ends_every_download() {
    let cdn = Listener::start("localhost", |_| {
        Reply::Full("HTTP/1.1 403 Forbidden".into(), b"AccessDenied".to_vec())
    })
    .await;
    let cdn_base = cdn.base.clone();
    let hub = Listener::start("127.0.0.1", move |_| {
        Reply::Full(
            format!("HTTP/1.1 302 Found\r\nlocation: {cdn_base}/blob?X-Amz-Signature=s"),
            Vec::new(),
        )
    })
    .await;
    let client = client(&hub.base);
    let repo_id: RepoId = "acme/relu".parse().unwrap();
    let first = client
        .download_blob(&request(&repo_id), &mut Memory::default())
        .await
        .unwrap_err();
    let second = client
        .download_blob(&request(&repo_id), &mut Memory::default())
        .await
        .unwrap_err();
    for err in [&first, &second] {
        assert!(
            matches!(
                err,
                kernels_hub::BlobError::Hub(kernels_hub::error::HubError::Refused { .. })
            ),
            "{err:?}"
        );
    }
    assert_eq!(cdn.received().matches("GET ").count(), 2);
    assert_eq!(hub.received().matches("GET ").count(), 2);
}
