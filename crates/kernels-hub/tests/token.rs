//! The token goes to the Hub's own origins only, hop by hop.

mod support;

use std::time::Duration;

use kernels_hub::{ClientConfig, HubClient, RetryPolicy};
use support::{Listener, Reply};
use url::Url;

const TOKEN: &str = "hf_very_secret_token";

fn client(endpoint: &str) -> HubClient {
    HubClient::new(&ClientConfig {
        endpoint: endpoint.to_owned(),
        token: Some(TOKEN.to_owned()),
        token_source: Default::default(),
        token_origin: None,
        network: Default::default(),
        offline: false,
        retry: RetryPolicy {
            max_retries: 0,
            api_timeout: Duration::from_secs(5),
            ..RetryPolicy::default()
        },
        events: None,
    })
    .unwrap()
}

#[tokio::test]
async fn redirect_to_another_host_drops_the_token() {
    let cdn = Listener::start("localhost", |_| {
        Reply::Full("HTTP/1.1 200 OK".into(), b"content".to_vec())
    })
    .await;
    let to = format!("{}/lfs/abc?X-Amz-Signature=s", cdn.base);
    let hub = Listener::start("127.0.0.1", move |path| {
        if path.starts_with("/hop") {
            Reply::Full(format!("HTTP/1.1 302 Found\r\nlocation: {to}"), Vec::new())
        } else {
            Reply::Full(
                "HTTP/1.1 307 Temporary Redirect\r\nlocation: /hop".into(),
                Vec::new(),
            )
        }
    })
    .await;
    let client = client(&hub.base);
    let url = format!("{}/kernels/acme/relu/resolve/main/x.so", hub.base);
    let body = client.get_document(&url, None).await.unwrap();
    assert_eq!(body, b"content");
    // Both Hub hops carried it (a same-origin redirect keeps it) ...
    assert_eq!(hub.received().matches(TOKEN).count(), 2);
    // ... the CDN saw not a byte of it.
    let seen = cdn.received();
    assert!(seen.contains("GET /lfs/abc"), "{seen}");
    assert!(!seen.contains(TOKEN) && !seen.to_ascii_lowercase().contains("authorization"));
}

#[test]
fn hub_origins_are_huggingface_hub_s() {
    let client = client("https://huggingface.co");
    let hub = |u: &str| client.is_hub_origin(&Url::parse(u).unwrap());
    assert!(hub("https://huggingface.co/api/models/x"));
    assert!(hub("https://hf.co/acme/x/resolve/main/a"));
    assert!(hub("https://hub-ci.huggingface.co/x"));
    assert!(!hub("http://huggingface.co/x"));
    assert!(!hub("https://huggingface.co:8443/x"));
    assert!(!hub("https://cdn-lfs.hf.co/repos/x"));
    assert!(!hub("https://cas-bridge.xethub.hf.co/x"));
    assert!(!hub("https://huggingface.co.evil.example/x"));
    let mirror = self::client("http://127.0.0.1:8080/");
    assert!(mirror.is_hub_origin(&Url::parse("http://127.0.0.1:8080/api").unwrap()));
    assert!(!mirror.is_hub_origin(&Url::parse("http://localhost:8080/api").unwrap()));
}
