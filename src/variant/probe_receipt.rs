//! Stored answers of the project's interpreter ([`super::PythonProbe`]), so
//! that a command whose interpreter has not changed since the last probe
//! starts no Python at all (issue 46, item 3).
//!
//! A receipt is one JSON file, `<cache>/.locks/kernels-probes/v1/<key>.json`, where
//! `<key>` is the hex SHA-256 of the interpreter's path and of the caller's
//! context (the process environment and working directory, see
//! `cli::settings::interpreter_context`). It holds the probe's output line as
//! the interpreter printed it, the scope it asked (`runtime` or `torch`), the
//! modules it asked about, and the fingerprint it was taken under:
//!
//! - the interpreter (a bare `python3` looked up on `PATH`): its own `lstat`
//!   (a link replaced or retargeted) and the `stat` of what it resolves to
//!   (size, mtime in ns, inode);
//! - the modification time (ns) of every directory on the interpreter's
//!   `sys.path`, of the directory torch was imported from and of the
//!   installed `kernels`' location: installing, upgrading or removing a
//!   package adds or renames entries there, which moves the mtime;
//! - for a torch probe, which also asked the GPU, the kernel's boot id
//!   (`/proc/sys/kernel/random/boot_id`): a new device needs a reboot.
//!
//! A receipt is used only when every part matches; otherwise the interpreter
//! runs and the receipt is replaced. A receipt that cannot be read or written
//! (a read-only cache) is ignored: the probe simply runs.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::environment::ProbeScope;

/// Folder under the cache root holding the receipts: inside `.locks/`, the
/// one top-level folder huggingface_hub's `scan_cache_dir` skips (anywhere
/// else it is reported as a corrupted repository).
pub const PROBE_RECEIPTS_DIR: &str = ".locks/kernels-probes/v1";

/// Where receipts of one command's interpreter live, and the context they are
/// keyed by.
#[derive(Debug, Clone)]
pub struct ProbeReceipts {
    /// `<cache>/.locks/kernels-probes/v1`.
    dir: PathBuf,
    /// A digest of the environment the interpreter would run in (variables,
    /// working directory), computed by the caller.
    context: String,
    /// `PATH`, to fingerprint the file a bare `python3` resolves to.
    path_var: Option<std::ffi::OsString>,
}

/// One stored probe, as written to disk.
#[derive(Debug, Serialize, Deserialize)]
struct Receipt {
    scope: String,
    modules: Vec<String>,
    fingerprint: Fingerprint,
    /// The probe's JSON line as the interpreter printed it.
    output: String,
}

/// What must be unchanged for a receipt to stand for a new probe.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Fingerprint {
    /// `lstat` of the interpreter path: mtime (ns) and inode.
    link: Option<(i128, u64)>,
    /// `stat` of the resolved interpreter: size, mtime (ns), inode.
    target: Option<(u64, i128, u64)>,
    /// Watched directories with their mtime (ns); `None` when missing.
    dirs: Vec<(PathBuf, Option<i128>)>,
    /// The boot id, for probes that asked the GPU.
    boot: Option<String>,
}

impl ProbeReceipts {
    /// Receipts under `cache_root` ([`PROBE_RECEIPTS_DIR`]) for commands run
    /// in `context` (any string that changes when the interpreter could see
    /// something else: its environment variables, the working directory).
    /// `path_var` is the `PATH` a bare interpreter name (`python3`) is
    /// looked up in, so that the file it resolves to is fingerprinted.
    pub fn new(
        cache_root: &Path,
        context: String,
        path_var: Option<std::ffi::OsString>,
    ) -> ProbeReceipts {
        ProbeReceipts {
            dir: cache_root.join(PROBE_RECEIPTS_DIR),
            context,
            path_var,
        }
    }

    /// The file `python` names: itself when it has a directory part, else
    /// the first match on `PATH` (as the process start would find it).
    fn located(&self, python: &Path) -> PathBuf {
        if python.components().count() > 1 {
            return python.to_owned();
        }
        self.path_var
            .as_deref()
            .into_iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join(python))
            .find(|candidate| candidate.is_file())
            .unwrap_or_else(|| python.to_owned())
    }

    fn path(&self, python: &Path) -> PathBuf {
        let mut key = python.as_os_str().as_encoded_bytes().to_vec();
        key.push(0);
        key.extend_from_slice(self.context.as_bytes());
        let digest = kernels_types::digest::sha256(&key);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{hex}.json"))
    }

    /// The stored output of a probe of `python` that asked at least `scope`
    /// and exactly `modules`, with the scope it asked, when its fingerprint
    /// still matches; else `None`.
    pub fn load(
        &self,
        python: &Path,
        scope: ProbeScope,
        modules: &[String],
    ) -> Option<(ProbeScope, String)> {
        let text = fs_err::read_to_string(self.path(python)).ok()?;
        let receipt: Receipt = serde_json::from_str(&text).ok()?;
        let stored = match receipt.scope.as_str() {
            "torch" => ProbeScope::Torch,
            "runtime" => ProbeScope::Runtime,
            _ => return None,
        };
        if stored < scope || receipt.modules != modules {
            return None;
        }
        let dirs: Vec<PathBuf> = receipt
            .fingerprint
            .dirs
            .iter()
            .map(|(dir, _)| dir.clone())
            .collect();
        (fingerprint(&self.located(python), stored, &dirs) == receipt.fingerprint)
            .then_some((stored, receipt.output))
    }

    /// Stores the `output` of a probe of `python` that asked `scope` and
    /// `modules`, fingerprinting `watched` (the interpreter's `sys.path`
    /// directories, torch's and `kernels`' locations). Best effort: a
    /// receipt that cannot be written is skipped, and none is written where
    /// the cache root does not exist yet (a failed command leaves no cache).
    pub fn store(
        &self,
        python: &Path,
        scope: ProbeScope,
        modules: &[String],
        output: &str,
        watched: &[PathBuf],
    ) {
        let receipt = Receipt {
            scope: match scope {
                ProbeScope::Torch => "torch",
                ProbeScope::Runtime => "runtime",
            }
            .to_owned(),
            modules: modules.to_vec(),
            fingerprint: fingerprint(&self.located(python), scope, watched),
            output: output.to_owned(),
        };
        let Ok(text) = serde_json::to_string(&receipt) else {
            return;
        };
        let path = self.path(python);
        // A command that never created the cache (it failed before) does
        // not create it for a receipt.
        let cache_exists = self.dir.ancestors().nth(3).is_some_and(Path::is_dir);
        if !cache_exists || fs_err::create_dir_all(&self.dir).is_err() {
            return;
        }
        let temp = self.dir.join(format!(".{}.tmp", std::process::id()));
        if fs_err::write(&temp, text).is_ok() && fs_err::rename(&temp, &path).is_err() {
            let _ = fs_err::remove_file(&temp);
        }
    }
}

/// The fingerprint of `python` now, watching `dirs` (deduplicated, in order).
fn fingerprint(python: &Path, scope: ProbeScope, dirs: &[PathBuf]) -> Fingerprint {
    let mut seen = std::collections::BTreeSet::new();
    Fingerprint {
        link: fs_err::symlink_metadata(python)
            .ok()
            .map(|m| (nanos(&m), inode(&m))),
        target: fs_err::metadata(python)
            .ok()
            .map(|m| (m.len(), nanos(&m), inode(&m))),
        dirs: dirs
            .iter()
            .filter(|dir| seen.insert((*dir).clone()))
            .map(|dir| (dir.clone(), fs_err::metadata(dir).ok().map(|m| nanos(&m))))
            .collect(),
        boot: (scope == ProbeScope::Torch)
            .then(|| fs_err::read_to_string("/proc/sys/kernel/random/boot_id").ok())
            .flatten()
            .map(|id| id.trim().to_owned()),
    }
}

/// A modification time in nanoseconds since the epoch (negative before it).
fn nanos(meta: &std::fs::Metadata) -> i128 {
    match meta.modified() {
        Ok(time) => match time.duration_since(std::time::UNIX_EPOCH) {
            Ok(after) => i128::try_from(after.as_nanos()).unwrap_or(i128::MAX),
            Err(before) => -i128::try_from(before.duration().as_nanos()).unwrap_or(i128::MAX),
        },
        Err(_) => 0,
    }
}

/// The inode number where the platform has one, else 0.
fn inode(meta: &std::fs::Metadata) -> u64 {
    #[cfg(unix)]
    {
        std::os::unix::fs::MetadataExt::ino(meta)
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receipt_stands_until_a_watched_folder_or_the_interpreter_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let python = tmp.path().join("python3");
        fs_err::write(&python, "#!/bin/sh\n").unwrap();
        let site = tmp.path().join("site");
        fs_err::create_dir(&site).unwrap();
        let receipts = ProbeReceipts::new(tmp.path(), "ctx".to_owned(), None);
        let modules = vec!["einops".to_owned()];
        receipts.store(
            &python,
            ProbeScope::Torch,
            &modules,
            "{}",
            std::slice::from_ref(&site),
        );
        // A torch probe answers a runtime question too; other modules do not.
        assert_eq!(
            receipts.load(&python, ProbeScope::Runtime, &modules),
            Some((ProbeScope::Torch, "{}".to_owned()))
        );
        assert_eq!(receipts.load(&python, ProbeScope::Torch, &[]), None);
        // Another context is another key.
        let other = ProbeReceipts::new(tmp.path(), "other".to_owned(), None);
        assert_eq!(other.load(&python, ProbeScope::Runtime, &modules), None);
        // A package installed into a watched folder moves its mtime.
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs_err::create_dir(site.join("torch-9.9.dist-info")).unwrap();
        assert_eq!(receipts.load(&python, ProbeScope::Runtime, &modules), None);
        // Stored again, then the interpreter replaced.
        receipts.store(&python, ProbeScope::Runtime, &modules, "{}", &[site]);
        assert!(
            receipts
                .load(&python, ProbeScope::Runtime, &modules)
                .is_some()
        );
        assert_eq!(receipts.load(&python, ProbeScope::Torch, &modules), None);
        fs_err::remove_file(&python).unwrap();
        fs_err::write(&python, "#!/bin/sh\nexit 0\n").unwrap();
        assert_eq!(receipts.load(&python, ProbeScope::Runtime, &modules), None);
    }
}
