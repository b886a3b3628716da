//! The `refs/<revision>` files of a repository folder: which commit a branch or
//! tag named when it was last resolved, as `huggingface_hub` writes them
//! (exactly the commit id, no newline; nested names such as `refs/pr/1` are
//! nested folders). The only reader and writer of `refs/`.

use std::path::PathBuf;

use kernels_types::CommitId;

use super::layout::components;
use super::{CacheError, RepoCache};

/// One ref file of a repository folder (see [`RepoCache::refs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedRef {
    /// The revision name: the file's path below `refs/`, components joined with `/`.
    pub name: String,
    /// The commit the file holds.
    pub commit: CommitId,
}

/// The commit a ref file's `content` names: surrounding whitespace is ignored
/// (a hand-written file may end in a newline) and the rest must be a full
/// commit id in either case; it is returned lowercase. Anything else is no ref.
fn parse_ref(content: &str) -> Option<CommitId> {
    content.trim().parse().ok()
}

impl RepoCache {
    /// `<root>/<folder>/refs`.
    pub fn refs_dir(&self) -> PathBuf {
        self.dir().join("refs")
    }

    /// The file of `revision` below [`RepoCache::refs_dir`], when the name is
    /// a plain relative path ([`kernels_types::repo_path`]).
    fn ref_path(&self, revision: &str) -> Option<PathBuf> {
        let mut path = self.refs_dir();
        path.extend(components(revision).ok()?);
        Some(path)
    }

    /// Records that `revision` (a branch or tag, possibly containing `/`) points
    /// at `commit`: writes `refs/<revision>` with exactly the 40 bytes of the
    /// commit id, no newline, through [`crate::write_atomic`], and only when the
    /// content changes. Commit-id revisions write nothing (as `huggingface_hub`).
    ///
    /// Errors: [`CacheError::BadCommit`] when `commit` is not canonical,
    /// [`CacheError::BadRef`] when `revision` is not a plain relative path,
    /// [`CacheError::Io`] when the file cannot be written.
    pub fn write_ref(&self, revision: &str, commit: &str) -> Result<(), CacheError> {
        if !CommitId::is_canonical(commit) {
            return Err(CacheError::BadCommit {
                value: commit.to_owned(),
            });
        }
        if revision == commit {
            return Ok(());
        }
        let path = self.ref_path(revision).ok_or_else(|| CacheError::BadRef {
            revision: revision.to_owned(),
        })?;
        if fs_err::read(&path).is_ok_and(|c| c == commit.as_bytes()) {
            return Ok(());
        }
        if let Some(parent) = path.parent() {
            self.create_dir(parent)?;
        }
        crate::write_atomic(&path, commit.as_bytes())?;
        Ok(())
    }

    /// The commit stored in `refs/<revision>`, if the file exists and holds a
    /// commit id.
    pub fn read_ref(&self, revision: &str) -> Option<CommitId> {
        let content = fs_err::read_to_string(self.ref_path(revision)?).ok()?;
        parse_ref(&content)
    }

    /// Every ref file of this folder that holds a commit id, nested names
    /// joined with `/`, sorted by name; empty without a `refs/` folder.
    pub fn refs(&self) -> Vec<CachedRef> {
        let dir = self.refs_dir();
        let mut refs: Vec<CachedRef> = walkdir::WalkDir::new(&dir)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .filter_map(|e| {
                let rel = e.path().strip_prefix(&dir).ok()?;
                let name = rel
                    .components()
                    .map(|c| c.as_os_str().to_str())
                    .collect::<Option<Vec<_>>>()?
                    .join("/");
                let commit = parse_ref(&fs_err::read_to_string(e.path()).ok()?)?;
                Some(CachedRef { name, commit })
            })
            .collect();
        refs.sort_by(|a, b| a.name.cmp(&b.name));
        refs
    }

    /// The names of the refs that hold `commit`, sorted.
    pub fn refs_at(&self, commit: &CommitId) -> Vec<String> {
        self.refs()
            .into_iter()
            .filter(|r| r.commit == *commit)
            .map(|r| r.name)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use kernels_types::RepoType;

    use crate::{HubCache, RepoCache};

    const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

    fn repo(root: &Path) -> RepoCache {
        HubCache::new(root).repo(&"acme/relu".parse().unwrap(), RepoType::Kernel)
    }

    #[test]
    fn refs_are_40_bytes_and_skipped_for_commits() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        repo.write_ref(COMMIT, COMMIT).unwrap();
        assert!(!repo.refs_dir().exists());
        repo.write_ref("refs/heads/v1", COMMIT).unwrap();
        let bytes = fs_err::read(repo.dir().join("refs/refs/heads/v1")).unwrap();
        assert_eq!(bytes, COMMIT.as_bytes());
        assert_eq!(repo.read_ref("refs/heads/v1").unwrap().as_str(), COMMIT);
        assert!(repo.write_ref("../x", COMMIT).is_err());
    }

    #[test]
    fn listing_reads_nested_names_and_one_content_rule() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        assert!(repo.refs().is_empty());
        repo.write_ref("v1", COMMIT).unwrap();
        repo.write_ref("refs/pr/1", COMMIT).unwrap();
        let other = repo.refs_dir().join("v2");
        fs_err::write(&other, format!("{}\n", COMMIT.to_ascii_uppercase())).unwrap();
        fs_err::write(repo.refs_dir().join("junk"), "not a commit").unwrap();
        let names: Vec<_> = repo.refs().into_iter().map(|r| r.name).collect();
        assert_eq!(names, ["refs/pr/1", "v1", "v2"]);
        assert_eq!(repo.read_ref("v2").unwrap().as_str(), COMMIT);
        assert_eq!(repo.read_ref("junk"), None);
        assert_eq!(
            repo.refs_at(&COMMIT.to_ascii_uppercase().parse().unwrap()),
            ["refs/pr/1", "v1", "v2"]
        );
    }
}
