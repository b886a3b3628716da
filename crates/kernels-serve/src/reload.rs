//! Reloading the mirror while serving.
//!
//! Every request works on one snapshot of the server state ([`App`], which
//! holds the loaded [`Mirror`]); a reload loads the mirror directory again
//! off the request path and swaps the snapshot in one step. Requests already
//! running (a download halfway through a file) keep the snapshot they started
//! with; connections are never touched. A reload that fails (a malformed
//! `repo.toml`, a link leaving the root) keeps the previous mirror and
//! reports why.
//!
//! Triggers: `SIGHUP` (which also reopens the access log, for rotation), and
//! with `--watch` a poll of the mirror's metadata files (see [`fingerprint`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use super::access_log::AccessLog;
use super::{App, Mirror, MirrorError};

/// The current server state, swapped as a whole on reload.
pub(crate) struct Shared {
    current: RwLock<Arc<App>>,
    access_log: Option<AccessLog>,
}

impl Shared {
    pub(crate) fn new(app: App, access_log: Option<AccessLog>) -> Shared {
        Shared {
            current: RwLock::new(Arc::new(app)),
            access_log,
        }
    }

    /// The snapshot a new request works on.
    pub(crate) fn app(&self) -> Arc<App> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn access_log(&self) -> Option<&AccessLog> {
        self.access_log.as_ref()
    }

    fn swap(&self, mirror: Mirror) {
        let next = Arc::new(self.app().with_mirror(mirror));
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = next;
    }
}

/// What happened on a reload, for the command to report.
#[derive(Debug)]
pub enum ReloadEvent {
    /// The mirror was loaded again and is now served.
    Reloaded {
        /// Number of repositories now served.
        repos: usize,
    },
    /// Loading failed; the previous mirror is still served.
    Failed(MirrorError),
}

/// Loads the mirror again and swaps it in on success.
async fn reload(shared: &Shared, dir: &Path) -> ReloadEvent {
    let owned = dir.to_owned();
    let loaded = tokio::task::spawn_blocking(move || Mirror::load(&owned))
        .await
        .unwrap_or_else(|e| Err(MirrorError::Io(std::io::Error::other(e.to_string()))));
    match loaded {
        Ok(mirror) => {
            let repos = mirror.repos.len();
            shared.swap(mirror);
            tracing::info!("reloaded {}: {repos} repositories", dir.display());
            ReloadEvent::Reloaded { repos }
        }
        Err(err) => {
            tracing::warn!("reloading {} failed: {err}", dir.display());
            ReloadEvent::Failed(err)
        }
    }
}

/// The reloader's state taken with the mirror it starts from, before the
/// server says it is ready: the `SIGHUP` handler is in place (a signal sent
/// right after the URL is printed reloads instead of killing the process)
/// and, with `--watch`, the fingerprint of the mirror as loaded (a change
/// made right after is a change).
pub(crate) struct Reloader {
    #[cfg(unix)]
    hangup: Option<tokio::signal::unix::Signal>,
    loaded: Vec<(PathBuf, u64, Option<SystemTime>)>,
    dir: PathBuf,
    watch: Option<Duration>,
}

impl Reloader {
    /// Must be called within the server's Tokio runtime.
    pub(crate) fn new(dir: PathBuf, watch: Option<Duration>) -> Reloader {
        Reloader {
            #[cfg(unix)]
            hangup: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok(),
            loaded: if watch.is_some() {
                fingerprint(&dir)
            } else {
                Vec::new()
            },
            dir,
            watch,
        }
    }
}

/// Runs forever: reloads on `SIGHUP` and, with `watch`, when the mirror's
/// fingerprint changed and then held still for one more poll.
pub(crate) async fn run(
    shared: Arc<Shared>,
    reloader: Reloader,
    on_event: impl Fn(ReloadEvent) + Send + Sync + 'static,
) {
    let Reloader {
        #[cfg(unix)]
        mut hangup,
        mut loaded,
        dir,
        watch,
    } = reloader;
    let fingerprint_of = |dir: PathBuf| async move {
        tokio::task::spawn_blocking(move || fingerprint(&dir))
            .await
            .unwrap_or_default()
    };
    let mut last_seen = loaded.clone();
    let poll = watch.unwrap_or(Duration::from_secs(3600));
    loop {
        #[cfg(unix)]
        let hup = async {
            match &mut hangup {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        #[cfg(not(unix))]
        let hup = std::future::pending::<()>();
        let by_signal = tokio::select! {
            () = hup => true,
            () = tokio::time::sleep(poll), if watch.is_some() => false,
        };
        if by_signal {
            if let Some(log) = shared.access_log() {
                log.reopen();
            }
            if watch.is_some() {
                loaded = fingerprint_of(dir.clone()).await;
                last_seen = loaded.clone();
            }
            on_event(reload(&shared, &dir).await);
            continue;
        }
        let now = fingerprint_of(dir.clone()).await;
        // Reload once a change has settled, so a writer caught halfway is
        // not loaded (and a failed load is not retried until the next change).
        if now != loaded && now == last_seen {
            loaded = now.clone();
            on_event(reload(&shared, &dir).await);
        }
        last_seen = now;
    }
}

/// What `--watch` compares between polls: name, size and modification time
/// of the mirror's metadata (`orgs/*`, each repository folder, its
/// `repo.toml`, its `commits/` entries and their `commit.toml`). Adding,
/// removing or editing a repository, a ref or a commit changes it; editing a
/// file inside an existing commit's tree does not (commits are meant to be
/// immutable; send `SIGHUP` after such an edit).
fn fingerprint(root: &Path) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    let mut out = Vec::new();
    let mut note = |path: &Path| {
        if let Ok(meta) = fs_err::symlink_metadata(path) {
            out.push((path.to_owned(), meta.len(), meta.modified().ok()));
        }
    };
    let children = |dir: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = fs_err::read_dir(dir)
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        v.sort();
        v
    };
    for org in children(&root.join("orgs")) {
        note(&org);
    }
    for kind in ["kernels", "models"] {
        for owner in children(&root.join("repos").join(kind)) {
            note(&owner);
            for repo in children(&owner) {
                note(&repo);
                note(&repo.join("repo.toml"));
                for commit in children(&repo.join("commits")) {
                    note(&commit);
                    note(&commit.join("commit.toml"));
                }
            }
        }
    }
    out
}
