//! `kernels download` against every fault `kernels serve --test-control` can
//! inject (hub-protocol spec §4.5): each test asserts the outcome (success
//! after a retry, or a clear error) and that the cache holds no unverified byte
//! afterwards ([`assert_cache_verified`]).

use std::time::{Duration, Instant};

use kernels_types::digest::sha256;
use serde_json::{Value, json};

use kernels_test_support::{
    GELU_SHA, RELU_SHA, TestContext, assert_cache_verified, assert_layout, assert_ok, cdn_requests,
    gelu_files, hex, relu_files, resolve_requests, snapshot, stderr, variants,
};

/// Short timeouts so that faults are detected quickly.
const FAST: &[(&str, &str)] = &[
    ("HF_HUB_DOWNLOAD_TIMEOUT", "2"),
    ("HF_HUB_ETAG_TIMEOUT", "2"),
    ("KERNELS_API_TIMEOUT", "2"),
    ("KERNELS_STALL_TIMEOUT", "1"),
];

fn gelu_world() -> TestContext {
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    world
}

/// `--variant torch-cuda` of acme/gelu: one 50 kB LFS file served by the CDN.
fn gelu(world: &TestContext, env: &[(&str, &str)]) -> std::process::Output {
    let mut all = FAST.to_vec();
    all.extend_from_slice(env);
    world.download_with(&["--variant", "torch-cuda"], &all)
}

fn assert_gelu_done(world: &TestContext) {
    assert_layout(
        &world.repo_dir("kernel", "acme/gelu"),
        GELU_SHA,
        &gelu_files()[1..],
    );
    assert_cache_verified(&world.cache);
}

/// Asserts exit 1 and snapshots the transcript as `name`.
fn assert_fails(name: &str, out: &std::process::Output) {
    assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
    snapshot!(name, out);
}

fn so() -> kernels_test_support::MirrorFile {
    gelu_files()[1].clone()
}

/// Leaves `bytes` bytes of the gelu `.so` in `blobs/<etag>.incomplete` (a run
/// whose only attempt is truncated).
fn leave_partial(world: &TestContext, bytes: u64) -> u64 {
    world.fault(json!({"listener": "cdn", "count": 1, "truncate_after_bytes": bytes}));
    let out = gelu(world, &[("KERNELS_MAX_RETRIES", "0")]);
    assert_fails(&format!("partial_after_{bytes}"), &out);
    let partial = world
        .repo_dir("kernel", "acme/gelu")
        .join("blobs")
        .join(format!("{}.incomplete", so().etag()));
    let kept = fs_err::metadata(&partial).unwrap().len();
    assert_eq!(kept, bytes);
    assert_cache_verified(&world.cache);
    world.reset();
    kept
}

#[test]
fn latency_beyond_the_timeouts_is_retried() {
    // API call: KERNELS_API_TIMEOUT bounds the whole tree-listing exchange.
    // (A request abandoned by the client is never logged by the server, so the
    // proof is the time taken: far less than the injected latency.)
    let world = gelu_world();
    world.fault(json!({"path": "/api/*/tree/*", "count": 1, "latency_ms": 4000}));
    let started = Instant::now();
    assert_ok(&gelu(&world, &[("KERNELS_API_TIMEOUT", "0.3")]));
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_gelu_done(&world);

    // File GET: HF_HUB_DOWNLOAD_TIMEOUT bounds the wait for the headers.
    let world = gelu_world();
    world.fault(json!({"listener": "cdn", "count": 1, "latency_ms": 4000}));
    let started = Instant::now();
    assert_ok(&gelu(&world, &[("HF_HUB_DOWNLOAD_TIMEOUT", "0.3")]));
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_gelu_done(&world);

    // Always too slow: a clear error naming the setting.
    let world = gelu_world();
    world.fault(json!({"listener": "cdn", "latency_ms": 1000}));
    let out = gelu(
        &world,
        &[
            ("HF_HUB_DOWNLOAD_TIMEOUT", "0.2"),
            ("KERNELS_MAX_RETRIES", "1"),
        ],
    );
    // Not a snapshot: the 0.2 s run out either on the Hub's resolve request
    // ("no response within 0.2s") or on the CDN hop after its redirect ("cannot
    // reach …: error sending request"), whichever the timing gives, for each
    // attempt. The last error's parts are checked instead: the kernel, and a
    // help line naming HF_HUB_DOWNLOAD_TIMEOUT.
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("acme/gelu@2222222: kernels::hub::")),
        "{err}"
    );
    let help = err
        .lines()
        .rev()
        .find_map(|l| l.trim_start().strip_prefix("help: "))
        .unwrap_or_else(|| panic!("no help line:\n{err}"));
    assert!(
        help.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|word| word == "HF_HUB_DOWNLOAD_TIMEOUT"),
        "{err}"
    );
    assert_cache_verified(&world.cache);
}

#[test]
fn stalled_body_is_resumed_by_the_watchdog() {
    let world = gelu_world();
    world.fault(
        json!({"listener": "cdn", "count": 1, "stall_after_bytes": {"n": 20000, "ms": 5000}}),
    );
    let started = Instant::now();
    assert_ok(&gelu(&world, &[("KERNELS_STALL_TIMEOUT", "0.5")]));
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "watchdog too slow"
    );
    let log = world.requests();
    let cdn = cdn_requests(&log);
    assert_eq!(cdn.len(), 2, "{cdn:#?}");
    assert_eq!(cdn[1]["headers"]["range"], "bytes=20000-");
    assert_eq!(cdn[1]["status"], 206);
    assert_gelu_done(&world);

    let world = gelu_world();
    world.fault(json!({"listener": "cdn", "stall_after_bytes": {"n": 1000, "ms": 5000}}));
    let out = gelu(
        &world,
        &[
            ("KERNELS_STALL_TIMEOUT", "0.3"),
            ("KERNELS_MAX_RETRIES", "1"),
        ],
    );
    // "no data received", naming KERNELS_STALL_TIMEOUT.
    assert_fails("stalled_body", &out);
    assert_cache_verified(&world.cache);
}

#[test]
fn throttled_transfer_completes() {
    let world = gelu_world();
    world.fault(json!({"listener": "cdn", "throttle_bps": 200_000}));
    let started = Instant::now();
    assert_ok(&gelu(&world, &[]));
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(cdn_requests(&world.requests()).len(), 1);
    assert_gelu_done(&world);
}

#[test]
fn status_presets_are_retried_then_reported() {
    let world = gelu_world();
    for code in [408, 500, 502, 503, 504] {
        fs_err::remove_dir_all(&world.cache).ok();
        world.reset();
        world.fault(json!({"listener": "cdn", "count": 1, "status": code}));
        assert_ok(&gelu(&world, &[]));
        assert_eq!(cdn_requests(&world.requests()).len(), 2, "status {code}");
        assert_gelu_done(&world);
    }
    // On an API call too.
    fs_err::remove_dir_all(&world.cache).ok();
    world.reset();
    world.fault(json!({"path": "/api/*/tree/*", "count": 1, "status": 502}));
    assert_ok(&gelu(&world, &[]));
    assert_gelu_done(&world);

    // A persistent failure: the retry budget is spent, then the status is named.
    fs_err::remove_dir_all(&world.cache).ok();
    world.reset();
    world.fault(json!({"listener": "cdn", "status": 500}));
    let out = gelu(&world, &[("KERNELS_MAX_RETRIES", "2")]);
    assert_fails("persistent_500", &out);
    assert_eq!(cdn_requests(&world.requests()).len(), 3);
    assert_cache_verified(&world.cache);

    // Not retryable: a 404 is reported at once.
    fs_err::remove_dir_all(&world.cache).ok();
    world.reset();
    world.fault(json!({"listener": "cdn", "status": 404}));
    assert_fails("cdn_404", &gelu(&world, &[]));
    assert_eq!(cdn_requests(&world.requests()).len(), 1);
    assert_cache_verified(&world.cache);
}

#[test]
fn rate_limit_waits_for_retry_after() {
    let world = gelu_world();
    world.fault(json!({"listener": "cdn", "count": 1, "rate_limit": {"retry_after_s": 1}}));
    let started = Instant::now();
    assert_ok(&gelu(&world, &[]));
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(cdn_requests(&world.requests()).len(), 2);
    assert_gelu_done(&world);

    // The IETF RateLimit header alone gives the wait too.
    let world = gelu_world();
    world.fault(json!({"listener": "cdn", "count": 1,
        "rate_limit": {"ratelimit": "\"api\";r=0;t=1", "policy": "\"api\";q=100;w=300"}}));
    let started = Instant::now();
    let out = gelu(&world, &[]);
    assert_ok(&out);
    // t + 1 seconds, as huggingface_hub waits, announced on stderr.
    assert!(started.elapsed() >= Duration::from_secs(2));
    // The durations of this line are what the test is about and the snapshot
    // filters mask them as `[TIME]`: the line is checked exactly as well.
    let err = stderr(&out);
    let waits: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("rate limited by the Hub"))
        .collect();
    assert_eq!(
        waits,
        ["rate limited by the Hub, waiting 2 s (`api` quota: 100 requests per 300 s)"],
        "{err}"
    );
    snapshot!("rate_limit_header_wait", out);
    assert_gelu_done(&world);
}

#[test]
fn truncated_body_resumes_with_range_and_if_range() {
    let world = gelu_world();
    world.fault(json!({"listener": "cdn", "count": 1, "truncate_after_bytes": 20000}));
    assert_ok(&gelu(&world, &[]));
    let log = world.requests();
    let cdn = cdn_requests(&log);
    assert_eq!(cdn.len(), 2, "{cdn:#?}");
    assert_eq!(cdn[1]["headers"]["range"], "bytes=20000-");
    assert!(cdn[1]["headers"]["if-range"].is_string(), "{:#?}", cdn[1]);
    assert_eq!(cdn[1]["status"], 206);
    assert_eq!(cdn[1]["bytes"], so().content.len() as u64 - 20000);
    assert_gelu_done(&world);

    // Across runs: the partial data is continued by the next run.
    let world = gelu_world();
    let kept = leave_partial(&world, 30000);
    let blob = world
        .repo_dir("kernel", "acme/gelu")
        .join("blobs")
        .join(so().etag());
    assert!(!blob.exists());
    assert_ok(&gelu(&world, &[]));
    let log = world.requests();
    let cdn = cdn_requests(&log);
    assert_eq!(cdn.len(), 1);
    assert_eq!(cdn[0]["headers"]["range"], format!("bytes={kept}-"));
    assert_eq!(
        cdn[0]["headers"]["if-range"],
        format!("\"{}\"", so().etag())
    );
    assert_gelu_done(&world);

    // Truncated every time: a clear error, no blob and no link.
    let world = gelu_world();
    world.fault(json!({"listener": "cdn", "truncate_after_bytes": 10000}));
    assert_fails(
        "truncated_every_time",
        &gelu(&world, &[("KERNELS_MAX_RETRIES", "1")]),
    );
    let repo = world.repo_dir("kernel", "acme/gelu");
    assert!(!repo.join("blobs").join(so().etag()).exists());
    assert!(
        !repo
            .join("snapshots")
            .join(GELU_SHA)
            .join(&so().path)
            .exists()
    );
    assert_cache_verified(&world.cache);
}

#[test]
fn corrupt_body_restarts_once_then_names_both_digests() {
    let world = gelu_world();
    world.fault(json!({"listener": "cdn", "count": 1, "corrupt": {"offset": 100}}));
    assert_ok(&gelu(&world, &[]));
    let cdn_log = world.requests();
    let cdn = cdn_requests(&cdn_log);
    assert_eq!(cdn.len(), 2);
    assert!(
        cdn[1]["headers"].get("range").is_none(),
        "restart is from zero"
    );
    assert_gelu_done(&world);

    let world = gelu_world();
    world.fault(json!({"listener": "cdn", "corrupt": {"offset": 100, "xor": 1}}));
    let mut bad = so().content;
    bad[100] ^= 1;
    let out = gelu(&world, &[]);
    // The file, its expected and its received digest.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (expected, received) = (so().etag(), hex(&sha256(&bad)));
    snapshot!(
        "corrupt_body",
        out,
        &[(&expected, "[EXPECTED]"), (&received, "[RECEIVED]")]
    );
    assert_eq!(cdn_requests(&world.requests()).len(), 2);
    assert_cache_verified(&world.cache);
}

#[test]
fn wrong_content_length_is_caught_and_retried() {
    for delta in [-5, 5] {
        let world = gelu_world();
        world.fault(
            json!({"listener": "cdn", "count": 1, "wrong_content_length": {"delta": delta}}),
        );
        assert_ok(&gelu(&world, &[]));
        assert_eq!(cdn_requests(&world.requests()).len(), 2, "delta {delta}");
        assert_gelu_done(&world);
    }
    let world = gelu_world();
    world.fault(json!({"listener": "cdn", "wrong_content_length": {"delta": -5}}));
    // Names the file and its expected digest.
    assert_fails("short_content_length", &gelu(&world, &[]));
    assert_cache_verified(&world.cache);
}

#[test]
fn dropped_headers_do_not_matter() {
    let world = TestContext::world();
    let relu = relu_files();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu)]);
    world.fault(json!({"drop_headers":
        ["content-length", "etag", "x-repo-commit", "x-linked-etag", "x-linked-size", "accept-ranges"]}));
    let mut env = FAST.to_vec();
    env.push(("KERNELS_MAX_RETRIES", "0"));
    assert_ok(&world.download_with(&["--variant", "torch-cuda"], &env));
    let cuda = variants(&relu).remove("torch-cuda").unwrap();
    assert_layout(&world.repo_dir("kernel", "acme/relu"), RELU_SHA, &cuda);
    assert_cache_verified(&world.cache);
}

#[test]
fn ignored_range_restarts_from_zero() {
    let world = gelu_world();
    let kept = leave_partial(&world, 20000);
    world.fault(json!({"listener": "cdn", "ignore_range": true}));
    assert_ok(&gelu(&world, &[]));
    let log = world.requests();
    let cdn = cdn_requests(&log);
    assert_eq!(cdn.len(), 1);
    assert_eq!(cdn[0]["headers"]["range"], format!("bytes={kept}-"));
    assert_eq!(cdn[0]["status"], 200);
    assert_gelu_done(&world);
}

#[test]
fn range_416_restarts_from_zero_or_is_reported() {
    let world = gelu_world();
    let kept = leave_partial(&world, 20000);
    world.fault(json!({"listener": "cdn", "count": 1, "range_416": true}));
    assert_ok(&gelu(&world, &[]));
    let log = world.requests();
    let cdn = cdn_requests(&log);
    assert_eq!(cdn.len(), 2, "{cdn:#?}");
    assert_eq!(cdn[0]["headers"]["range"], format!("bytes={kept}-"));
    assert_eq!(cdn[0]["status"], 416);
    assert!(cdn[1]["headers"].get("range").is_none());
    assert_eq!(cdn[1]["status"], 200);
    assert_gelu_done(&world);

    let world = gelu_world();
    world.fault(json!({"listener": "cdn", "range_416": true}));
    assert_fails("range_416", &gelu(&world, &[]));
    assert_cache_verified(&world.cache);
}

#[test]
fn serve_honours_if_range() {
    let world = TestContext::world();
    let readme = &relu_files()[0];
    let url = format!(
        "{}/kernels/acme/relu/resolve/{RELU_SHA}/README.md",
        world.server.endpoint
    );
    let get = |if_range: &str| -> (u16, Vec<u8>) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let resp = reqwest::Client::new()
                    .get(&url)
                    .header("range", "bytes=2-")
                    .header("if-range", if_range)
                    .send()
                    .await
                    .unwrap();
                let status = resp.status().as_u16();
                (status, resp.bytes().await.unwrap().to_vec())
            })
    };
    let etag = format!("\"{}\"", readme.etag());
    assert_eq!(get(&etag), (206, readme.content[2..].to_vec()));
    assert_eq!(get("\"0000\""), (200, readme.content.clone()));
    assert_eq!(get(&format!("W/{etag}")), (200, readme.content.clone()));
}

#[test]
fn gzip_encoded_body_is_decoded_and_verified() {
    let world = gelu_world();
    world.fault(json!({"listener": "cdn", "gzip": true}));
    assert_ok(&gelu(&world, &[]));
    assert_gelu_done(&world);

    // A gzip answer to a resume request is a whole body: restart, never splice.
    let world = gelu_world();
    leave_partial(&world, 20000);
    world.fault(json!({"listener": "cdn", "gzip": true}));
    assert_ok(&gelu(&world, &[]));
    assert_gelu_done(&world);
}

#[test]
fn extra_redirects_are_followed_and_loops_reported() {
    let world = gelu_world();
    let so_path = format!("/kernels/acme/gelu/resolve/{GELU_SHA}/{}", so().path);
    world.fault(json!({"listener": "hub", "path": so_path, "count": 2, "redirect": {"code": 307}}));
    assert_ok(&gelu(&world, &[]));
    assert_eq!(resolve_requests(&world.requests()).len(), 3);
    assert_gelu_done(&world);

    // Absolute same-host redirect.
    let world = gelu_world();
    let to = format!("{}{so_path}", world.server.endpoint);
    world.fault(json!({"listener": "hub", "path": so_path, "count": 1, "redirect": {"code": 302, "to": to}}));
    assert_ok(&gelu(&world, &[]));
    assert_gelu_done(&world);

    // A loop fails at once (not retried) with a clear error.
    let world = gelu_world();
    world.fault(json!({"listener": "hub", "path": so_path, "redirect": {}}));
    let out = gelu(&world, &[]);
    assert_fails("redirect_loop", &out);
    assert!(resolve_requests(&world.requests()).len() <= 11);
    assert_cache_verified(&world.cache);
}

const MOVED_SHA: &str = "3333333333333333333333333333333333333333";

#[test]
fn moved_branch_does_not_change_a_locked_download() {
    // acme/relu gets a second commit; the lock pins the first.
    let world = TestContext::world_with(|mirror| {
        let dir = mirror.join("repos/kernels/acme/relu");
        let tree = dir.join("commits/c2/tree/build/torch-cuda/relu");
        fs_err::create_dir_all(&tree).unwrap();
        fs_err::write(tree.join("__init__.py"), "moved = True\n").unwrap();
        fs_err::write(
            dir.join("commits/c2/commit.toml"),
            format!("sha = \"{MOVED_SHA}\"\n"),
        )
        .unwrap();
        fs_err::write(
            dir.join("repo.toml"),
            "commits = [\"c1\", \"c2\"]\nalso_serve_as = [\"model\"]\nlfs = [\"*.so\"]\n\n[branches]\nmain = \"c1\"\n",
        )
        .unwrap();
    });
    let relu = relu_files();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu)]);
    world.fault(json!({"path": "/api/*/tree/*", "count": 1,
        "move_ref": {"repo": "acme/relu", "ref": "main", "to_commit": MOVED_SHA}}));
    let mut env = FAST.to_vec();
    env.push(("KERNELS_MAX_RETRIES", "0"));
    assert_ok(&world.download_with(&["--variant", "torch-cuda"], &env));
    let cuda = variants(&relu).remove("torch-cuda").unwrap();
    let repo = world.repo_dir("kernel", "acme/relu");
    assert_layout(&repo, RELU_SHA, &cuda);
    assert!(!repo.join("snapshots").join(MOVED_SHA).exists());
    assert_cache_verified(&world.cache);
    // The branch did move while the download ran.
    let refs: Value = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            reqwest::get(format!(
                "{}/api/kernels/acme/relu/refs",
                world.server.endpoint
            ))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
        });
    assert_eq!(refs["branches"][0]["targetCommit"], MOVED_SHA, "{refs}");
}

#[test]
fn cdn_rejects_auth_and_the_token_never_reaches_it() {
    let world = gelu_world();
    assert_ok(&gelu(&world, &[]));
    let log = world.requests();
    let cdn = cdn_requests(&log);
    assert_eq!(cdn.len(), 1);
    assert_eq!(cdn[0]["authorization"], false);
    assert!(
        log.iter().any(|r| r["authorization"] == true),
        "the token was sent to the Hub"
    );
    assert_gelu_done(&world);
}

#[test]
fn expired_cdn_url_is_resolved_again() {
    let world = gelu_world();
    world.fault(json!({"listener": "cdn", "count": 1, "cdn_expire_urls": true}));
    assert_ok(&gelu(&world, &[]));
    let log = world.requests();
    assert_eq!(cdn_requests(&log).len(), 2);
    assert_eq!(resolve_requests(&log).len(), 2, "a fresh URL is asked for");
    assert_gelu_done(&world);

    let world = gelu_world();
    world.fault(json!({"listener": "cdn", "cdn_expire_urls": true}));
    let out = gelu(&world, &[("KERNELS_MAX_RETRIES", "1")]);
    assert_fails("expired_cdn_urls", &out);
    assert_cache_verified(&world.cache);
}

#[test]
fn xet_headers_are_ignored() {
    let world = TestContext::world();
    let relu = relu_files();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu)]);
    world.fault(json!({"listener": "hub", "xet_headers": true}));
    let mut env = FAST.to_vec();
    env.push(("KERNELS_MAX_RETRIES", "0"));
    assert_ok(&world.download_with(&["--variant", "torch-cuda"], &env));
    let cuda = variants(&relu).remove("torch-cuda").unwrap();
    assert_layout(&world.repo_dir("kernel", "acme/relu"), RELU_SHA, &cuda);
    assert_cache_verified(&world.cache);
}

#[test]
fn reset_connection_is_retried() {
    let world = gelu_world();
    world.fault(json!([
        {"listener": "cdn", "count": 1, "reset_connection": true},
        {"path": "/api/*/tree/*", "count": 1, "reset_connection": true}
    ]));
    assert_ok(&gelu(&world, &[]));
    assert_eq!(cdn_requests(&world.requests()).len(), 2);
    assert_gelu_done(&world);
}

#[test]
fn disabled_route_or_unreachable_server_is_a_clear_error() {
    let world = gelu_world();
    world.fault(json!({"path": "/api/*/tree/*", "disable_route": true}));
    let out = gelu(&world, &[]);
    assert_fails("disabled_tree_route", &out);
    assert!(resolve_requests(&world.requests()).is_empty());
    assert_cache_verified(&world.cache);

    // Connection refused: retried within the budget, then reported.
    let tmp = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    fs_err::write(
        tmp.path().join("kernels.lock"),
        fs_err::read(world.project.join("kernels.lock")).unwrap(),
    )
    .unwrap();
    let out = kernels_test_support::kernels(&closed, &tmp.path().join("cache"))
        .arg("download")
        .arg(tmp.path())
        .args(["--variant", "torch-cuda"])
        .env("KERNELS_MAX_RETRIES", "1")
        .output()
        .unwrap();
    assert_fails("connection_refused", &out);
    assert_cache_verified(&tmp.path().join("cache"));
}
