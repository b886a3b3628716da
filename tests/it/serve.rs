//! Integration tests for `kernels serve`: a small mirror built in a temporary
//! directory, served by the real binary, queried over HTTP and with unmodified
//! `huggingface_hub` releases.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use sha1::{Digest, Sha1};
use sha2::Sha256;

use kernels_test_support::{self as common, Server, snapshot};

const C1: &str = "1111111111111111111111111111111111111111";

/// Writes a file, creating its parent folders.
fn write(path: &Path, bytes: &[u8]) {
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, bytes).unwrap();
}

/// Deterministic filler bytes for "binary" files.
fn filler(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt))
        .collect()
}

fn git_sha1(bytes: &[u8]) -> String {
    let mut h = Sha1::new();
    h.update(format!("blob {}\0", bytes.len()));
    h.update(bytes);
    hex::encode(h.finalize())
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn synthetic(seed: u64, size: usize) -> Vec<u8> {
    let mut buf = vec![0u8; size];
    kernels_serve::content::synthetic_fill(seed, 0, &mut buf);
    buf
}

/// Expected digests of one file.
#[derive(Debug, Clone)]
struct Expected {
    bytes: Vec<u8>,
    oid: String,
    sha256: Option<String>,
}

fn expected(bytes: Vec<u8>, lfs: bool) -> Expected {
    if lfs {
        let sha = sha256(&bytes);
        let pointer = format!(
            "version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize {}\n",
            bytes.len()
        );
        Expected {
            oid: git_sha1(pointer.as_bytes()),
            sha256: Some(sha),
            bytes,
        }
    } else {
        Expected {
            oid: git_sha1(&bytes),
            sha256: None,
            bytes,
        }
    }
}

/// A mirror with `acme/relu` (kernel, also a model; c1 and c2), a private and a
/// gated kernel repo, a model-only repo and two organizations.
struct TestMirror {
    dir: tempfile::TempDir,
    /// Files of `acme/relu` at c1 (`v1`).
    c1: BTreeMap<String, Expected>,
    /// Files of `acme/relu` at c2 (`main`).
    c2: BTreeMap<String, Expected>,
}

impl TestMirror {
    fn new() -> TestMirror {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let relu = root.join("repos/kernels/acme/relu");
        write(
            &relu.join("repo.toml"),
            br#"commits = ["c1", "c2"]
also_serve_as = ["model"]

[branches]
main = "c2"
v1 = "c1"
"feature/x" = "c2"

[tags]
"v1.0.0" = "c1"
"v1" = "c2"

[pull_requests]
"1" = "c2"

[synthetic]
"c1:build/torch-cuda/relu/_data.bin" = { size = 200003, seed = 11, lfs = true }
"c2:big.bin" = { size = 300001, seed = 7, lfs = true }
"#,
        );
        write(
            &relu.join("commits/c1/commit.toml"),
            format!("sha = \"{C1}\"\ntitle = \"First\"\ndate = \"2025-05-21T10:00:00Z\"\n")
                .as_bytes(),
        );
        let metadata = br#"{"python-depends": []}"#.to_vec();
        let mut c1: BTreeMap<String, Expected> = BTreeMap::new();
        let add = |map: &mut BTreeMap<String, Expected>,
                   commit: &str,
                   path: &str,
                   bytes: Vec<u8>,
                   lfs: bool| {
            write(
                &relu.join("commits").join(commit).join("tree").join(path),
                &bytes,
            );
            map.insert(path.to_owned(), expected(bytes, lfs));
        };
        let attrs = b"*.so filter=lfs diff=lfs merge=lfs -text\n".to_vec();
        for (path, bytes, lfs) in [
            (".gitattributes", attrs.clone(), false),
            ("README.md", b"# relu\nfirst\n".to_vec(), false),
            ("build/torch-cuda/metadata.json", metadata.clone(), false),
            (
                "build/torch-cuda/relu/__init__.py",
                b"from ._ops import ops\n".to_vec(),
                false,
            ),
            ("build/torch-cuda/relu/_ops.abi3.so", filler(3000, 1), true),
            ("build/torch-cpu/metadata.json", metadata.clone(), false),
            (
                "build/torch-cpu/relu/__init__.py",
                b"# cpu\n".to_vec(),
                false,
            ),
        ] {
            add(&mut c1, "c1", path, bytes, lfs);
        }
        c1.insert(
            "build/torch-cuda/relu/_data.bin".to_owned(),
            expected(synthetic(11, 200003), true),
        );
        let mut c2: BTreeMap<String, Expected> = BTreeMap::new();
        for (path, bytes, lfs) in [
            (".gitattributes", attrs, false),
            ("README.md", b"# relu\nsecond\n".to_vec(), false),
            ("build/torch-cuda/metadata.json", metadata.clone(), false),
            (
                "build/torch-cuda/relu/__init__.py",
                b"from ._ops import ops\n".to_vec(),
                false,
            ),
            ("build/torch-cuda/relu/_ops.abi3.so", filler(4000, 2), true),
        ] {
            add(&mut c2, "c2", path, bytes, lfs);
        }
        c2.insert("big.bin".to_owned(), expected(synthetic(7, 300001), true));

        for (name, extra) in [
            ("private", "private = true\nallowed_tokens = [\"hf_ok\"]\n"),
            (
                "gated",
                "gated = \"manual\"\nallowed_tokens = [\"hf_ok\"]\n",
            ),
        ] {
            let repo = root.join("repos/kernels/acme").join(name);
            write(
                &repo.join("repo.toml"),
                format!("commits = [\"c1\"]\n{extra}\n[branches]\nmain = \"c1\"\n").as_bytes(),
            );
            write(&repo.join("commits/c1/tree/README.md"), b"hidden\n");
        }
        let model = root.join("repos/models/other/plain-model");
        write(
            &model.join("repo.toml"),
            b"commits = [\"c1\"]\nlfs = [\"*.bin\"]\n[branches]\nmain = \"c1\"\n",
        );
        write(&model.join("commits/c1/tree/config.json"), b"{}\n");
        write(&model.join("commits/c1/tree/weights.bin"), &filler(100, 3));
        write(
            &root.join("orgs/acme.toml"),
            b"fullname = \"Acme Kernels\"\ntrusted_kernel_publisher = true\n",
        );
        write(&root.join("orgs/other.toml"), b"fullname = \"Other\"\n");
        TestMirror { dir, c1, c2 }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn start(&self) -> Server {
        Server::start_with_args(self.path(), &["--test-control", "--page-size", "3"])
    }
}

/// Minimal HTTP client: never follows redirects, never decompresses.
struct Http {
    client: reqwest::Client,
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

impl Http {
    fn new() -> Http {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        Http { client }
    }

    async fn send(&self, method: &str, url: &str, headers: &[(&str, &str)]) -> Reply {
        let mut req = self
            .client
            .request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = resp.bytes().await.unwrap().to_vec();
        Reply {
            status,
            headers,
            body,
        }
    }

    async fn get(&self, url: &str) -> Reply {
        self.send("GET", url, &[]).await
    }
}

fn sha_of(reply: &Reply) -> String {
    reply.json()["sha"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn refs_list_branches_tags_and_pull_requests() {
    let mirror = TestMirror::new();
    let server = mirror.start();
    let http = Http::new();
    let e = &server.endpoint;
    let main = sha_of(
        &http
            .get(&format!("{e}/api/kernels/acme/relu/revision/main"))
            .await,
    );
    assert_ne!(main, C1);

    let refs = http.get(&format!("{e}/api/kernels/acme/relu/refs")).await;
    assert_eq!(refs.status, 200);
    assert_eq!(
        refs.json(),
        json!({
            "branches": [
                {"name": "feature/x", "ref": "refs/heads/feature/x", "targetCommit": main},
                {"name": "main", "ref": "refs/heads/main", "targetCommit": main},
                {"name": "v1", "ref": "refs/heads/v1", "targetCommit": C1},
            ],
            "converts": [],
            "tags": [
                {"name": "v1", "ref": "refs/tags/v1", "targetCommit": main},
                {"name": "v1.0.0", "ref": "refs/tags/v1.0.0", "targetCommit": C1},
            ],
        })
    );
    let with_prs = http
        .get(&format!("{e}/api/models/acme/relu/refs?include_prs=1"))
        .await;
    assert_eq!(
        with_prs.json()["pullRequests"],
        json!([{"name": "1", "ref": "refs/pr/1", "targetCommit": main}])
    );
}

#[tokio::test]
async fn repo_info_kernel_slim_and_model_with_blobs() {
    let mirror = TestMirror::new();
    let server = mirror.start();
    let http = Http::new();
    let e = &server.endpoint;

    let kernel = http
        .get(&format!("{e}/api/kernels/acme/relu/revision/v1"))
        .await
        .json();
    assert_eq!(kernel["id"], "acme/relu");
    assert_eq!(kernel["sha"], C1);
    assert_eq!(kernel["author"], "acme");
    assert_eq!(kernel["lastModified"], "2025-05-21T10:00:00Z");
    assert_eq!(kernel["trustedPublisher"], true);
    assert_eq!(kernel["supportedDriverFamilies"], json!(["cpu", "cuda"]));
    assert!(
        kernel.get("siblings").is_none(),
        "kernel info is slim: {kernel}"
    );

    // Default revision is the default branch.
    let head = http.get(&format!("{e}/api/kernels/acme/relu")).await.json();
    assert_ne!(head["sha"], C1);

    let plain = http
        .get(&format!("{e}/api/models/acme/relu/revision/v1"))
        .await
        .json();
    for key in [
        "_id",
        "id",
        "sha",
        "lastModified",
        "private",
        "gated",
        "siblings",
        "tags",
    ] {
        assert!(plain.get(key).is_some(), "model info lacks {key}: {plain}");
    }
    assert_eq!(plain["library_name"], "kernels");
    let names: Vec<&str> = plain["siblings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert_eq!(
                s.as_object().unwrap().len(),
                1,
                "no blobs without blobs=true: {s}"
            );
            s["rfilename"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        names,
        mirror.c1.keys().map(String::as_str).collect::<Vec<_>>()
    );

    for flag in ["true", "True", "1"] {
        let info = http
            .get(&format!(
                "{e}/api/models/acme/relu/revision/v1?blobs={flag}"
            ))
            .await
            .json();
        for sibling in info["siblings"].as_array().unwrap() {
            let path = sibling["rfilename"].as_str().unwrap();
            let want = &mirror.c1[path];
            assert_eq!(sibling["blobId"], want.oid.as_str(), "{path}");
            assert_eq!(sibling["size"], want.bytes.len(), "{path}");
            match &want.sha256 {
                Some(sha) => {
                    assert_eq!(sibling["lfs"]["sha256"], sha.as_str(), "{path}");
                    assert_eq!(sibling["lfs"]["size"], want.bytes.len());
                    assert!(sibling["lfs"]["pointerSize"].as_u64().unwrap() > 100);
                }
                None => assert!(sibling.get("lfs").is_none(), "{path}"),
            }
        }
    }

    // A model-only repo is not a kernel.
    let r = http
        .get(&format!("{e}/api/kernels/other/plain-model"))
        .await;
    assert_eq!(r.header("x-error-code"), Some("RepoNotFound"));
    let model = http
        .get(&format!("{e}/api/models/other/plain-model?blobs=1"))
        .await
        .json();
    assert!(model.get("library_name").is_none());
    assert!(model["siblings"][1]["lfs"]["sha256"].is_string(), "{model}");
}

/// Follows `Link: <…>; rel="next"` and returns every entry plus the page count.
async fn list_all(http: &Http, url: &str) -> (Vec<Value>, usize) {
    let mut entries = Vec::new();
    let mut pages = 0;
    let mut next = Some(url.to_owned());
    while let Some(url) = next.take() {
        let reply = http.get(&url).await;
        assert_eq!(
            reply.status,
            200,
            "{url}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        pages += 1;
        let page = reply.json();
        assert!(page.as_array().unwrap().len() <= 3);
        entries.extend(page.as_array().unwrap().iter().cloned());
        if let Some(link) = reply.header("link") {
            let target = link
                .strip_prefix('<')
                .and_then(|l| l.split_once(">; rel=\"next\""))
                .map(|(u, _)| u.to_owned())
                .unwrap_or_else(|| panic!("bad Link header {link}"));
            assert!(
                target.starts_with("http://"),
                "Link must be absolute: {target}"
            );
            next = Some(target);
        }
    }
    (entries, pages)
}

#[tokio::test]
async fn tree_lists_recursively_with_pagination() {
    let mirror = TestMirror::new();
    let server = mirror.start();
    let http = Http::new();
    let e = &server.endpoint;

    let (entries, pages) = list_all(
        &http,
        &format!("{e}/api/kernels/acme/relu/tree/v1?recursive=True"),
    )
    .await;
    assert!(pages >= 4, "page size 3 must paginate, got {pages} pages");
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    let first_file = kinds.iter().position(|k| *k == "file").unwrap();
    assert!(kinds[..first_file].iter().all(|k| *k == "directory"));
    assert!(
        kinds[first_file..].iter().all(|k| *k == "file"),
        "directories first: {kinds:?}"
    );
    let dirs: Vec<&str> = entries[..first_file]
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        dirs,
        [
            "build",
            "build/torch-cpu",
            "build/torch-cpu/relu",
            "build/torch-cuda",
            "build/torch-cuda/relu"
        ]
    );
    for dir in &entries[..first_file] {
        assert_eq!(dir["oid"].as_str().unwrap().len(), 40);
    }
    let files: Vec<&Value> = entries[first_file..].iter().collect();
    assert_eq!(
        files
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect::<Vec<_>>(),
        mirror.c1.keys().map(String::as_str).collect::<Vec<_>>()
    );
    for f in files {
        let want = &mirror.c1[f["path"].as_str().unwrap()];
        assert_eq!(f["oid"], want.oid.as_str());
        assert_eq!(f["size"], want.bytes.len());
        match &want.sha256 {
            Some(sha) => assert_eq!(
                f["lfs"],
                json!({"oid": sha, "size": want.bytes.len(), "pointerSize": f["lfs"]["pointerSize"]})
            ),
            None => assert!(f.get("lfs").is_none()),
        }
        assert!(f.get("xetHash").is_none());
    }

    // expand=true adds lastCommit (files and folders) and securityFileStatus (files).
    let (expanded, _) = list_all(
        &http,
        &format!("{e}/api/kernels/acme/relu/tree/main?recursive=true&expand=true"),
    )
    .await;
    let metadata = expanded
        .iter()
        .find(|e| e["path"] == "build/torch-cuda/metadata.json")
        .unwrap();
    assert_eq!(metadata["lastCommit"]["id"], C1, "unchanged since c1");
    assert_eq!(metadata["lastCommit"]["title"], "First");
    assert_eq!(metadata["securityFileStatus"]["status"], "safe");
    let readme = expanded.iter().find(|e| e["path"] == "README.md").unwrap();
    assert_ne!(readme["lastCommit"]["id"], C1);
    assert!(expanded.iter().all(|e| e["lastCommit"]["date"].is_string()));
}

#[tokio::test]
async fn tree_paths_both_encodings_and_errors() {
    let mirror = TestMirror::new();
    let server = mirror.start();
    let http = Http::new();
    let e = &server.endpoint;
    let base = format!("{e}/api/kernels/acme/relu/tree/v1");

    let (top, _) = list_all(&http, &format!("{base}/build?recursive=false")).await;
    let names: Vec<&str> = top.iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(names, ["build/torch-cpu", "build/torch-cuda"]);

    let (encoded, _) = list_all(&http, &format!("{base}/build%2Ftorch-cuda")).await;
    let (literal, _) = list_all(&http, &format!("{base}/build/torch-cuda")).await;
    assert_eq!(encoded, literal);
    let names: Vec<&str> = literal
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["build/torch-cuda/relu", "build/torch-cuda/metadata.json"]
    );

    let missing = http.get(&format!("{base}/nope")).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.header("x-error-code"), Some("EntryNotFound"));

    let file = http.get(&format!("{base}/README.md")).await;
    assert_eq!(file.json(), json!([]));

    let bad_rev = http
        .get(&format!("{e}/api/kernels/acme/relu/tree/v9"))
        .await;
    assert_eq!(bad_rev.status, 404);
    assert_eq!(bad_rev.header("x-error-code"), Some("RevisionNotFound"));
}

#[tokio::test]
async fn revisions_accept_full_refs_with_encoded_slashes() {
    let mirror = TestMirror::new();
    let server = mirror.start();
    let http = Http::new();
    let e = &server.endpoint;
    let main = sha_of(&http.get(&format!("{e}/api/kernels/acme/relu")).await);
    for (rev, want) in [
        ("v1", C1),
        ("refs%2Fheads%2Fv1", C1),
        ("refs%2Ftags%2Fv1", main.as_str()),
        ("refs%2Ftags%2Fv1.0.0", C1),
        ("v1.0.0", C1),
        (C1, C1),
        ("feature%2Fx", main.as_str()),
        ("refs%2Fheads%2Ffeature%2Fx", main.as_str()),
        ("refs%2Fpr%2F1", main.as_str()),
    ] {
        let info = http
            .get(&format!("{e}/api/kernels/acme/relu/revision/{rev}"))
            .await;
        assert_eq!(info.status, 200, "{rev}");
        assert_eq!(sha_of(&info), want, "{rev}");
        let file = http
            .send(
                "HEAD",
                &format!("{e}/kernels/acme/relu/resolve/{rev}/README.md"),
                &[],
            )
            .await;
        assert_eq!(file.header("x-repo-commit"), Some(want), "{rev}");
        let tree = http
            .get(&format!("{e}/api/kernels/acme/relu/tree/{rev}/build"))
            .await;
        assert_eq!(tree.status, 200, "{rev}");
    }
}

#[tokio::test]
async fn resolve_head_get_range_and_not_modified() {
    let mirror = TestMirror::new();
    let server = mirror.start();
    let http = Http::new();
    let e = &server.endpoint;
    let readme = &mirror.c1["README.md"];
    let size = readme.bytes.len();

    for url in [
        format!("{e}/kernels/acme/relu/resolve/v1/README.md"),
        format!("{e}/acme/relu/resolve/v1/README.md"),
        format!("{e}/api/resolve-cache/models/acme/relu/{C1}/README.md?etag=x"),
    ] {
        let head = http.send("HEAD", &url, &[]).await;
        assert_eq!(head.status, 200, "{url}");
        assert_eq!(
            head.header("etag"),
            Some(format!("\"{}\"", readme.oid).as_str())
        );
        assert_eq!(
            head.header("content-length"),
            Some(size.to_string().as_str())
        );
        assert_eq!(head.header("x-repo-commit"), Some(C1));
        assert_eq!(head.header("accept-ranges"), Some("bytes"));
        assert_eq!(
            head.header("content-disposition"),
            Some("inline; filename*=UTF-8''README.md; filename=\"README.md\";")
        );
        assert!(head.body.is_empty());
        assert!(head.header("x-xet-hash").is_none());

        let get = http.get(&url).await;
        assert_eq!(get.status, 200);
        assert_eq!(get.body, readme.bytes);
    }
    let url = format!("{e}/kernels/acme/relu/resolve/v1/README.md");
    let nested = http
        .get(&format!(
            "{e}/kernels/acme/relu/resolve/v1/build/torch-cuda/relu/__init__.py"
        ))
        .await;
    assert_eq!(
        nested.body,
        mirror.c1["build/torch-cuda/relu/__init__.py"].bytes
    );

    for (range, start, end) in [
        ("bytes=2-5", 2, 5),
        ("bytes=3-", 3, size - 1),
        ("bytes=-4", size - 4, size - 1),
        ("bytes=1-1000", 1, size - 1),
    ] {
        let r = http.send("GET", &url, &[("range", range)]).await;
        assert_eq!(r.status, 206, "{range}");
        assert_eq!(
            r.header("content-range"),
            Some(format!("bytes {start}-{end}/{size}").as_str())
        );
        assert_eq!(r.body, readme.bytes[start..=end], "{range}");
    }
    let r = http
        .send("GET", &url, &[("range", &format!("bytes={size}-"))])
        .await;
    assert_eq!(r.status, 416);
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes */{size}").as_str())
    );

    let etag = format!("\"{}\"", readme.oid);
    let r = http.send("GET", &url, &[("if-none-match", &etag)]).await;
    assert_eq!(r.status, 304);
    assert_eq!(r.header("x-repo-commit"), Some(C1));
    assert!(r.body.is_empty());
    let r = http
        .send("GET", &url, &[("if-none-match", "\"0000\"")])
        .await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn lfs_redirects_to_cdn_which_rejects_auth() {
    let mirror = TestMirror::new();
    let server = mirror.start();
    let http = Http::new();
    let e = &server.endpoint;

    for (rev, path, want) in [
        (
            "v1",
            "build/torch-cuda/relu/_ops.abi3.so",
            &mirror.c1["build/torch-cuda/relu/_ops.abi3.so"],
        ),
        (
            "v1",
            "build/torch-cuda/relu/_data.bin",
            &mirror.c1["build/torch-cuda/relu/_data.bin"],
        ),
        ("main", "big.bin", &mirror.c2["big.bin"]),
    ] {
        let sha = want.sha256.as_deref().unwrap();
        let url = format!("{e}/kernels/acme/relu/resolve/{rev}/{path}");
        let head = http
            .send("HEAD", &url, &[("authorization", "Bearer hf_x")])
            .await;
        assert_eq!(head.status, 302, "{path}");
        assert_eq!(
            head.header("x-linked-etag"),
            Some(format!("\"{sha}\"").as_str())
        );
        assert_eq!(
            head.header("x-linked-size"),
            Some(want.bytes.len().to_string().as_str())
        );
        assert_eq!(head.header("x-repo-commit").map(str::len), Some(40));
        let location = head.header("location").unwrap().to_owned();
        // Stays a substring check: the signed URL carries a port and a signature.
        assert!(
            location.starts_with("http://localhost:") && location.contains(&format!("/lfs/{sha}?")),
            "{location}"
        );
        assert!(location.contains("X-Amz-Signature="));

        let cdn = http.get(&location).await;
        assert_eq!(cdn.status, 200);
        assert_eq!(cdn.body, want.bytes, "{path}");
        assert_eq!(sha256(&cdn.body), sha);
        for forbidden in [
            "x-repo-commit",
            "x-linked-etag",
            "x-linked-size",
            "x-error-code",
        ] {
            assert!(cdn.header(forbidden).is_none(), "CDN sent {forbidden}");
        }
        assert_ne!(cdn.header("etag"), Some(format!("\"{sha}\"").as_str()));

        let part = http
            .send("GET", &location, &[("range", "bytes=100-")])
            .await;
        assert_eq!(part.status, 206);
        assert_eq!(part.body, want.bytes[100..]);
        let head = http.send("HEAD", &location, &[]).await;
        assert_eq!(
            head.header("content-length"),
            Some(want.bytes.len().to_string().as_str())
        );

        let with_auth = http
            .send("GET", &location, &[("authorization", "Bearer hf_x")])
            .await;
        assert_eq!(with_auth.status, 400);
        snapshot!(
            "cdn_refuses_authorization_body",
            String::from_utf8_lossy(&with_auth.body)
        );
    }
    let cdn = http
        .get(&format!(
            "{e}/kernels/acme/relu/resolve/v1/build/torch-cuda/relu/_ops.abi3.so"
        ))
        .await;
    let location = cdn.header("location").unwrap();
    let base = &location[..location.find("/lfs/").unwrap()];
    let unknown = http.get(&format!("{base}/lfs/{}", "0".repeat(64))).await;
    assert_eq!(unknown.status, 404);
    snapshot!(
        "cdn_unknown_object_body",
        String::from_utf8_lossy(&unknown.body)
    );
    let forged = http
        .get(&location.replace("X-Amz-Signature=", "X-Amz-Signature=00"))
        .await;
    assert_eq!(forged.status, 403);
}

#[tokio::test]
async fn errors_carry_codes() {
    let mirror = TestMirror::new();
    let server = mirror.start();
    let http = Http::new();
    let e = &server.endpoint;

    let anon = http.get(&format!("{e}/api/kernels/acme/nope/refs")).await;
    assert_eq!(anon.status, 401);
    assert_eq!(anon.header("x-error-code"), Some("RepoNotFound"));
    assert!(anon.header("x-request-id").is_some());
    assert!(anon.header("x-error-message").is_some());
    assert_eq!(anon.json(), json!({"error": "Repository not found"}));
    let authed = http
        .send(
            "GET",
            &format!("{e}/kernels/acme/nope/resolve/main/x"),
            &[("authorization", "Bearer t")],
        )
        .await;
    assert_eq!(authed.status, 404);
    assert_eq!(authed.header("x-error-code"), Some("RepoNotFound"));
    let datasets = http.get(&format!("{e}/api/datasets/acme/relu")).await;
    assert_eq!(datasets.header("x-error-code"), Some("RepoNotFound"));

    let rev = http
        .get(&format!("{e}/kernels/acme/relu/resolve/v7/README.md"))
        .await;
    assert_eq!(rev.status, 404);
    assert_eq!(rev.header("x-error-code"), Some("RevisionNotFound"));

    let entry = http
        .send(
            "HEAD",
            &format!("{e}/kernels/acme/relu/resolve/v1/kernel-status.toml"),
            &[],
        )
        .await;
    assert_eq!(entry.status, 404);
    assert_eq!(entry.header("x-error-code"), Some("EntryNotFound"));
    assert_eq!(entry.header("x-repo-commit"), Some(C1));
    let dir = http
        .get(&format!("{e}/kernels/acme/relu/resolve/v1/build"))
        .await;
    assert_eq!(dir.header("x-error-code"), Some("EntryNotFound"));

    let unknown = http.get(&format!("{e}/api/whatever")).await;
    assert_eq!(unknown.status, 404);
    assert!(unknown.header("x-error-code").is_none());
}

#[tokio::test]
async fn private_and_gated_repositories() {
    let mirror = TestMirror::new();
    let server = mirror.start();
    let http = Http::new();
    let e = &server.endpoint;
    let private = format!("{e}/api/kernels/acme/private");
    assert_eq!(http.get(&private).await.status, 401);
    let wrong = http
        .send("GET", &private, &[("authorization", "Bearer hf_bad")])
        .await;
    assert_eq!(
        (wrong.status.as_u16(), wrong.header("x-error-code")),
        (404, Some("RepoNotFound"))
    );
    let ok = http
        .send("GET", &private, &[("authorization", "Bearer hf_ok")])
        .await;
    assert_eq!(ok.status, 200);

    let gated = format!("{e}/kernels/acme/gated/resolve/main/README.md");
    let anon = http.get(&gated).await;
    assert_eq!(
        (anon.status.as_u16(), anon.header("x-error-code")),
        (401, Some("GatedRepo"))
    );
    let denied = http
        .send("GET", &gated, &[("authorization", "Bearer hf_bad")])
        .await;
    assert_eq!(
        (denied.status.as_u16(), denied.header("x-error-code")),
        (403, Some("GatedRepo"))
    );
    let allowed = http
        .send("GET", &gated, &[("authorization", "Bearer hf_ok")])
        .await;
    assert_eq!(allowed.body, b"hidden\n");
    assert_eq!(
        http.get(&format!("{e}/api/kernels/acme/gated"))
            .await
            .json()["gated"],
        "manual"
    );
}

#[tokio::test]
async fn organization_overview_and_agent_harnesses() {
    let mirror = TestMirror::new();
    let server = mirror.start();
    let http = Http::new();
    let e = &server.endpoint;
    let acme = http
        .get(&format!("{e}/api/organizations/acme/overview"))
        .await
        .json();
    assert_eq!(acme["name"], "acme");
    assert_eq!(acme["fullname"], "Acme Kernels");
    assert_eq!(acme["trustedKernelPublisher"], true);
    let other = http
        .get(&format!("{e}/api/organizations/other/overview"))
        .await
        .json();
    assert_eq!(other["trustedKernelPublisher"], false);
    let missing = http
        .get(&format!("{e}/api/organizations/nobody/overview"))
        .await;
    assert_eq!(missing.status, 404);
    assert!(missing.json()["error"].is_string());
    let harnesses = http.get(&format!("{e}/api/agent-harnesses")).await.json();
    assert_eq!(harnesses, json!({"standardEnvVars": [], "harnesses": {}}));
}

#[tokio::test]
async fn request_log_and_fault_rules() {
    let mirror = TestMirror::new();
    let server = mirror.start();
    let http = Http::new();
    let e = &server.endpoint;
    let file = format!("{e}/kernels/acme/relu/resolve/v1/README.md");
    http.send(
        "GET",
        &file,
        &[("authorization", "Bearer t"), ("user-agent", "probe/1")],
    )
    .await;
    let log = http.get(&format!("{e}/__fixture/requests")).await.json();
    assert_eq!(
        log,
        json!([{
            "listener": "hub", "method": "GET", "path": "/kernels/acme/relu/resolve/v1/README.md",
            "query": null, "headers": log[0]["headers"].clone(), "status": 200,
            "bytes": mirror.c1["README.md"].bytes.len(), "authorization": true,
        }])
    );
    assert_eq!(log[0]["headers"]["user-agent"], "probe/1");

    let rules = json!([
        {"path": "/kernels/*/README.md", "method": "GET", "status": 503, "count": 1},
        {"listener": "hub", "path": "/api/*/refs", "status": 429, "retry_after": 2, "count": 1},
        {"listener": "cdn", "corrupt": {"offset": 10, "xor": 255}, "count": 1},
        {"path": "*/torch-cpu/relu/__init__.py", "ignore_range": true, "count": 1},
        {"path": "*/metadata.json", "range_416": true, "count": 1},
        {"path": "*/torch-cuda/relu/__init__.py", "truncate_after_bytes": 5, "count": 1},
    ]);
    let added = http
        .client
        .post(format!("{e}/__fixture/faults"))
        .json(&rules)
        .send()
        .await
        .unwrap();
    assert_eq!(added.status(), 200);

    assert_eq!(http.get(&file).await.status, 503);
    assert_eq!(http.get(&file).await.status, 200, "count=1 applies once");
    http.client
        .post(format!("{e}/__fixture/faults"))
        .json(&json!({"method": "HEAD", "latency_ms": 300, "count": 1}))
        .send()
        .await
        .unwrap();
    let started = std::time::Instant::now();
    assert_eq!(http.send("HEAD", &file, &[]).await.status, 200);
    assert!(started.elapsed() >= std::time::Duration::from_millis(300));
    let limited = http.get(&format!("{e}/api/kernels/acme/relu/refs")).await;
    assert_eq!(
        (limited.status.as_u16(), limited.header("retry-after")),
        (429, Some("2"))
    );

    let so = &mirror.c1["build/torch-cuda/relu/_ops.abi3.so"];
    let redirect = http
        .get(&format!(
            "{e}/kernels/acme/relu/resolve/v1/build/torch-cuda/relu/_ops.abi3.so"
        ))
        .await;
    let corrupted = http.get(redirect.header("location").unwrap()).await;
    assert_eq!(corrupted.body.len(), so.bytes.len());
    assert_eq!(corrupted.body[10], so.bytes[10] ^ 255);
    assert_eq!(corrupted.body[11..], so.bytes[11..]);

    let init = format!("{e}/kernels/acme/relu/resolve/v1/build/torch-cpu/relu/__init__.py");
    let full = http.send("GET", &init, &[("range", "bytes=2-")]).await;
    assert_eq!(full.status, 200);
    let r416 = http
        .get(&format!(
            "{e}/kernels/acme/relu/resolve/v1/build/torch-cpu/metadata.json"
        ))
        .await;
    assert_eq!(r416.status, 416);

    let truncated = http
        .client
        .get(format!(
            "{e}/kernels/acme/relu/resolve/v1/build/torch-cuda/relu/__init__.py"
        ))
        .send()
        .await
        .unwrap();
    assert!(
        truncated.bytes().await.is_err(),
        "the body must be cut short"
    );

    let reset = http.client.post(format!("{e}/__fixture/faults"));
    reset
        .json(&json!({"path": "/api/kernels/acme/relu", "reset_connection": true, "count": 1}))
        .send()
        .await
        .unwrap();
    assert!(
        http.client
            .get(format!("{e}/api/kernels/acme/relu"))
            .send()
            .await
            .is_err()
    );
    assert_eq!(
        http.get(&format!("{e}/api/kernels/acme/relu")).await.status,
        200
    );

    let cleared = http
        .client
        .delete(format!("{e}/__fixture/faults"))
        .send()
        .await
        .unwrap();
    assert_eq!(cleared.status(), 200);
    http.client
        .post(format!("{e}/__fixture/reset"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        http.get(&format!("{e}/__fixture/requests")).await.json(),
        json!([])
    );
}

#[test]
fn control_routes_need_the_hidden_flag() {
    let mirror = TestMirror::new();
    let server = Server::start(mirror.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let reply = rt.block_on(Http::new().get(&format!("{}/__fixture/requests", server.endpoint)));
    assert_eq!(reply.status, 404);
}

fn serve_output(mirror: &Path) -> std::process::Output {
    common::kernels_scrubbed()
        .arg("serve")
        .arg(mirror)
        .output()
        .unwrap()
}

#[test]
fn malformed_mirrors_name_file_entry_and_fix() {
    let mirror = TestMirror::new();
    let repo_toml = mirror.path().join("repos/kernels/acme/relu/repo.toml");
    let original = fs_err::read_to_string(&repo_toml).unwrap();

    fs_err::write(&repo_toml, original.replace("v1 = \"c1\"", "v1 = \"c9\"")).unwrap();
    snapshot!(
        "malformed_unknown_branch_target",
        serve_output(mirror.path())
    );

    fs_err::write(
        &repo_toml,
        original.replace("commits = [\"c1\", \"c2\"]", "commits = [\"c1\"]"),
    )
    .unwrap();
    snapshot!("malformed_unlisted_commit", serve_output(mirror.path()));

    fs_err::write(&repo_toml, "commits = [").unwrap();
    snapshot!("malformed_repo_toml", serve_output(mirror.path()));

    snapshot!(
        "malformed_no_repos",
        serve_output(&mirror.path().join("repos"))
    );
}

#[cfg(unix)]
#[test]
fn prints_endpoint_first_and_stops_on_sigterm() {
    use std::io::{BufRead, BufReader};
    let mirror = TestMirror::new();
    let mut child = common::kernels_scrubbed()
        .arg("serve")
        .arg(mirror.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("http://127.0.0.1:"), "{line:?}");
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    // The whole stderr of a run: "Serving 4 repositories from", the LFS CDN
    // address and what a SIGTERM prints.
    snapshot!("sigterm_stderr", String::from_utf8_lossy(&out.stderr));
}

/// Writes the expectations file of `tests/python/hub_compat.py`.
fn compat_expectations(mirror: &TestMirror, dir: &Path, repo_type: &str) -> PathBuf {
    let mut files = serde_json::Map::new();
    for (path, want) in &mirror.c1 {
        let local = dir.join("expected").join(path);
        write(&local, &want.bytes);
        files.insert(
            path.clone(),
            json!({"oid": want.oid, "size": want.bytes.len(), "sha256": want.sha256, "local": local}),
        );
    }
    let expectations = json!({
        "repo_id": "acme/relu",
        "repo_type": repo_type,
        "revision": "v1",
        "commit": C1,
        "files": files,
        "variant": "torch-cuda",
        "plain_file": "build/torch-cuda/metadata.json",
        "lfs_file": "build/torch-cuda/relu/_ops.abi3.so",
        "missing_file": "kernel-status.toml",
    });
    let path = dir.join("expected.json");
    fs_err::write(&path, serde_json::to_vec_pretty(&expectations).unwrap()).unwrap();
    path
}

fn hub_compat(env: &str, repo_type: &str, extra_args: &[&str]) {
    let mirror = TestMirror::new();
    let mut args = vec!["--test-control", "--page-size", "3"];
    args.extend_from_slice(extra_args);
    let server = Server::start_with_args(mirror.path(), &args);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let http = Http::new();
    let main = rt.block_on(async {
        sha_of(
            &http
                .get(&format!("{}/api/kernels/acme/relu", server.endpoint))
                .await,
        )
    });

    let work = tempfile::tempdir().unwrap();
    let expectations = compat_expectations(&mirror, work.path(), repo_type);
    // Add the refs the script compares against.
    let mut exp: Value = serde_json::from_slice(&fs_err::read(&expectations).unwrap()).unwrap();
    exp["branches"] = json!({"main": main, "v1": C1, "feature/x": main});
    exp["tags"] = json!({"v1.0.0": C1, "v1": main});
    exp["pull_requests"] = json!({"1": main});
    fs_err::write(&expectations, serde_json::to_vec_pretty(&exp).unwrap()).unwrap();

    let cache = work.path().join("cache");
    let script = common::repo_root().join("tests/python/hub_compat.py");
    let out = common::python(env, &server.endpoint, &cache)
        // A token proves it is sent to the Hub and stripped on the CDN hop.
        .env("HF_TOKEN", "hf_compat_token")
        .arg(&script)
        .arg(&expectations)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("ok"),
        "{env} failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );

    let log = rt
        .block_on(http.get(&format!("{}/__fixture/requests", server.endpoint)))
        .json();
    let log = log.as_array().unwrap();
    let cdn: Vec<&Value> = log.iter().filter(|r| r["listener"] == "cdn").collect();
    assert!(!cdn.is_empty(), "LFS files came from the CDN");
    assert!(
        cdn.iter()
            .all(|r| r["authorization"] == false && r["status"] == 200),
        "{cdn:?}"
    );
    assert!(
        log.iter()
            .any(|r| r["listener"] == "hub" && r["authorization"] == true)
    );
    // Substring checks on a logged request's path and query, not on output.
    let pages = log
        .iter()
        .filter(|r| {
            r["path"].as_str().unwrap().contains("/tree/")
                && r["query"].as_str().is_some_and(|q| q.contains("cursor="))
        })
        .count();
    assert!(pages > 0, "the client followed Link pagination");
    let prefix = if repo_type == "kernel" {
        "/api/kernels/"
    } else {
        "/api/models/"
    };
    assert!(
        log.iter()
            .any(|r| r["path"].as_str().unwrap().starts_with(prefix))
    );
}

#[test]
fn hub_compat_huggingface_hub_0_35_3_model() {
    hub_compat("hub-0.35.3", "model", &[]);
}

#[test]
fn hub_compat_huggingface_hub_0_35_3_resolve_cache_redirects() {
    hub_compat("hub-0.35.3", "model", &["--resolve-cache"]);
}

#[test]
fn hub_compat_huggingface_hub_2_4_0_resolve_cache_redirects() {
    hub_compat("hub-2.4.0", "kernel", &["--resolve-cache"]);
}

#[test]
fn hub_compat_huggingface_hub_2_4_0_kernel() {
    hub_compat("hub-2.4.0", "kernel", &[]);
}

#[tokio::test]
async fn paths_info_accepts_form_and_json() {
    let mirror = TestMirror::new();
    let server = mirror.start();
    let http = Http::new();
    let url = format!("{}/api/kernels/acme/relu/paths-info/v1", server.endpoint);
    let form = http
        .client
        .post(&url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("paths=README.md&paths=build&paths=missing&expand=False")
        .send()
        .await
        .unwrap();
    let form: Value = form.json().await.unwrap();
    let paths: Vec<&str> = form
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["README.md", "build"]);
    assert_eq!(form[0]["oid"], mirror.c1["README.md"].oid.as_str());
    assert_eq!(form[1]["type"], "directory");

    let json_body = http
        .client
        .post(&url)
        .json(&json!({"paths": ["build/torch-cuda/relu/_ops.abi3.so"], "expand": true}))
        .send()
        .await
        .unwrap();
    let entries: Value = json_body.json().await.unwrap();
    let so = &mirror.c1["build/torch-cuda/relu/_ops.abi3.so"];
    assert_eq!(entries[0]["lfs"]["oid"], so.sha256.as_deref().unwrap());
    assert_eq!(entries[0]["lastCommit"]["id"], C1);
}

#[tokio::test]
async fn cdn_host_differs_from_a_localhost_hub() {
    let mirror = TestMirror::new();
    let server = Server::start_with_args(mirror.path(), &["--host", "localhost"]);
    assert!(
        server.endpoint.starts_with("http://localhost:"),
        "{}",
        server.endpoint
    );
    let http = Http::new();
    let hub = &server.endpoint;
    let redirect = http
        .send(
            "HEAD",
            &format!("{hub}/kernels/acme/relu/resolve/v1/build/torch-cuda/relu/_ops.abi3.so"),
            &[],
        )
        .await;
    let location = redirect.header("location").unwrap();
    assert!(location.starts_with("http://127.0.0.1:"), "{location}");
    assert_eq!(http.get(location).await.status, 200);
}

#[tokio::test]
async fn bundled_mirror_loads() {
    let server = Server::bundled();
    let http = Http::new();
    let e = &server.endpoint;
    let refs = http
        .get(&format!(
            "{e}/api/kernels/kernels-community/activation/refs"
        ))
        .await;
    assert_eq!(refs.status, 200);
    assert!(!refs.json()["branches"].as_array().unwrap().is_empty());
    let org = http
        .get(&format!("{e}/api/organizations/kernels-community/overview"))
        .await
        .json();
    assert_eq!(org["trustedKernelPublisher"], true);
}

#[tokio::test]
async fn resolve_cache_mode_redirects_plain_files() {
    let mirror = TestMirror::new();
    let server = Server::start_with_args(mirror.path(), &["--resolve-cache"]);
    let http = Http::new();
    let e = &server.endpoint;
    let readme = &mirror.c1["README.md"];
    let head = http
        .send(
            "HEAD",
            &format!("{e}/kernels/acme/relu/resolve/v1/README.md"),
            &[],
        )
        .await;
    assert_eq!(head.status, 307);
    assert_eq!(head.header("x-repo-commit"), Some(C1));
    assert_eq!(
        head.header("etag"),
        Some(format!("\"{}\"", readme.oid).as_str())
    );
    let location = head.header("location").unwrap();
    assert_eq!(
        location,
        format!(
            "/api/resolve-cache/kernels/acme/relu/{C1}/README.md?etag=%22{}%22",
            readme.oid
        )
    );
    let target = http.get(&format!("{e}{location}")).await;
    assert_eq!(target.status, 200);
    assert_eq!(target.body, readme.bytes);
    // Clients up to 1.29 drop the query string.
    let bare = http
        .send(
            "HEAD",
            &format!("{e}{}", location.split('?').next().unwrap()),
            &[],
        )
        .await;
    assert_eq!(bare.status, 200);
    assert_eq!(bare.header("x-repo-commit"), Some(C1));
    // LFS files still go to the CDN.
    let lfs = http
        .send(
            "HEAD",
            &format!("{e}/acme/relu/resolve/v1/build/torch-cuda/relu/_ops.abi3.so"),
            &[],
        )
        .await;
    assert_eq!(lfs.status, 302);
}

/// The truncation fault against a real client: huggingface_hub 0.35.3 keeps
/// whole 10 MiB chunks in `.incomplete` and resumes with `Range` on the next run.
#[test]
fn truncated_lfs_body_resumes_with_huggingface_hub_0_35_3() {
    const SIZE: usize = 26_214_405;
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repos/kernels/acme/big");
    write(
        &repo.join("repo.toml"),
        format!(
            "commits = [\"c1\"]\nalso_serve_as = [\"model\"]\n[branches]\nmain = \"c1\"\n\
             [synthetic]\n\"c1:big.bin\" = {{ size = {SIZE}, seed = 7, lfs = true }}\n"
        )
        .as_bytes(),
    );
    write(&repo.join("commits/c1/tree/README.md"), b"big\n");
    let server = Server::start_with_args(dir.path(), &["--test-control"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let http = Http::new();
    let e = &server.endpoint;
    rt.block_on(
        http.client
            .post(format!("{e}/__fixture/faults"))
            .json(&json!({"listener": "cdn", "truncate_after_bytes": 12_582_912, "count": 1}))
            .send(),
    )
    .unwrap();

    let want = sha256(&synthetic(7, SIZE));
    let cache = dir.path().join("cache");
    let script = "import hashlib, os, sys\n\
        from huggingface_hub import hf_hub_download\n\
        try:\n    p = hf_hub_download('acme/big', 'big.bin')\n\
        except Exception as e:\n    print('failed', type(e).__name__); sys.exit(0)\n\
        print('ok', hashlib.sha256(open(p, 'rb').read()).hexdigest(), os.path.basename(os.path.realpath(p)))\n";
    let run = || {
        let out = common::python("hub-0.35.3", e, &cache)
            .args(["-c", script])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    assert_eq!(run(), "failed ChunkedEncodingError");
    let partial = cache.join(format!("models--acme--big/blobs/{want}.incomplete"));
    assert_eq!(fs_err::metadata(&partial).unwrap().len(), 10_485_760);
    assert_eq!(run(), format!("ok {want} {want}"));

    let log = rt
        .block_on(http.get(&format!("{e}/__fixture/requests")))
        .json();
    let cdn: Vec<(u64, u64, Option<&str>)> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["listener"] == "cdn")
        .map(|r| {
            (
                r["status"].as_u64().unwrap(),
                r["bytes"].as_u64().unwrap(),
                r["headers"]["range"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        cdn,
        [
            (200, 12_582_912, None),
            (206, (SIZE - 10_485_760) as u64, Some("bytes=10485760-"))
        ]
    );
}

// ---------------------------------------------------------------------------
// Hardening: links, connection limits, public URLs, access log, reload, no-delay.

/// One raw HTTP/1.1 keep-alive connection, so a test controls exactly which
/// socket each request uses.
struct RawConn {
    stream: std::net::TcpStream,
    buf: Vec<u8>,
}

/// A parsed raw response: status and body.
struct RawReply {
    status: u16,
    body: Vec<u8>,
}

impl RawConn {
    fn open(endpoint: &str) -> RawConn {
        let addr = endpoint.trim_start_matches("http://");
        let stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
        RawConn {
            stream,
            buf: Vec::new(),
        }
    }

    fn request(&mut self, method: &str, target: &str) -> RawReply {
        use std::io::{Read, Write};
        let req = format!("{method} {target} HTTP/1.1\r\nHost: test\r\nUser-Agent: raw/1\r\n\r\n");
        self.stream.write_all(req.as_bytes()).unwrap();
        let head_end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 8192];
            let n = self.stream.read(&mut chunk).expect("read response head");
            assert!(
                n > 0,
                "connection closed before a response to {method} {target}"
            );
            self.buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let status: u16 = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers: BTreeMap<String, String> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        self.buf.drain(..head_end);
        let len: usize = if method == "HEAD" || status == 304 {
            0
        } else {
            headers["content-length"].parse().unwrap()
        };
        while self.buf.len() < len {
            let mut chunk = [0u8; 65536];
            let n = self.stream.read(&mut chunk).expect("read response body");
            assert!(n > 0, "connection closed inside a body");
            self.buf.extend_from_slice(&chunk[..n]);
        }
        let body = self.buf.drain(..len).collect();
        RawReply { status, body }
    }
}

/// Raises this process's open-file soft limit (children inherit it) to at
/// least `want`, as far as the hard limit allows.
#[cfg(unix)]
fn raise_fd_limit(want: u64) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let hard = limit.maximum.unwrap_or(u64::MAX);
    if limit.current.is_some_and(|soft| soft < want) {
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(want.min(hard)),
                maximum: limit.maximum,
            },
        );
    }
}

/// A `kernels serve` child with both output streams captured.
struct Captured {
    child: std::process::Child,
    endpoint: String,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Captured {
    fn start(mirror: &Path, extra: &[&str]) -> Captured {
        use std::io::{BufRead, BufReader, Read};
        let mut child = std::process::Command::new(common::kernels_bin())
            .arg("serve")
            .arg(mirror)
            .args(extra)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (sink, mut pipe) = (stderr.clone(), child.stderr.take().unwrap());
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
        Captured {
            child,
            endpoint: line.trim().to_owned(),
            stderr,
        }
    }

    fn signal(&self, name: &str) {
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits (bounded) until stderr has a whole line (newline included)
    /// containing `needle`; returns all of stderr.
    fn wait_stderr(&self, needle: &str) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let text = self.stderr.lock().unwrap().clone();
            // Waiting for a line, not asserting output.
            let whole_line = text
                .find(needle)
                .is_some_and(|at| text[at..].contains('\n'));
            if whole_line || std::time::Instant::now() > deadline {
                return text;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Captured {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(unix)]
#[test]
fn links_leaving_the_mirror_are_refused_at_load_and_links_inside_are_served() {
    let mirror = TestMirror::new();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    fs_err::write(&secret, b"not for clients\n").unwrap();
    let tree = mirror
        .path()
        .join("repos/kernels/acme/relu/commits/c1/tree");

    // A link inside the root is served as the file it points at.
    let inside = tree.join("build/torch-cpu/relu/readme-link.md");
    std::os::unix::fs::symlink(tree.join("README.md"), &inside).unwrap();
    let server = Server::start(mirror.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let reply = rt.block_on(Http::new().get(&format!(
        "{}/kernels/acme/relu/resolve/v1.0.0/build/torch-cpu/relu/readme-link.md",
        server.endpoint
    )));
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, b"# relu\nfirst\n");
    drop(server);

    // A file link, and a folder link, leading outside: refused, path named.
    let file_link = tree.join("build/torch-cuda/relu/link.txt");
    std::os::unix::fs::symlink(&secret, &file_link).unwrap();
    snapshot!("link_file_outside", serve_output(mirror.path()));
    fs_err::remove_file(&file_link).unwrap();

    let dir_link = tree.join("build/elsewhere");
    std::os::unix::fs::symlink(outside.path(), &dir_link).unwrap();
    snapshot!("link_folder_outside", serve_output(mirror.path()));
    fs_err::remove_file(&dir_link).unwrap();

    // A dangling link, and a commit label that climbs out of commits/.
    std::os::unix::fs::symlink(outside.path().join("gone"), tree.join("dangling")).unwrap();
    snapshot!("link_dangling", serve_output(mirror.path()));
    fs_err::remove_file(tree.join("dangling")).unwrap();
    let repo_toml = mirror.path().join("repos/kernels/acme/relu/repo.toml");
    let original = fs_err::read_to_string(&repo_toml).unwrap();
    fs_err::write(&repo_toml, original.replace("\"c2\"]", "\"../../../..\"]")).unwrap();
    snapshot!("commit_label_climbs_out", serve_output(mirror.path()));
}

/// Opens `n` connections that never finish a request: even ones send
/// nothing, odd ones half a request head.
fn idle_sockets(endpoint: &str, n: usize) -> Vec<std::net::TcpStream> {
    use std::io::Write;
    let addr = endpoint.trim_start_matches("http://");
    (0..n)
        .map(|i| {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            if i % 2 == 1 {
                s.write_all(b"GET /api/kernels/acme/relu/refs HTTP/1.1\r\nHost: x\r\n")
                    .unwrap();
            }
            s
        })
        .collect()
}

/// Runs a `kernels download` with a deadline; panics with its output on failure.
fn bounded_download(world: &kernels_test_support::TestContext, secs: u64) {
    let mut cmd = common::kernels(&world.server.endpoint, &world.cache);
    cmd.arg("download")
        .arg(&world.project)
        .arg("--all-variants")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "kernels download did not finish in {secs}s: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    kernels_test_support::assert_ok(&out);
}

fn download_world(server_args: &[&str]) -> kernels_test_support::TestContext {
    use kernels_test_support::{RELU_SHA, TestContext, relu_files, write_repo};
    let world = TestContext::with_generated_mirror(
        |mirror| write_repo(mirror, "acme/relu", RELU_SHA, &relu_files()),
        server_args,
    );
    world.lock_a(&[("acme/relu", RELU_SHA, &relu_files())]);
    world
}

#[cfg(unix)]
#[test]
fn four_hundred_idle_connections_do_not_stop_a_download() {
    raise_fd_limit(4096);
    // With the default limits, and with a cap far below the idle crowd (idle
    // connections are closed to make room).
    for args in [&[][..], &["--max-connections", "32"][..]] {
        let world = download_world(args);
        let idle = idle_sockets(&world.server.endpoint, 400);
        bounded_download(&world, 60);
        if !args.is_empty() {
            // Most of the idle crowd was closed by the server to make room.
            let closed = idle
                .iter()
                .filter(|s| {
                    use std::io::Read;
                    s.set_read_timeout(Some(std::time::Duration::from_millis(5)))
                        .unwrap();
                    let mut b = [0u8; 1];
                    let mut r: &std::net::TcpStream = s;
                    match r.read(&mut b) {
                        Ok(0) => true,
                        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
                        Ok(_) => false,
                    }
                })
                .count();
            assert!(
                closed >= 400 - 32,
                "only {closed} idle connections were closed"
            );
        }
    }
}

#[test]
fn slow_request_heads_are_cut_at_the_header_timeout() {
    use std::io::{Read, Write};
    let mirror = TestMirror::new();
    let server = Server::start_with_args(mirror.path(), &["--header-timeout", "0.5"]);
    let addr = server.endpoint.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let start = std::time::Instant::now();
    // Trickle a head one byte at a time: the timer is not reset by progress.
    let mut closed = false;
    for b in b"GET /api/kernels/acme/relu/refs HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
        if s.write_all(&[*b]).is_err() {
            closed = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(closed || rest.is_empty() || rest.starts_with(b"HTTP/1.1 408"));
    assert!(
        start.elapsed() < std::time::Duration::from_secs(8),
        "the slow head was not cut"
    );
}

#[tokio::test]
async fn over_the_cap_connections_get_503_with_retry_after() {
    let mirror = TestMirror::new();
    let server = Server::start_with_args(
        mirror.path(),
        &[
            "--test-control",
            "--max-connections",
            "2",
            "--retry-after",
            "7",
        ],
    );
    let e = server.endpoint.clone();
    let http = Http::new();
    let rule = json!({"path": "/api/kernels/acme/relu/refs", "latency_ms": 1500});
    let added = http
        .client
        .post(format!("{e}/__fixture/faults"))
        .json(&rule)
        .send()
        .await
        .unwrap();
    assert!(added.status().is_success());
    // Two busy connections fill the cap; neither is idle, so nothing can be closed.
    let slow: Vec<_> = (0..2)
        .map(|_| {
            let url = format!("{e}/api/kernels/acme/relu/refs");
            tokio::spawn(async move { Http::new().get(&url).await.status })
        })
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let over = Http::new().get(&format!("{e}/api/agent-harnesses")).await;
    assert_eq!(over.status, 503);
    assert_eq!(over.header("retry-after"), Some("7"));
    for task in slow {
        assert_eq!(task.await.unwrap(), 200);
    }
    assert_eq!(
        Http::new()
            .get(&format!("{e}/api/agent-harnesses"))
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn urls_come_from_the_configuration_never_from_host() {
    let mirror = TestMirror::new();
    let tree = "/api/kernels/acme/relu/tree/main?recursive=true";
    let lfs = "/kernels/acme/relu/resolve/main/big.bin";
    let host = [("host", "attacker.example")];

    let server = mirror.start();
    let http = Http::new();
    let reply = http
        .send("GET", &format!("{}{tree}", server.endpoint), &host)
        .await;
    let link = reply.header("link").unwrap();
    assert!(
        link.starts_with(&format!("<{}/api/", server.endpoint)),
        "{link}"
    );
    // Stays a substring check: the link's cursor varies; no part may name the Host.
    assert!(!link.contains("attacker"), "{link}");
    drop(server);

    let server = Server::start_with_args(
        mirror.path(),
        &[
            "--page-size",
            "3",
            "--public-url",
            "https://hub.example.internal/mirror/",
            "--cdn-public-url",
            "https://cdn.example.internal",
        ],
    );
    let reply = http
        .send("GET", &format!("{}{tree}", server.endpoint), &host)
        .await;
    let link = reply.header("link").unwrap();
    assert!(
        link.starts_with("<https://hub.example.internal/mirror/api/kernels/acme/relu/tree/main?"),
        "{link}"
    );
    let reply = http
        .send("HEAD", &format!("{}{lfs}", server.endpoint), &host)
        .await;
    assert_eq!(reply.status, 302);
    let location = reply.header("location").unwrap();
    assert!(
        location.starts_with("https://cdn.example.internal/lfs/"),
        "{location}"
    );

    let out = std::process::Command::new(common::kernels_bin())
        .arg("serve")
        .arg(mirror.path())
        .args(["--public-url", "ftp://x"])
        .output()
        .unwrap();
    snapshot!("public_url_not_usable", out);
}

#[test]
fn access_log_has_one_combined_format_line_per_request() {
    let mirror = TestMirror::new();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let server = Server::start_with_args(mirror.path(), &["--access-log", log.to_str().unwrap()]);
    let mut conn = RawConn::open(&server.endpoint);
    let refs = conn.request("GET", "/api/kernels/acme/relu/refs");
    assert_eq!(refs.status, 200);
    assert_eq!(
        conn.request("HEAD", "/kernels/acme/relu/resolve/main/README.md")
            .status,
        200
    );
    assert_eq!(
        conn.request("GET", "/api/kernels/acme/nope/refs").status,
        401
    );

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let text = loop {
        let text = fs_err::read_to_string(&log).unwrap_or_default();
        if text.lines().count() >= 3 || std::time::Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    for (line, (request, status, bytes)) in lines.iter().zip([
        (
            "GET /api/kernels/acme/relu/refs HTTP/1.1",
            "200",
            refs.body.len().to_string(),
        ),
        (
            "HEAD /kernels/acme/relu/resolve/main/README.md HTTP/1.1",
            "200",
            "-".to_owned(),
        ),
        (
            "GET /api/kernels/acme/nope/refs HTTP/1.1",
            "401",
            String::new(),
        ),
    ]) {
        // host ident user [dd/Mon/yyyy:HH:MM:SS +0000] "request" status bytes "referer" "agent"
        let (head, rest) = line.split_once(" [").unwrap();
        assert_eq!(head, "127.0.0.1 - -", "{line}");
        let (time, rest) = rest.split_once("] ").unwrap();
        assert_eq!(time.len(), 26, "{line}");
        assert!(
            time.ends_with(" +0000") && time.as_bytes()[2] == b'/',
            "{line}"
        );
        let expected_start = format!("\"{request}\" {status} ");
        assert!(rest.starts_with(&expected_start), "{line}");
        let tail = &rest[expected_start.len()..];
        let (sent, agents) = tail.split_once(' ').unwrap();
        if !bytes.is_empty() {
            assert_eq!(sent, bytes, "{line}");
        }
        assert_eq!(agents, "\"-\" \"raw/1\"", "{line}");
    }
}

/// Adds a branch `name` → c1 to `acme/relu` in the test mirror.
fn add_branch(mirror: &TestMirror, name: &str) {
    let repo_toml = mirror.path().join("repos/kernels/acme/relu/repo.toml");
    let text = fs_err::read_to_string(&repo_toml).unwrap();
    fs_err::write(
        &repo_toml,
        text.replace(
            "[branches]\n",
            &format!("[branches]\n\"{name}\" = \"c1\"\n"),
        ),
    )
    .unwrap();
}

/// Polls `refs` over `conn` until the branch shows up (bounded).
fn wait_for_branch(conn: &mut RawConn, name: &str) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        let reply = conn.request("GET", "/api/kernels/acme/relu/refs");
        assert_eq!(reply.status, 200);
        if has_branch(&reply.body, name) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

#[cfg(unix)]
#[test]
fn reload_keeps_open_connections_and_picks_up_new_content() {
    let mirror = TestMirror::new();
    let server = Captured::start(mirror.path(), &["--port", "0"]);
    let mut conn = RawConn::open(&server.endpoint);
    assert!(!wait_for_branch_once(&mut conn, "fresh"));

    add_branch(&mirror, "fresh");
    server.signal("HUP");
    assert!(
        wait_for_branch(&mut conn, "fresh"),
        "the reload was not picked up"
    );
    server.wait_stderr("Reloaded the mirror");

    // A broken mirror is not swapped in; the same connection keeps working.
    let repo_toml = mirror.path().join("repos/kernels/acme/relu/repo.toml");
    let good = fs_err::read_to_string(&repo_toml).unwrap();
    fs_err::write(&repo_toml, "commits = [").unwrap();
    server.signal("HUP");
    // The server logs nothing else: once the report's last line is in, its
    // stderr is the start-up line, one line per reload and the report naming
    // repo.toml ("still serving the previous one").
    let stderr = server.wait_stderr("`kernels serve --help` describes the mirror layout");
    snapshot!("reload_transcript", stderr);
    assert!(wait_for_branch_once(&mut conn, "fresh"));
    fs_err::write(&repo_toml, good).unwrap();
    drop(server);

    // --watch reloads without a signal.
    let server = Captured::start(
        mirror.path(),
        &["--port", "0", "--watch", "--watch-interval", "0.1"],
    );
    let mut conn = RawConn::open(&server.endpoint);
    assert!(!wait_for_branch_once(&mut conn, "watched"));
    add_branch(&mirror, "watched");
    assert!(
        wait_for_branch(&mut conn, "watched"),
        "--watch did not reload"
    );
}

fn wait_for_branch_once(conn: &mut RawConn, name: &str) -> bool {
    let reply = conn.request("GET", "/api/kernels/acme/relu/refs");
    assert_eq!(reply.status, 200);
    has_branch(&reply.body, name)
}

/// Whether a `refs` answer lists the branch `name`.
fn has_branch(body: &[u8], name: &str) -> bool {
    let refs: Value = serde_json::from_slice(body).unwrap();
    refs["branches"]
        .as_array()
        .unwrap()
        .iter()
        .any(|b| b["name"] == name)
}

/// Nagle's algorithm plus the client's delayed ACK hold a small body written
/// after its headers (milliseconds on loopback here, ~40 ms elsewhere). A
/// burst of small GETs on one connection must cost about what a burst of
/// HEADs (headers only, one write, never held) costs: measured about 3x with
/// no-delay and over 30x without it.
#[test]
fn small_responses_are_not_held_back_by_nagle() {
    let mirror = TestMirror::new();
    let server = Server::start(mirror.path());
    let mut conn = RawConn::open(&server.endpoint);
    let path = "/kernels/acme/relu/resolve/main/README.md";
    let burst = |conn: &mut RawConn, method: &str| {
        let start = std::time::Instant::now();
        for _ in 0..40 {
            assert_eq!(conn.request(method, path).status, 200);
        }
        start.elapsed()
    };
    burst(&mut conn, "GET");
    let mut best = f64::MAX;
    for _ in 0..3 {
        let control = burst(&mut conn, "HEAD");
        let gets = burst(&mut conn, "GET");
        // Slack for scheduling noise on a loaded machine; a stalled burst
        // costs milliseconds per request (tens of ms on some kernels).
        let slack = std::time::Duration::from_millis(5);
        best = best.min(gets.as_secs_f64() / (control + slack).as_secs_f64());
    }
    assert!(
        best < 10.0,
        "40 small GETs took {best:.1}x as long as 40 HEADs (+5 ms): responses are stalled"
    );
}

/// One raw HTTP/1.1 exchange on a fresh connection: `request` is written,
/// the write side is shut when `half_close` (as `nc -N` does), and everything
/// the server sends until it closes is returned.
fn raw_exchange(endpoint: &str, request: &str, half_close: bool) -> Vec<u8> {
    use std::io::{Read, Write};
    let addr = endpoint.trim_start_matches("http://");
    let mut socket = std::net::TcpStream::connect(addr).unwrap();
    socket
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    socket.write_all(request.as_bytes()).unwrap();
    if half_close {
        socket.shutdown(std::net::Shutdown::Write).unwrap();
    }
    let mut out = Vec::new();
    let _ = socket.read_to_end(&mut out);
    out
}

/// A client that half-closes after its request (issue 24) always gets its
/// answer: 200 of 200 here (8–20 were dropped before).
#[test]
fn half_closed_clients_get_their_answer() {
    let world = common::TestContext::world();
    let addr = world.endpoint().trim_start_matches("http://").to_owned();
    let request = format!(
        "GET /api/kernels/acme/gelu/refs HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
    );
    let answered = (0..200)
        .filter(|_| raw_exchange(world.endpoint(), &request, true).starts_with(b"HTTP/1.1 200"))
        .count();
    assert_eq!(answered, 200);
}

/// A mirror file replaced after start by a symlink that leads out of the
/// mirror (issue 24) is never served: the outside bytes do not reach the
/// client, while the files left alone are still served.
#[test]
fn a_file_swapped_for_an_outside_link_after_start_is_not_served() {
    let mut mirror = None;
    let world = common::TestContext::world_with(|dir| mirror = Some(dir.to_owned()));
    let tree = mirror
        .unwrap()
        .join("repos/kernels/acme/gelu/commits/c1/tree");
    let outside = world.tmp.path().join("outside.txt");
    // Longer than the file it replaces: every byte the server would read
    // from it is outside content.
    fs_err::write(&outside, "OUTSIDE-SECRET-BYTES\n".repeat(512)).unwrap();
    let swapped = tree.join("build/torch-universal/gelu/__init__.py");
    let addr = world.endpoint().trim_start_matches("http://").to_owned();
    let get = |path: &str| {
        let request = format!(
            "GET /kernels/acme/{path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
        );
        String::from_utf8_lossy(&raw_exchange(world.endpoint(), &request, false)).into_owned()
    };
    // Served once before the swap, so the small-file cache holds it.
    let before = get("gelu/resolve/main/build/torch-universal/gelu/__init__.py");
    assert!(before.starts_with("HTTP/1.1 200"), "{before}");
    fs_err::remove_file(&swapped).unwrap();
    std::os::unix::fs::symlink(&outside, &swapped).unwrap();
    let answer = get("gelu/resolve/main/build/torch-universal/gelu/__init__.py");
    // Stays a substring check: the file outside the mirror must appear nowhere.
    assert!(!answer.contains("OUTSIDE-SECRET"), "{answer}");
    let kept = get("relu/resolve/main/build/torch-cpu/relu/__init__.py");
    assert!(kept.starts_with("HTTP/1.1 200"), "{kept}");
}

/// A small file served from memory is read again once it is replaced on disk
/// (issue 26: the small-file cache checks the file at every hit): the answer
/// after a same-length replacement by rename is the new content.
#[test]
fn a_replaced_small_file_is_served_as_it_is_now() {
    let mut mirror = None;
    let world = common::TestContext::world_with(|dir| mirror = Some(dir.to_owned()));
    let file = mirror
        .unwrap()
        .join("repos/kernels/acme/gelu/commits/c1/tree/build/torch-universal/gelu/__init__.py");
    let addr = world.endpoint().trim_start_matches("http://").to_owned();
    let request = format!(
        "GET /kernels/acme/gelu/resolve/main/build/torch-universal/gelu/__init__.py HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
    );
    let body = || {
        let answer = raw_exchange(world.endpoint(), &request, false);
        let text = String::from_utf8_lossy(&answer).into_owned();
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        text.split_once("\r\n\r\n").unwrap().1.to_owned()
    };
    let original = fs_err::read_to_string(&file).unwrap();
    assert_eq!(body(), original);
    assert_eq!(body(), original);
    let replacement: String = original
        .chars()
        .map(|c| if c == '\n' { c } else { 'z' })
        .collect();
    let next = file.with_extension("new");
    fs_err::write(&next, &replacement).unwrap();
    fs_err::rename(&next, &file).unwrap();
    assert_eq!(body(), replacement);
}
