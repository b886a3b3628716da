//! Everything about `kernels.lock`: reading `pyproject.toml` ([`manifest`]),
//! requirements ([`requirement`]), resolving them against the Hub
//! ([`resolver`]), locking a project ([`project`]), checking a lock against its
//! manifest ([`freshness`]), repairing merge conflicts ([`conflict`]), choosing
//! the target runtime ([`profile`]) and which requirement forms it reads
//! ([`support`]), what a commit is called ([`label`]), and the two on-disk
//! formats ([`format`](mod@format)); raising integer requirements to a newer
//! major ([`breaking`]); which signatures the project accepts
//! ([`trust_settings`]).

pub mod breaking;
pub mod conflict;
pub mod cooldown;
pub mod declared;
pub mod edit;
pub mod fit;
pub mod format;
pub mod freshness;
pub mod inspect;
pub mod label;
pub mod manifest;
pub mod metadata;
pub mod profile;
pub mod project;
pub mod provenance;
pub mod requirement;
pub mod resolver;
pub mod short_commit;
pub mod sticky;
pub mod support;
pub mod trust_settings;
