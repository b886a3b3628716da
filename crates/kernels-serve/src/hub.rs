//! Routes of the Hub listener (R1–R7 of the fixture-server contract).

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use percent_encoding::{NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use serde_json::{Value, json};
use sha1::{Digest, Sha1};
use sha2::Sha256;

use super::content::{self, BodyFaults, Content, RangeRequest};
use super::control::Faults;
use super::mirror::{Commit, FileMeta, Gated, Lfs, Node, NodeKind, Repo};
use super::{ApiError, App, header_value};
use kernels_types::wire::{GitRefInfo, GitRefs, RepoType};

/// Characters escaped inside a `filename*=UTF-8''…` value and URL query values.
const QUERY_VALUE: &percent_encoding::AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

type Result<T> = std::result::Result<T, ApiError>;

/// Routes one Hub request on its raw path.
pub(super) async fn route(
    app: &App,
    parts: &Parts,
    body: &[u8],
    faults: &Faults,
) -> Result<Response> {
    let raw = parts.uri.path();
    let segs: Vec<&str> = raw.split('/').filter(|s| !s.is_empty()).collect();
    let not_allowed = || ApiError::new(StatusCode::METHOD_NOT_ALLOWED, None, "Method Not Allowed");
    if parts.method == Method::POST {
        return match segs.as_slice() {
            ["api", kind, owner, name, "paths-info", rev @ ..] if !rev.is_empty() => {
                let (repo, _) = find_repo(app, api_kind(kind), owner, name, &parts.headers)?;
                paths_info(app, repo, &decode_joined(rev)?, body)
            }
            _ => Err(not_allowed()),
        };
    }
    if parts.method != Method::GET && parts.method != Method::HEAD {
        return Err(not_allowed());
    }
    match segs.as_slice() {
        ["api", "agent-harnesses"] => {
            Ok(axum::Json(json!({"standardEnvVars": [], "harnesses": {}})).into_response())
        }
        ["api", "organizations", org, "overview"] => org_overview(app, &decode(org)?),
        ["api", kind @ ("kernels" | "models")] => {
            list_repos(app, api_kind(kind), &parse_query(parts.uri.query()))
        }
        ["api", "resolve-cache", kind, owner, name, sha, rest @ ..] if !rest.is_empty() => {
            let (repo, _) = find_repo(app, api_kind(kind), owner, name, &parts.headers)?;
            let target = ResolveTarget { repo, kind: None };
            resolve(app, target, &decode(sha)?, rest, parts, faults)
        }
        ["api", kind, owner, name, rest @ ..] => {
            let (repo, kind) = find_repo(app, api_kind(kind), owner, name, &parts.headers)?;
            let query = parse_query(parts.uri.query());
            match rest {
                [] => info(app, repo, kind, None, &query),
                ["revision", rev @ ..] if !rev.is_empty() => {
                    info(app, repo, kind, Some(&decode_joined(rev)?), &query)
                }
                ["refs"] => Ok(refs(app, repo, &query)),
                ["commits", rev @ ..] if !rev.is_empty() => {
                    commits(app, repo, &decode_joined(rev)?, parts, &query)
                }
                ["tree", rev, path @ ..] => tree(
                    app,
                    repo,
                    &decode(rev)?,
                    &decode_joined(path)?,
                    parts,
                    &query,
                ),
                _ => Err(ApiError::not_found()),
            }
        }
        ["kernels", owner, name, "resolve", rev, rest @ ..] if !rest.is_empty() => {
            let (repo, kind) = find_repo(app, Some(RepoType::Kernel), owner, name, &parts.headers)?;
            let target = ResolveTarget {
                repo,
                kind: Some(kind),
            };
            resolve(app, target, &decode(rev)?, rest, parts, faults)
        }
        [owner, name, "resolve", rev, rest @ ..] if !rest.is_empty() => {
            let (repo, kind) = find_repo(app, Some(RepoType::Model), owner, name, &parts.headers)?;
            let target = ResolveTarget {
                repo,
                kind: Some(kind),
            };
            resolve(app, target, &decode(rev)?, rest, parts, faults)
        }
        _ => Err(ApiError::not_found()),
    }
}

/// `kernels` → kernel, `models` → model; other types are not served.
fn api_kind(segment: &str) -> Option<RepoType> {
    match segment {
        "kernels" => Some(RepoType::Kernel),
        "models" => Some(RepoType::Model),
        _ => None,
    }
}

fn decode(segment: &str) -> Result<String> {
    percent_decode_str(segment)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| ApiError::bad_request("path segment is not UTF-8"))
}

/// Decodes each segment and joins them with `/`, so that `a/b` and `a%2Fb` agree.
fn decode_joined(segments: &[&str]) -> Result<String> {
    let parts: Vec<String> = segments.iter().map(|s| decode(s)).collect::<Result<_>>()?;
    Ok(parts.join("/").trim_matches('/').to_owned())
}

fn parse_query(query: Option<&str>) -> Vec<(String, String)> {
    url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// A boolean query flag: `true`, `True`, `1` (any case).
fn flag(query: &[(String, String)], name: &str) -> bool {
    query
        .iter()
        .any(|(k, v)| k == name && (v.eq_ignore_ascii_case("true") || v == "1"))
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    Some(value.strip_prefix("Bearer ").unwrap_or(value).trim())
}

/// The repo asked for as `kind` (`None`: a type this server does not serve),
/// hidden as `RepoNotFound` when private and the request lacks an allowed token.
fn find_repo<'a>(
    app: &'a App,
    kind: Option<RepoType>,
    owner: &str,
    name: &str,
    headers: &HeaderMap,
) -> Result<(&'a Repo, RepoType)> {
    let authorized = headers.contains_key(header::AUTHORIZATION);
    let id = format!("{}/{}", decode(owner)?, decode(name)?);
    let not_found = || ApiError::repo_not_found(authorized);
    let kind = kind.ok_or_else(not_found)?;
    let repo = app.mirror.repo(kind, &id).ok_or_else(not_found)?;
    let token_ok = bearer(headers).is_some_and(|t| repo.allowed_tokens.iter().any(|a| a == t));
    if repo.private && !token_ok {
        return Err(not_found());
    }
    Ok((repo, kind))
}

/// Resolves a revision, honouring branches moved at runtime (`move_ref`, a
/// fault action: only with `--test-control`, so other servers skip its lock).
fn resolve_rev(app: &App, repo: &Repo, rev: &str) -> Result<usize> {
    let branch = rev.strip_prefix("refs/heads/").unwrap_or(rev);
    let moved = app
        .test_control
        .then(|| app.control.moved_ref(&repo.id, branch))
        .flatten()
        .filter(|_| repo.branches.contains_key(branch))
        .and_then(|sha| repo.commits.iter().position(|c| c.sha == sha));
    moved
        .or_else(|| repo.resolve(rev))
        .ok_or_else(|| ApiError::revision_not_found(rev))
}

/// `GET /api/{kernels,models}?author=<owner>`: the public repositories of one
/// owner answering as that type, as `[{"id": "owner/name"}, …]` (the Hub's
/// `list_models(author=…)` shape, reduced to the id). No author lists all.
fn list_repos(app: &App, kind: Option<RepoType>, query: &[(String, String)]) -> Result<Response> {
    let author = query.iter().find(|(k, _)| k == "author").map(|(_, v)| v);
    let ids: Vec<_> = app
        .mirror
        .repos
        .iter()
        .filter(|r| !r.private && kind.is_none_or(|k| r.types.contains(&k)))
        .filter(|r| author.is_none_or(|a| r.owner() == a))
        .map(|r| json!({"id": r.id}))
        .collect();
    Ok(axum::Json(ids).into_response())
}

fn org_overview(app: &App, org: &str) -> Result<Response> {
    let org = app.mirror.orgs.get(org).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            None,
            format!("Organization {org} not found"),
        )
    })?;
    let members = app
        .mirror
        .repos
        .iter()
        .filter(|r| r.owner() == org.name)
        .count();
    Ok(axum::Json(json!({
        "name": org.name,
        "fullname": org.fullname,
        "avatarUrl": "",
        "isVerified": false,
        "numUsers": 1,
        "numModels": members,
        "trustedKernelPublisher": org.trusted_kernel_publisher,
    }))
    .into_response())
}

fn ref_list(
    table: &std::collections::BTreeMap<String, usize>,
    prefix: &str,
    repo: &Repo,
) -> Vec<GitRefInfo> {
    table
        .iter()
        .map(|(name, &i)| GitRefInfo {
            name: name.clone(),
            git_ref: format!("{prefix}{name}"),
            target_commit: repo.commits[i].sha.clone(),
        })
        .collect()
}

/// R1: branches, converts and tags always; pull requests with `include_prs=1`.
fn refs(app: &App, repo: &Repo, query: &[(String, String)]) -> Response {
    let mut branches = repo.branches.clone();
    for (branch, sha) in app.control.moved_refs(&repo.id) {
        if let (Some(slot), Some(i)) = (
            branches.get_mut(&branch),
            repo.commits.iter().position(|c| c.sha == sha),
        ) {
            *slot = i;
        }
    }
    let refs = GitRefs {
        branches: ref_list(&branches, "refs/heads/", repo),
        converts: ref_list(&repo.converts, "refs/convert/", repo),
        tags: ref_list(&repo.tags, "refs/tags/", repo),
        pull_requests: flag(query, "include_prs")
            .then(|| ref_list(&repo.pull_requests, "refs/pr/", repo)),
    };
    axum::Json(refs).into_response()
}

/// A stable 24-hex `_id` for a repo.
fn object_id(repo: &Repo) -> String {
    let digest = Sha1::digest(repo.id.as_bytes());
    hex::encode(&digest[..12])
}

/// Driver families named by the variant folders under `build/`.
fn driver_families(commit: &Commit) -> Vec<&'static str> {
    let mut out = Vec::new();
    for (path, node) in commit.tree.range("build/".to_owned()..) {
        let Some(variant) = path.strip_prefix("build/") else {
            break;
        };
        if variant.contains('/') || !matches!(node.kind, NodeKind::Dir { .. }) {
            continue;
        }
        let family = if variant.contains("cuda") || variant.contains("-cu") {
            "cuda"
        } else if variant.contains("rocm") {
            "rocm"
        } else if variant.contains("metal") {
            "metal"
        } else if variant.contains("xpu") {
            "xpu"
        } else if variant.contains("npu") {
            "npu"
        } else if variant.contains("cpu") {
            "cpu"
        } else {
            continue;
        };
        if !out.contains(&family) {
            out.push(family);
        }
    }
    out.sort_unstable();
    out
}

/// R2: repo info. Kernel type: the slim shape. Model type: the full shape with
/// `siblings` (blob ids, sizes and LFS details only with `blobs=true`).
fn info(
    app: &App,
    repo: &Repo,
    kind: RepoType,
    rev: Option<&str>,
    query: &[(String, String)],
) -> Result<Response> {
    let rev = rev.unwrap_or(&repo.default_branch);
    let commit = &repo.commits[resolve_rev(app, repo, rev)?];
    let trusted = app
        .mirror
        .orgs
        .get(repo.owner())
        .is_some_and(|o| o.trusted_kernel_publisher);
    let body = match kind {
        RepoType::Kernel => json!({
            "_id": object_id(repo),
            "id": repo.id,
            "author": repo.owner(),
            "sha": commit.sha,
            "lastModified": commit.date,
            "private": repo.private,
            "gated": repo.gated.json(),
            "downloads": 0,
            "likes": 0,
            "trustedPublisher": trusted,
            "supportedDriverFamilies": driver_families(commit),
        }),
        RepoType::Model => {
            let blobs = flag(query, "blobs");
            let siblings: Vec<Value> = commit
                .files()
                .map(|(path, f)| {
                    let mut s = json!({ "rfilename": path });
                    if blobs {
                        s["blobId"] = json!(f.oid);
                        s["size"] = json!(f.size);
                        if let Some(lfs) = &f.lfs {
                            s["lfs"] = json!({"sha256": lfs.sha256, "size": f.size, "pointerSize": lfs.pointer_size});
                        }
                    }
                    s
                })
                .collect();
            let used = kernels_types::size::total(commit.files().map(|(_, f)| f.size));
            let is_kernel = repo.primary == RepoType::Kernel;
            let mut body = json!({
                "_id": object_id(repo),
                "id": repo.id,
                "author": repo.owner(),
                "sha": commit.sha,
                "lastModified": commit.date,
                "createdAt": repo.commits[0].date,
                "private": repo.private,
                "gated": repo.gated.json(),
                "disabled": false,
                "downloads": 0,
                "likes": 0,
                "tags": if is_kernel { json!(["kernels"]) } else { json!([]) },
                "siblings": siblings,
                "spaces": [],
                "usedStorage": used,
            });
            if is_kernel {
                body["library_name"] = json!("kernels");
            }
            body
        }
    };
    Ok(axum::Json(body).into_response())
}

fn tree_entry(repo: &Repo, path: &str, node: &Node, expand: bool) -> Value {
    let mut entry = match &node.kind {
        NodeKind::Dir { oid } => json!({"type": "directory", "oid": oid, "size": 0, "path": path}),
        NodeKind::File(f) => {
            let mut e = json!({"type": "file", "oid": f.oid, "size": f.size, "path": path});
            if let Some(lfs) = &f.lfs {
                e["lfs"] =
                    json!({"oid": lfs.sha256, "size": f.size, "pointerSize": lfs.pointer_size});
            }
            e
        }
    };
    if expand {
        let last = &repo.commits[node.last_commit];
        entry["lastCommit"] = json!({"id": last.sha, "title": last.title, "date": last.date});
        if matches!(node.kind, NodeKind::File(_)) {
            entry["securityFileStatus"] =
                json!({"status": "safe", "avScan": null, "pickleImportScan": null});
        }
    }
    entry
}

/// R3: tree listing with cursor pagination.
fn tree(
    app: &App,
    repo: &Repo,
    rev: &str,
    path: &str,
    parts: &Parts,
    query: &[(String, String)],
) -> Result<Response> {
    let commit = &repo.commits[resolve_rev(app, repo, rev)?];
    let recursive = flag(query, "recursive");
    let expand = flag(query, "expand");
    let prefix = if path.is_empty() {
        String::new()
    } else {
        match commit.tree.get(path).map(|n| &n.kind) {
            None => return Err(ApiError::entry_not_found(None)),
            Some(NodeKind::File(_)) => return Ok(axum::Json(json!([])).into_response()),
            Some(NodeKind::Dir { .. }) => format!("{path}/"),
        }
    };
    let under = commit
        .tree
        .range(prefix.clone()..)
        .take_while(|(p, _)| p.starts_with(&prefix))
        .filter(|(p, _)| recursive || !p[prefix.len()..].contains('/'));
    let (dirs, files): (Vec<_>, Vec<_>) =
        under.partition(|(_, n)| matches!(n.kind, NodeKind::Dir { .. }));
    let all: Vec<_> = dirs.into_iter().chain(files).collect();

    let page_size = app
        .page_size
        .unwrap_or(if expand { 50 } else { 1000 })
        .max(1);
    let offset = match query.iter().find(|(k, _)| k == "cursor") {
        None => 0,
        Some((_, cursor)) => {
            decode_cursor(cursor).ok_or_else(|| ApiError::bad_request("Invalid cursor"))?
        }
    };
    let end = (offset + page_size).min(all.len());
    let page: Vec<Value> = all
        .get(offset..end)
        .unwrap_or_default()
        .iter()
        .map(|(p, n)| tree_entry(repo, p, n, expand))
        .collect();
    let mut resp = axum::Json(page).into_response();
    if end < all.len() {
        let cursor = URL_SAFE_NO_PAD.encode(format!("offset:{end}"));
        set_next_link(&mut resp, app, parts, query, ("cursor", &cursor));
    }
    Ok(resp)
}

/// Adds `Link: <…>; rel="next"` to a page: the request's path and query with
/// `page` (the cursor parameter and its next value) replaced, on the configured
/// base URL (`--public-url`, else the listener's own), never on the request's
/// `Host`: a client must not make the server hand out links to a host of its
/// choosing.
fn set_next_link(
    resp: &mut Response,
    app: &App,
    parts: &Parts,
    query: &[(String, String)],
    page: (&str, &str),
) {
    let mut next = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in query.iter().filter(|(k, _)| k != page.0) {
        next.append_pair(k, v);
    }
    next.append_pair(page.0, page.1);
    let url = format!(
        "{}{}?{}",
        app.endpoints.hub,
        parts.uri.path(),
        next.finish()
    );
    resp.headers_mut().insert(
        header::LINK,
        header_value(&format!("<{url}>; rel=\"next\"")),
    );
}

/// `GET /api/<type>/<rid>/commits/<rev>?p=<page>`: the history of a revision,
/// newest first, following parent links (`id`, `title`, `message`, `authors`,
/// `date`); pages of 50 (or the configured page size) with a `Link: <…>;
/// rel="next"` header while more follow.
fn commits(
    app: &App,
    repo: &Repo,
    rev: &str,
    parts: &Parts,
    query: &[(String, String)],
) -> Result<Response> {
    let mut history = Vec::new();
    let mut next = Some(resolve_rev(app, repo, rev)?);
    while let Some(i) = next {
        history.push(i);
        next = repo.commits[i].parent;
    }
    let page_size = app.page_size.unwrap_or(50).max(1);
    let page: usize = match query.iter().find(|(k, _)| k == "p") {
        None => 0,
        Some((_, p)) => p
            .parse()
            .map_err(|_| ApiError::bad_request("Invalid page number"))?,
    };
    let start = page.saturating_mul(page_size).min(history.len());
    let end = (start + page_size).min(history.len());
    let entries: Vec<Value> = history[start..end]
        .iter()
        .map(|&i| {
            let commit = &repo.commits[i];
            json!({
                "id": commit.sha,
                "title": commit.title,
                "message": "",
                "authors": [],
                "date": commit.date,
            })
        })
        .collect();
    let mut resp = axum::Json(entries).into_response();
    if end < history.len() {
        set_next_link(&mut resp, app, parts, query, ("p", &(page + 1).to_string()));
    }
    Ok(resp)
}

/// R8: `POST …/paths-info/<rev>` with a form (`paths=a&paths=b&expand=…`) or
/// JSON (`{"paths": [...], "expand": bool}`) body. Missing paths are skipped.
fn paths_info(app: &App, repo: &Repo, rev: &str, body: &[u8]) -> Result<Response> {
    let commit = &repo.commits[resolve_rev(app, repo, rev)?];
    let (paths, expand) = match serde_json::from_slice::<Value>(body) {
        Ok(doc) => {
            let paths = doc["paths"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|p| p.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            (paths, doc["expand"].as_bool().unwrap_or(false))
        }
        Err(_) => {
            let form: Vec<(String, String)> = url::form_urlencoded::parse(body)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            let paths: Vec<String> = form
                .iter()
                .filter(|(k, _)| k == "paths")
                .map(|(_, v)| v.clone())
                .collect();
            (paths, flag(&form, "expand"))
        }
    };
    let entries: Vec<Value> = paths
        .iter()
        .filter_map(|p| {
            let p = p.trim_matches('/');
            commit
                .tree
                .get(p)
                .map(|node| tree_entry(repo, p, node, expand))
        })
        .collect();
    Ok(axum::Json(entries).into_response())
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    let raw = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    std::str::from_utf8(&raw)
        .ok()?
        .strip_prefix("offset:")?
        .parse()
        .ok()
}

fn content_type(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    match ext {
        "json" => "application/json",
        "md" | "txt" | "py" | "toml" | "cfg" | "yaml" | "yml" | "gitattributes" => {
            "text/plain; charset=utf-8"
        }
        _ => "application/octet-stream",
    }
}

/// `inline; filename*=UTF-8''<encoded>; filename="<ascii>";`
pub(super) fn content_disposition(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ascii: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!(
        "inline; filename*=UTF-8''{}; filename=\"{ascii}\";",
        utf8_percent_encode(name, QUERY_VALUE)
    )
}

fn check_gate(repo: &Repo, headers: &HeaderMap) -> Result<()> {
    if repo.gated == Gated::No {
        return Ok(());
    }
    match bearer(headers) {
        None => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            Some("GatedRepo"),
            format!(
                "Access to model {} is restricted. You must have access to it and be authenticated to access it. Please log in.",
                repo.id
            ),
        )),
        Some(token) if repo.allowed_tokens.iter().any(|t| t == token) => Ok(()),
        Some(_) => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            Some("GatedRepo"),
            format!(
                "Access to model {} is restricted and you are not in the authorized list.",
                repo.id
            ),
        )),
    }
}

/// The repo of a download, and the type it was asked as (`None` on
/// `/api/resolve-cache/…`, which never redirects again).
struct ResolveTarget<'a> {
    repo: &'a Repo,
    kind: Option<RepoType>,
}

/// R4/R5: `HEAD|GET …/resolve/<rev>/<path>`: a redirect to the CDN for an LFS
/// file, a redirect to `/api/resolve-cache/…` for other files when the server
/// answers as the current Hub, else the file itself.
fn resolve(
    app: &App,
    target: ResolveTarget<'_>,
    rev: &str,
    path_segments: &[&str],
    parts: &Parts,
    faults: &Faults,
) -> Result<Response> {
    let repo = target.repo;
    check_gate(repo, &parts.headers)?;
    let commit = &repo.commits[resolve_rev(app, repo, rev)?];
    let path = decode_joined(path_segments)?;
    let file: &FileMeta = match commit.tree.get(&path).map(|n| &n.kind) {
        Some(NodeKind::File(f)) => f,
        _ => return Err(ApiError::entry_not_found(Some(commit.sha.clone()))),
    };
    let mut headers = HeaderMap::new();
    headers.insert("x-repo-commit", header_value(commit.sha.as_str()));
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    headers.insert(header::VARY, HeaderValue::from_static("Origin, Accept"));
    if faults.xet_headers {
        let hash = hex::encode(Sha256::digest(file.oid.to_string().as_bytes()));
        headers.insert("x-xet-hash", header_value(&hash));
        let link = format!(
            "<{}/api/{}/{}/xet-read-token/{}>; rel=\"xet-auth\"",
            app.endpoints.hub,
            repo.primary.api_segment(),
            repo.id,
            commit.sha
        );
        headers.insert(header::LINK, header_value(&link));
    }
    if let Some(lfs) = &file.lfs {
        return Ok(lfs_redirect(app, &path, file, lfs, headers));
    }
    let etag = format!("\"{}\"", file.oid);
    headers.insert(header::ETAG, header_value(&etag));
    if app.resolve_cache
        && let Some(kind) = target.kind
    {
        let location = format!(
            "/api/resolve-cache/{}/{}/{}/{}?etag={}",
            kind.api_segment(),
            repo.id,
            commit.sha,
            path.split('/')
                .map(|s| utf8_percent_encode(s, QUERY_VALUE).to_string())
                .collect::<Vec<_>>()
                .join("/"),
            utf8_percent_encode(&etag, QUERY_VALUE)
        );
        return Ok(resolve_cache_redirect(&location, headers));
    }
    Ok(direct_file(app, &path, file, headers, parts, faults))
}

/// The Hub's answer for an LFS file: a `302` to its CDN URL, with the
/// `X-Linked-*` headers clients take the blob name and size from.
fn lfs_redirect(
    app: &App,
    path: &str,
    file: &FileMeta,
    lfs: &Lfs,
    mut headers: HeaderMap,
) -> Response {
    let location = format!(
        "{}/lfs/{}?X-Amz-Expires=3600&X-Amz-Signature={}&response-content-disposition={}",
        app.endpoints.cdn,
        lfs.sha256,
        app.signature(&lfs.sha256.to_string()),
        utf8_percent_encode(&content_disposition(path), QUERY_VALUE)
    );
    headers.insert(header::LOCATION, header_value(&location));
    headers.insert(
        "x-linked-etag",
        header_value(&format!("\"{}\"", lfs.sha256)),
    );
    headers.insert("x-linked-size", HeaderValue::from(file.size));
    headers.insert(header::ETAG, header_value(&format!("W/\"{}\"", file.oid)));
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    let body = format!("Found. Redirecting to {location}");
    (StatusCode::FOUND, headers, body).into_response()
}

/// The current Hub's answer for non-LFS files: a relative `307` to a
/// commit-pinned URL (`location`) that then answers like a direct `200`.
fn resolve_cache_redirect(location: &str, mut headers: HeaderMap) -> Response {
    headers.insert(header::LOCATION, header_value(location));
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    let body = format!("Temporary Redirect. Redirecting to {location}");
    (StatusCode::TEMPORARY_REDIRECT, headers, body).into_response()
}

/// A non-LFS file answered directly: `304` when `If-None-Match` names its
/// object id, else its content (ranges honoured, see [`file_body`]).
fn direct_file(
    app: &App,
    path: &str,
    file: &FileMeta,
    mut headers: HeaderMap,
    parts: &Parts,
    faults: &Faults,
) -> Response {
    let if_none_match = parts
        .headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok());
    if let Some(candidates) = if_none_match {
        let hit = candidates.split(',').map(str::trim).any(|c| {
            let c = c.strip_prefix("W/").unwrap_or(c);
            c == "*" || c.trim_matches('"') == file.oid.to_string()
        });
        if hit {
            return (StatusCode::NOT_MODIFIED, headers).into_response();
        }
    }
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(path)),
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        header_value(&content_disposition(path)),
    );
    file_body(
        app,
        headers,
        &file.content,
        file.size,
        &parts.headers,
        None,
        faults,
    )
}

/// Whether an `If-Range` value validates: a strong comparison with the
/// response's `ETag`, or with `also_valid` (the sha256 the Hub advertised as
/// `X-Linked-Etag`, which clients keep as the blob name). Dates never match.
fn if_range_matches(if_range: &str, etag: Option<&str>, also_valid: Option<&str>) -> bool {
    let value = if_range.trim();
    if value.starts_with("W/") || !value.starts_with('"') {
        return false;
    }
    let value = value.trim_matches('"');
    etag.is_some_and(|e| !e.starts_with("W/") && e.trim_matches('"') == value)
        || also_valid.is_some_and(|v| v == value)
}

/// A `200`, `206` or `416` answer streaming `content`, honouring `Range`
/// (guarded by `If-Range`: a validator other than the `ETag` in `headers` or
/// `also_valid` gets the whole body with `200`) and the body faults. `headers`
/// are added to every answer. A small file on disk without body faults comes
/// from the mirror's small-file cache ([`crate::small_files`]).
pub(super) fn file_body(
    app: &App,
    mut headers: HeaderMap,
    content: &Content,
    size: u64,
    request: &HeaderMap,
    also_valid: Option<&str>,
    faults: &Faults,
) -> Response {
    let range_header = request.get(header::RANGE).and_then(|v| v.to_str().ok());
    let if_range_fails = request
        .get(header::IF_RANGE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let etag = headers.get(header::ETAG).and_then(|e| e.to_str().ok());
            !if_range_matches(v, etag, also_valid)
        });
    let range = if faults.range_416 {
        RangeRequest::Unsatisfiable
    } else if faults.ignore_range || faults.gzip || if_range_fails {
        RangeRequest::Full
    } else {
        content::parse_range(range_header, size)
    };
    let (status, start, len) = match range {
        RangeRequest::Full => (StatusCode::OK, 0, size),
        RangeRequest::Partial { start, end } => {
            headers.insert(
                header::CONTENT_RANGE,
                header_value(&format!("bytes {start}-{end}/{size}")),
            );
            (StatusCode::PARTIAL_CONTENT, start, end - start + 1)
        }
        RangeRequest::Unsatisfiable => {
            headers.insert(
                header::CONTENT_RANGE,
                header_value(&format!("bytes */{size}")),
            );
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(0));
            return (StatusCode::RANGE_NOT_SATISFIABLE, headers).into_response();
        }
    };
    if faults.gzip {
        let stream = content::body_stream(content.clone(), start, len, faults.body);
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        headers.remove(header::CONTENT_LENGTH);
        let body = Body::from_stream(content::gzip_stream(stream));
        return (status, headers, body).into_response();
    }
    let advertised = match faults.length_delta {
        Some(delta) => len.saturating_add_signed(delta),
        None => len,
    };
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(advertised));
    let body = match content {
        Content::Disk(path)
            if size <= crate::small_files::MAX_FILE && faults.body == BodyFaults::default() =>
        {
            app.small_files.body(path, size, start, len)
        }
        _ => Body::from_stream(content::body_stream(
            content.clone(),
            start,
            len,
            faults.body,
        )),
    };
    (status, headers, body).into_response()
}
