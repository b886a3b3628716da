//! A fleet behind a caching proxy (`docs/fleet.md`): the nginx configuration of
//! that page, in front of `kernels serve`, serves 16 concurrent downloads while
//! the origin sends each blob once.
//!
//! nginx is required: the test fails, not skips, when it is missing (`.ci/run`
//! installs Debian's `nginx-light`). `NGINX` names another binary.

use std::collections::BTreeMap;
use std::net::{Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kernels_test_support::{
    self as common, GELU_SHA, MirrorFile, RELU_SHA, Server, gelu_files, relu_files, variant_hash,
    variants, write_repo,
};
use serde_json::{Value, json};

/// Nodes of the simulated fleet.
const NODES: usize = 16;

/// The values `docs/fleet.md`'s configuration is written with, and what the
/// test puts in their place (each must occur in the page, or the page drifted).
const DOC_HUB_LISTEN: &str = "listen 8080;";
const DOC_CDN_LISTEN: &str = "listen 8081;";
const DOC_HUB_UPSTREAM: &str = "server 127.0.0.1:7000;";
const DOC_CDN_UPSTREAM: &str = "server 127.0.0.1:7001;";
const DOC_CACHE_PATH: &str = "/var/cache/nginx/kernels";

/// The first ```nginx block of `docs/fleet.md`.
fn doc_config() -> String {
    let page = fs_err::read_to_string(common::repo_root().join("docs/fleet.md")).unwrap();
    let start = page
        .find("```nginx\n")
        .expect("docs/fleet.md has an nginx block")
        + "```nginx\n".len();
    let len = page[start..].find("```").expect("the nginx block ends");
    page[start..start + len].to_owned()
}

fn replace_once(text: &str, from: &str, to: &str) -> String {
    assert_eq!(
        text.matches(from).count(),
        1,
        "docs/fleet.md's nginx block should contain `{from}` once"
    );
    text.replacen(from, to, 1)
}

/// A free loopback port (released before use; the race is accepted in tests).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn ipv6_loopback() -> bool {
    TcpListener::bind(SocketAddr::from((Ipv6Addr::LOCALHOST, 0))).is_ok()
}

fn nginx_bin() -> PathBuf {
    if let Some(path) = std::env::var_os("NGINX") {
        return PathBuf::from(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/sbin")])
        .map(|dir| dir.join("nginx"))
        .find(|bin| bin.is_file())
        .unwrap_or_else(|| {
            panic!(
                "nginx is required by the fleet test and was not found on PATH or in /usr/sbin: \
                 install it (`apt-get install -y nginx-light`; .ci/run does) or set NGINX"
            )
        })
}

/// nginx in the foreground, one process (`master_process off`), so that
/// killing it leaves nothing behind; killed on drop.
struct Nginx {
    child: Child,
    prefix: PathBuf,
}

impl Nginx {
    fn start(prefix: &Path, site: &str, hub_port: u16) -> Nginx {
        fs_err::write(prefix.join("kernels-hub.conf"), site).unwrap();
        fs_err::create_dir_all(prefix.join("logs")).unwrap();
        // Workers of a root nginx run as `nobody`, who cannot enter the tempdir.
        let user = if rustix::process::geteuid().is_root() {
            "user root;"
        } else {
            ""
        };
        let p = prefix.display();
        let conf = format!(
            "daemon off;\nmaster_process off;\n{user}\npid {p}/nginx.pid;\n\
             error_log {p}/logs/error.log warn;\nevents {{ worker_connections 1024; }}\n\
             http {{\n  access_log {p}/logs/access.log;\n  client_body_temp_path {p}/tmp/body;\n\
             proxy_temp_path {p}/tmp/proxy;\n  fastcgi_temp_path {p}/tmp/fastcgi;\n\
             uwsgi_temp_path {p}/tmp/uwsgi;\n  scgi_temp_path {p}/tmp/scgi;\n\
             include {p}/kernels-hub.conf;\n}}\n"
        );
        fs_err::create_dir_all(prefix.join("tmp")).unwrap();
        fs_err::write(prefix.join("nginx.conf"), conf).unwrap();
        let child = Command::new(nginx_bin())
            .arg("-p")
            .arg(prefix)
            .arg("-e")
            .arg(prefix.join("logs/error.log"))
            .arg("-c")
            .arg(prefix.join("nginx.conf"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn nginx");
        let mut nginx = Nginx {
            child,
            prefix: prefix.to_owned(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", hub_port)).is_err() {
            if let Some(status) = nginx.child.try_wait().unwrap() {
                panic!("nginx exited ({status}):\n{}", nginx.error_log());
            }
            assert!(
                Instant::now() < deadline,
                "nginx did not listen:\n{}",
                nginx.error_log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        nginx
    }

    fn error_log(&self) -> String {
        fs_err::read_to_string(self.prefix.join("logs/error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn control_requests(origin: &str) -> Vec<Value> {
    common::requests(origin)
}

fn control_fault(origin: &str, rule: Value) {
    common::add_fault(origin, rule);
}

/// A variant-hash lock of `kernels`.
fn write_lock(project: &Path, kernels: &[(&str, &str, &[MirrorFile])]) {
    let entries: Vec<Value> = kernels
        .iter()
        .map(|(repo, sha, files)| {
            let variants: serde_json::Map<String, Value> = variants(files)
                .iter()
                .map(|(v, fs)| {
                    (
                        v.clone(),
                        json!({"hash": variant_hash(v, fs), "hash_type": "git_lfs_concat"}),
                    )
                })
                .collect();
            json!({"repo_id": repo, "sha": sha, "variants": variants})
        })
        .collect();
    fs_err::create_dir_all(project).unwrap();
    fs_err::write(
        project.join("kernels.lock"),
        serde_json::to_string_pretty(&entries).unwrap(),
    )
    .unwrap();
}

#[test]
fn fleet_through_nginx_fetches_each_blob_once() {
    let tmp = tempfile::tempdir().unwrap();
    let mirror = tmp.path().join("mirror");
    let (relu, gelu) = (relu_files(), gelu_files());
    write_repo(&mirror, "acme/relu", RELU_SHA, &relu);
    write_repo(&mirror, "acme/gelu", GELU_SHA, &gelu);
    let project = tmp.path().join("project");
    write_lock(
        &project,
        &[
            ("acme/relu", RELU_SHA, &relu),
            ("acme/gelu", GELU_SHA, &gelu),
        ],
    );

    // Ports: nginx's two listeners and the origin's CDN listener.
    let (proxy_hub, proxy_cdn, origin_cdn) = (free_port(), free_port(), free_port());
    let proxy = format!("http://127.0.0.1:{proxy_hub}");
    let proxy_cdn_url = format!("http://localhost:{proxy_cdn}");
    let server = Server::start_with_args(
        &mirror,
        &[
            "--test-control",
            "--cdn-port",
            &origin_cdn.to_string(),
            "--public-url",
            &proxy,
            "--cdn-public-url",
            &proxy_cdn_url,
        ],
    );
    let origin_hub_port = server
        .endpoint
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_owned();
    // Slow LFS answers from the origin, so that the nodes' misses overlap.
    control_fault(
        &server.endpoint,
        json!({"listener": "cdn", "latency_ms": 200}),
    );

    let prefix = tmp.path().join("nginx");
    fs_err::create_dir_all(&prefix).unwrap();
    let cdn_listen = if ipv6_loopback() {
        format!("listen 127.0.0.1:{proxy_cdn};\n    listen [::1]:{proxy_cdn};")
    } else {
        format!("listen 127.0.0.1:{proxy_cdn};")
    };
    let mut site = doc_config();
    for (from, to) in [
        (DOC_HUB_LISTEN, format!("listen 127.0.0.1:{proxy_hub};")),
        (DOC_CDN_LISTEN, cdn_listen),
        (
            DOC_HUB_UPSTREAM,
            format!("server 127.0.0.1:{origin_hub_port};"),
        ),
        (DOC_CDN_UPSTREAM, format!("server 127.0.0.1:{origin_cdn};")),
        (DOC_CACHE_PATH, prefix.join("cache").display().to_string()),
    ] {
        site = replace_once(&site, from, &to);
    }
    let nginx = Nginx::start(&prefix, &site, proxy_hub);

    let caches: Vec<PathBuf> = (0..NODES)
        .map(|i| tmp.path().join(format!("node-{i}")))
        .collect();
    let children: Vec<Child> = caches
        .iter()
        .map(|cache| {
            common::kernels(&proxy, cache)
                .arg("download")
                .arg(&project)
                .args(["--all-variants", "--concurrency", "4"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "node {i}: kernels download failed ({}):\n{}\nnginx error log:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            nginx.error_log()
        );
    }

    // Every node's cache verifies, against the proxy.
    for (i, cache) in caches.iter().enumerate() {
        let out = common::kernels(&proxy, cache)
            .arg("verify")
            .arg(&project)
            .arg("--all-variants")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "node {i}: kernels verify failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        common::assert_cache_verified(cache);
    }

    // The origin sent each blob once: one request per /resolve/ URL and per LFS object.
    let log = control_requests(&server.endpoint);
    let mut per_blob: BTreeMap<(String, String), usize> = BTreeMap::new();
    for entry in &log {
        let listener = entry["listener"].as_str().unwrap_or_default().to_owned();
        let path = entry["path"].as_str().unwrap_or_default().to_owned();
        // A substring check on a logged request's path, not on output.
        if listener == "cdn" || path.contains("/resolve/") {
            *per_blob.entry((listener, path)).or_default() += 1;
        }
    }
    let repeated: Vec<_> = per_blob.iter().filter(|(_, n)| **n != 1).collect();
    assert!(
        repeated.is_empty(),
        "the origin served these more than once: {repeated:?}"
    );
    // …and every blob the nodes hold came from it that once: an LFS object from
    // the CDN listener, any other file from /resolve/ (files with the same
    // content are one blob, fetched once).
    let mut blobs: BTreeMap<String, usize> = BTreeMap::new();
    for (repo, sha, files) in [
        ("acme/relu", RELU_SHA, &relu),
        ("acme/gelu", GELU_SHA, &gelu),
    ] {
        for file in variants(files).into_values().flatten() {
            let fetched = if file.lfs() {
                per_blob
                    .get(&("cdn".to_owned(), format!("/lfs/{}", file.etag())))
                    .copied()
                    .unwrap_or(0)
            } else {
                let path = format!("/{repo}/resolve/{sha}/{}", file.path);
                per_blob
                    .iter()
                    .filter(|((l, p), _)| l == "hub" && p.ends_with(&path))
                    .map(|(_, n)| n)
                    .sum()
            };
            *blobs.entry(file.etag()).or_default() += fetched;
        }
    }
    for (etag, fetched) in &blobs {
        assert!(
            *fetched >= 1,
            "blob {etag} never came from the origin: {per_blob:?}"
        );
    }
    let lfs_objects = per_blob.keys().filter(|(l, _)| l == "cdn").count();
    assert_eq!(
        lfs_objects,
        relu.iter().chain(&gelu).filter(|f| f.lfs()).count(),
        "{per_blob:?}"
    );
    eprintln!(
        "{NODES} nodes through nginx: {} origin requests in all, {} blobs, each sent once",
        log.len(),
        blobs.len()
    );
    drop(nginx);
}
