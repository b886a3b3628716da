//! Every read of the client is bounded: error bodies, JSON documents, the
//! time of one API exchange, pagination and redirects.

mod support;

use std::time::{Duration, Instant};

use kernels_hub::{ClientConfig, HubClient, HubError, RetryPolicy};
use kernels_types::RepoId;
use kernels_types::wire::RepoType;
use support::{Listener, Reply, json};

fn client(endpoint: &str, token: Option<&str>) -> HubClient {
    HubClient::new(&ClientConfig {
        endpoint: endpoint.to_owned(),
        token: token.map(str::to_owned),
        token_source: Default::default(),
        token_origin: None,
        network: Default::default(),
        offline: false,
        retry: RetryPolicy {
            max_retries: 0,
            api_timeout: Duration::from_secs(1),
            ..RetryPolicy::default()
        },
        events: None,
    })
    .unwrap()
}

fn relu() -> RepoId {
    "acme/relu".parse().unwrap()
}

#[tokio::test]
async fn endless_error_body_is_cut() {
    let hub = Listener::start("127.0.0.1", |_| {
        Reply::Endless("HTTP/1.1 500 Internal Server Error".into())
    })
    .await;
    let started = Instant::now();
    let err = client(&hub.base, None)
        .list_refs(RepoType::Kernel, &relu())
        .await
        .unwrap_err();
    assert!(matches!(err, HubError::Server { .. }), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    // Only a few KiB of the body are kept for the message.
    assert!(err.to_string().len() < 8 << 10);
}

#[tokio::test]
async fn endless_json_document_is_refused() {
    let hub = Listener::start("127.0.0.1", |_| Reply::Endless("HTTP/1.1 200 OK".into())).await;
    let mut policy = RetryPolicy {
        max_retries: 0,
        ..RetryPolicy::default()
    };
    policy.api_timeout = Duration::from_secs(30);
    let client = HubClient::new(&ClientConfig {
        endpoint: hub.base.clone(),
        token: None,
        token_source: Default::default(),
        token_origin: None,
        network: Default::default(),
        offline: false,
        retry: policy,
        events: None,
    })
    .unwrap();
    let err = client
        .list_refs(RepoType::Kernel, &relu())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("larger than 16 MiB"), "{err}");
}

#[tokio::test]
async fn trickled_listing_hits_the_exchange_deadline() {
    let hub = Listener::start("127.0.0.1", |_| {
        Reply::Trickle("HTTP/1.1 200 OK".into(), Duration::from_millis(100))
    })
    .await;
    let started = Instant::now();
    let err = client(&hub.base, None)
        .list_refs(RepoType::Kernel, &relu())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("within 1 s"), "{err}");
    assert!(matches!(
        err,
        HubError::Timeout {
            setting: "KERNELS_API_TIMEOUT",
            ..
        }
    ));
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn pagination_loop_ends() {
    let hub = Listener::start("127.0.0.1", |path| {
        let next = if path.contains("cursor=b") { "a" } else { "b" };
        json(
            "200 OK",
            &format!("link: </api/kernels/acme/relu/tree/main?cursor={next}>; rel=\"next\""),
            "[]",
        )
    })
    .await;
    let err = client(&hub.base, None)
        .list_tree(RepoType::Kernel, &relu(), "main", "", true)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("pagination loop"), "{err}");
    // A → B → A: three requests, the repeated page is not fetched again.
    assert_eq!(hub.received().matches("GET ").count(), 3);
}

#[tokio::test]
async fn next_link_to_another_host_is_not_followed() {
    let other = Listener::start("localhost", |_| json("200 OK", "", "[]")).await;
    let next = format!("{}/steal?page=2", other.base);
    let hub = Listener::start("127.0.0.1", move |_| {
        json("200 OK", &format!("link: <{next}>; rel=\"next\""), "[]")
    })
    .await;
    let err = client(&hub.base, Some("hf_secret_token"))
        .list_tree(RepoType::Kernel, &relu(), "main", "", true)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("leaves the Hub"), "{err}");
    assert_eq!(other.received(), "");
    assert!(hub.received().contains("hf_secret_token"));
}

#[tokio::test]
async fn redirect_loop_ends() {
    let hub = Listener::start("127.0.0.1", |path| {
        let to = if path.starts_with("/a") { "/b" } else { "/a" };
        Reply::Full(format!("HTTP/1.1 302 Found\r\nlocation: {to}"), Vec::new())
    })
    .await;
    let client = client(&hub.base, None);
    let err = client
        .get_document(&format!("{}/a", hub.base), None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("redirect loop"), "{err}");
    assert_eq!(hub.received().matches("GET ").count(), 11);
}

#[tokio::test]
async fn server_text_is_escaped_and_signed_urls_redacted() {
    let cdn = Listener::start("localhost", |_| {
        json(
            "403 Forbidden",
            "",
            "{\"error\":\"\\u001b[2J\\u001b]0;pwned\\u0007\\r\\nDownloaded everything\"}",
        )
    })
    .await;
    let to = format!(
        "{}/lfs/abc?X-Amz-Algorithm=AWS4&X-Amz-Signature=0123secret&X-Amz-Expires=3600",
        cdn.base
    );
    let hub = Listener::start("127.0.0.1", move |_| {
        Reply::Full(format!("HTTP/1.1 302 Found\r\nlocation: {to}"), Vec::new())
    })
    .await;
    let client = client(&hub.base, None);
    let err = client
        .get_document(&format!("{}/x", hub.base), None)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(!text.chars().any(char::is_control), "{text:?}");
    assert!(
        text.contains("\\u{1b}[2J") && text.contains("\\r\\nDownloaded"),
        "{text}"
    );
    assert!(
        !text.contains("0123secret") && text.contains("/lfs/abc?…"),
        "{text}"
    );
}

#[tokio::test]
async fn ref_names_with_control_characters_are_refused() {
    let hub = Listener::start("127.0.0.1", |_| {
        json(
            "200 OK",
            "",
            r#"{"branches":[{"name":"v1\u001b[2J","ref":"refs/heads/v1","targetCommit":"0000000000000000000000000000000000000000"}],"tags":[]}"#,
        )
    })
    .await;
    let err = client(&hub.base, None)
        .list_refs(RepoType::Kernel, &relu())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("control characters") && !text.contains('\u{1b}'),
        "{text}"
    );
}
