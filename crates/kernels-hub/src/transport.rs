//! A failed HTTP exchange below the status line (connection, TLS, timeout,
//! body transfer), classified by the error types in its `source()` chain, never
//! by message text.
//!
//! [`TransportError`] wraps the HTTP library's error so that none of its types
//! is part of this crate's API. Its `Display` and `source()` are those of the
//! wrapped error (without the URL, which [`crate::HubError`] names once), so a
//! walk to the innermost cause reads the same as before the wrapping.

use std::error::Error as StdError;
use std::fmt;
use std::io;

use tokio_rustls::rustls;

/// What kind of transport failure a [`TransportError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    /// No connection could be set up (refused, DNS, TLS handshake).
    Connect,
    /// The server's TLS certificate was refused (rustls'
    /// `InvalidCertificate`), a kind of [`TransportKind::Connect`] failure.
    Certificate,
    /// A timeout of the HTTP library (connect or read timeout).
    Timeout,
    /// The response body broke off (reset, closed early, bad framing).
    Body,
    /// The request could not be built (a bad URL or header).
    Builder,
    /// Redirects could not be followed.
    Redirect,
    /// Anything else (sending the request, decoding the head).
    Other,
}

/// A transport failure, classified ([`TransportError::kind`]).
pub struct TransportError {
    inner: reqwest::Error,
    kind: TransportKind,
}

impl TransportError {
    /// Wraps an HTTP library error, dropping the URL it carries.
    pub(crate) fn new(err: reqwest::Error) -> Self {
        let kind = classify(&err);
        TransportError {
            inner: err.without_url(),
            kind,
        }
    }

    /// The kind of failure.
    pub fn kind(&self) -> TransportKind {
        self.kind
    }

    /// Whether no connection could be set up (also for a refused certificate).
    pub fn is_connect(&self) -> bool {
        matches!(
            self.kind,
            TransportKind::Connect | TransportKind::Certificate
        )
    }

    /// Whether trying again may succeed: everything but an unbuildable request,
    /// a redirect failure and a refused certificate, which fail the same way
    /// every time.
    pub fn is_retryable(&self) -> bool {
        !matches!(
            self.kind,
            TransportKind::Builder | TransportKind::Redirect | TransportKind::Certificate
        )
    }

    /// The HTTP status the failure came with, if any.
    pub fn status(&self) -> Option<u16> {
        self.inner.status().map(|s| s.as_u16())
    }
}

impl fmt::Debug for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransportError")
            .field("kind", &self.kind)
            .field("inner", &self.inner)
            .finish()
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

impl StdError for TransportError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.inner.source()
    }
}

fn classify(err: &reqwest::Error) -> TransportKind {
    if err.is_builder() {
        TransportKind::Builder
    } else if err.is_redirect() {
        TransportKind::Redirect
    } else if err.is_connect() {
        if refused_certificate(err) {
            TransportKind::Certificate
        } else {
            TransportKind::Connect
        }
    } else if err.is_timeout() {
        TransportKind::Timeout
    } else if err.is_body() || err.is_decode() {
        TransportKind::Body
    } else {
        TransportKind::Other
    }
}

/// Every error in the chain of `err`, `err` first. An [`io::Error`] wrapping
/// another error yields that one next: `io::Error::source` skips it.
pub(crate) fn chain<'a>(
    err: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(err), |&err: &&'a (dyn StdError + 'static)| {
        match err.downcast_ref::<io::Error>() {
            Some(io) => io.get_ref().map(|inner| inner as &(dyn StdError + 'static)),
            None => err.source(),
        }
    })
}

/// Whether rustls refused the peer's certificate somewhere in the chain.
fn refused_certificate(err: &reqwest::Error) -> bool {
    chain(err).any(|err| {
        matches!(
            err.downcast_ref::<rustls::Error>(),
            Some(rustls::Error::InvalidCertificate(_))
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Outer(io::Error);

    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("client error (Connect)")
        }
    }

    impl StdError for Outer {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn chain_looks_inside_io_errors() {
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let outer = Outer(io::Error::new(io::ErrorKind::InvalidData, tls));
        let found = chain(&outer).any(|e| {
            matches!(
                e.downcast_ref::<rustls::Error>(),
                Some(rustls::Error::InvalidCertificate(_))
            )
        });
        assert!(found);
        assert_eq!(chain(&outer).count(), 3);
    }
}
