//! Rate limits: `RateLimit` preferred over `Retry-After`, the wait reported as
//! an event, a ceiling, and pacing when the quota is used up.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kernels_hub::{ClientConfig, EventSink, HubClient, HubEvent, RetryPolicy};
use kernels_types::RepoId;
use kernels_types::wire::RepoType;
use support::{Listener, json};

const REFS: &str = r#"{"branches":[],"converts":[],"tags":[]}"#;

fn client(endpoint: &str, max_wait: Duration) -> (HubClient, Arc<Mutex<Vec<HubEvent>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let client = HubClient::new(&ClientConfig {
        endpoint: endpoint.to_owned(),
        token: None,
        token_source: Default::default(),
        token_origin: None,
        network: Default::default(),
        offline: false,
        retry: RetryPolicy {
            max_retries: 2,
            max_wait,
            ..RetryPolicy::default()
        },
        events: Some(EventSink::new(move |e| {
            sink.lock().unwrap().push(e.clone())
        })),
    })
    .unwrap();
    (client, events)
}

fn relu() -> RepoId {
    "acme/relu".parse().unwrap()
}

#[tokio::test]
async fn ratelimit_header_wins_over_retry_after_and_is_reported() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let hub = Listener::start("127.0.0.1", move |_| {
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            json(
                "429 Too Many Requests",
                "retry-after: 100\r\nratelimit: \"api\";r=0;t=0\r\nratelimit-policy: \"fixed window\";\"api\";q=500;w=300",
                "{}",
            )
        } else {
            json("200 OK", "", REFS)
        }
    })
    .await;
    let (client, events) = client(&hub.base, Duration::from_secs(300));
    let started = Instant::now();
    client.list_refs(RepoType::Kernel, &relu()).await.unwrap();
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0].to_string(),
        "rate limited by the Hub, waiting 1 s (`api` quota: 500 requests per 300 s)"
    );
}

#[tokio::test]
async fn the_ceiling_bounds_the_wait() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let hub = Listener::start("127.0.0.1", move |_| {
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            json(
                "429 Too Many Requests",
                "ratelimit: \"api\";r=0;t=3000",
                "{}",
            )
        } else {
            json("200 OK", "", REFS)
        }
    })
    .await;
    let (client, events) = client(&hub.base, Duration::from_millis(300));
    let started = Instant::now();
    client.list_refs(RepoType::Kernel, &relu()).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(matches!(
        &events.lock().unwrap()[0],
        HubEvent::RateLimited { wait, .. } if *wait == Duration::from_millis(300)
    ));
}

#[tokio::test]
async fn requests_are_paced_when_the_quota_is_used_up() {
    let hub = Listener::start("127.0.0.1", |_| {
        json("200 OK", "ratelimit: \"api\";r=0;t=0", REFS)
    })
    .await;
    let (client, events) = client(&hub.base, Duration::from_secs(300));
    client.list_refs(RepoType::Kernel, &relu()).await.unwrap();
    assert!(events.lock().unwrap().is_empty());
    let started = Instant::now();
    client.list_refs(RepoType::Kernel, &relu()).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(800));
    let events = events.lock().unwrap();
    assert!(
        events[0]
            .to_string()
            .starts_with("rate limited by the Hub, waiting 1 s")
    );
}
