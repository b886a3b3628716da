//! Status codes read as the Hub means them.

mod support;

use std::time::Duration;

use kernels_hub::{ClientConfig, HubClient, HubError, RetryPolicy};
use kernels_types::RepoId;
use kernels_types::wire::RepoType;
use miette::Diagnostic;
use support::{Listener, json};

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
            api_timeout: Duration::from_secs(5),
            ..RetryPolicy::default()
        },
        events: None,
    })
    .unwrap()
}

fn relu() -> RepoId {
    "acme/relu".parse().unwrap()
}

async fn refs_error(status: &str, headers: &str, body: &str, token: Option<&str>) -> HubError {
    let (status, headers, body) = (status.to_owned(), headers.to_owned(), body.to_owned());
    let hub = Listener::start("127.0.0.1", move |_| json(&status, &headers, &body)).await;
    client(&hub.base, token)
        .list_refs(RepoType::Kernel, &relu())
        .await
        .unwrap_err()
}

#[tokio::test]
async fn anonymous_401_without_code_is_repo_not_found() {
    let body = r#"{"error":"Repository not found"}"#;
    let err = refs_error("401 Unauthorized", "", body, None).await;
    assert!(matches!(err, HubError::RepoNotFound { .. }), "{err}");
    let help = err.help().unwrap().to_string();
    assert!(
        help.contains("HF_TOKEN") && help.contains("private"),
        "{help}"
    );
    // With a token, a bare 401 means the token is bad.
    let err = refs_error("401 Unauthorized", "", body, Some("hf_x")).await;
    assert!(matches!(err, HubError::Unauthorized { .. }), "{err}");
    // Bad credentials stay an authentication failure even when anonymous.
    let bad = r#"{"error":"Invalid credentials in Authorization header"}"#;
    let err = refs_error("401 Unauthorized", "", bad, None).await;
    assert!(matches!(err, HubError::Unauthorized { .. }), "{err}");
}

#[tokio::test]
async fn forbidden_gated_and_not_found() {
    let err = refs_error("403 Forbidden", "", "{}", Some("hf_x")).await;
    assert!(matches!(err, HubError::Forbidden { .. }), "{err}");
    assert!(err.help().unwrap().to_string().contains("lacks permission"));

    for status in ["401 Unauthorized", "403 Forbidden"] {
        let err = refs_error(status, "x-error-code: GatedRepo", "{}", None).await;
        assert!(matches!(err, HubError::Gated { .. }), "{status}: {err}");
    }

    let err = refs_error("404 Not Found", "", "{}", Some("hf_x")).await;
    assert!(matches!(err, HubError::RepoNotFound { .. }), "{err}");
    let err = refs_error(
        "404 Not Found",
        "x-error-code: RepoNotFound",
        "{}",
        Some("hf_x"),
    )
    .await;
    assert!(matches!(err, HubError::RepoNotFound { .. }), "{err}");
}

/// A failure of a request that carried a token never says to set one: it
/// names where the token came from (never the token) and what to check.
#[tokio::test]
async fn access_advice_follows_whether_a_token_was_sent() {
    let cases = [
        ("404 Not Found", "x-error-code: RepoNotFound"),
        ("401 Unauthorized", ""),
        ("403 Forbidden", ""),
        ("403 Forbidden", "x-error-code: GatedRepo"),
    ];
    for (status, headers) in cases {
        let (status_s, headers_s) = (status.to_owned(), headers.to_owned());
        let hub = Listener::start("127.0.0.1", move |_| json(&status_s, &headers_s, "{}")).await;
        let client = HubClient::new(&ClientConfig {
            endpoint: hub.base.clone(),
            token: Some("hf_SeCrEt".to_owned()),
            token_source: Default::default(),
            token_origin: Some("HF_TOKEN".to_owned()),
            network: Default::default(),
            offline: false,
            retry: RetryPolicy {
                max_retries: 0,
                api_timeout: Duration::from_secs(5),
                ..RetryPolicy::default()
            },
            events: None,
        })
        .unwrap();
        let err = client
            .list_refs(RepoType::Kernel, &relu())
            .await
            .unwrap_err();
        let help = err.help().unwrap().to_string();
        assert!(
            help.contains("the token from HF_TOKEN was sent"),
            "{status} {headers}: {help}"
        );
        assert!(!help.contains("set HF_TOKEN"), "{status} {headers}: {help}");
        assert!(!help.contains("SeCrEt"), "{help}");
    }
    // Anonymous: set one.
    let err = refs_error("404 Not Found", "x-error-code: RepoNotFound", "{}", None).await;
    assert!(
        err.help().unwrap().to_string().contains("set HF_TOKEN"),
        "{err}"
    );
}
