//! The LFS "CDN" listener: `GET|HEAD /lfs/<sha256>`, S3-style.
//!
//! It never sends `X-Repo-Commit`, `X-Linked-*` or `X-Error-Code`, so a client
//! that wrongly follows the Hub's `302` during its metadata `HEAD` fails as it
//! would against the real Hub. Requests carrying `Authorization` are rejected
//! with `400 InvalidArgument` (unless `--cdn-allow-auth`), which proves that a
//! client strips its token on the cross-host hop.

use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha1::{Digest, Sha1};

use super::control::Faults;
use super::hub::file_body;
use super::{App, header_value};

fn xml_error(status: StatusCode, code: &str, message: &str) -> Response {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message></Error>\n"
    );
    (status, [(header::CONTENT_TYPE, "application/xml")], body).into_response()
}

/// Serves one CDN request.
pub(super) fn route(app: &App, parts: &Parts, faults: &Faults) -> Response {
    if parts.method != Method::GET && parts.method != Method::HEAD {
        return xml_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "The specified method is not allowed against this resource.",
        );
    }
    let Some(sha256) = parts
        .uri
        .path()
        .strip_prefix("/lfs/")
        .filter(|s| !s.contains('/'))
    else {
        return xml_error(
            StatusCode::NOT_FOUND,
            "NoSuchKey",
            "The specified key does not exist.",
        );
    };
    if !app.cdn_allow_auth && parts.headers.contains_key(header::AUTHORIZATION) {
        return xml_error(
            StatusCode::BAD_REQUEST,
            "InvalidArgument",
            "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified",
        );
    }
    let Some((size, content)) = app.mirror.object(sha256) else {
        return xml_error(
            StatusCode::NOT_FOUND,
            "NoSuchKey",
            "The specified key does not exist.",
        );
    };
    let query: Vec<(String, String)> =
        url::form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
    let param = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let signature = param("X-Amz-Signature");
    if signature.is_some() && faults.cdn_expire_urls {
        return xml_error(StatusCode::FORBIDDEN, "AccessDenied", "Request has expired");
    }
    if signature.is_some_and(|sig| sig != app.signature(sha256)) {
        return xml_error(
            StatusCode::FORBIDDEN,
            "AccessDenied",
            "Request has expired or the signature does not match",
        );
    }
    let mut headers = HeaderMap::new();
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    // S3 ETags are MD5-like and deliberately not the sha256 clients name blobs by.
    let etag = hex::encode(&Sha1::digest(sha256.as_bytes())[..16]);
    headers.insert(header::ETAG, header_value(&format!("\"{etag}\"")));
    if let Some(disposition) = param("response-content-disposition") {
        headers.insert(header::CONTENT_DISPOSITION, header_value(disposition));
    }
    file_body(
        app,
        headers,
        content,
        *size,
        &parts.headers,
        Some(sha256),
        faults,
    )
}
