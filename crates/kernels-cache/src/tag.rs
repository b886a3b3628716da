//! The cache directory tag (`CACHEDIR.TAG`, the Cache Directory Tagging
//! Specification) in the cache root, so that backup and archiving tools skip the
//! cache. `huggingface_hub` 1.9+ writes the same file, with the same bytes,
//! whenever it stores a file in the cache; `kernels cache ls/prune` and the
//! readers of this crate look only at repository folders, so it is never taken
//! for one.

use std::io::ErrorKind;
use std::path::Path;

/// The file name, in the cache root.
pub const CACHEDIR_TAG_NAME: &str = "CACHEDIR.TAG";

/// The content `huggingface_hub` 1.9 through 2.4 writes (`_local_folder.py`,
/// `CACHEDIR_TAG_CONTENT`): the specification's signature line, then comment
/// lines naming the writer and the specification's address.
pub const CACHEDIR_TAG: &str = "Signature: 8a477f597d28d172789f06886806bc55\n\
# This file is a cache directory tag created by huggingface_hub.\n\
# For information about cache directory tags, see:\n\
#\thttps://bford.info/cachedir/\n";

/// Writes [`CACHEDIR_TAG`] to `<root>/CACHEDIR.TAG` when nothing of that name
/// exists; a file already there, whatever its content, is left alone, except a
/// strict prefix of the tag (what a process killed while writing it leaves),
/// which is completed. Returns whether it wrote.
///
/// The file is created with `O_EXCL` and written in place with one write of
/// 191 bytes, as `huggingface_hub` writes it, not through a temporary file: a
/// process killed there leaves at worst a partial tag (completed by the next
/// run), never a stray temporary file in the cache root, and of several
/// processes tagging one cache exactly one creates the file.
///
/// Best effort, as `huggingface_hub` (which ignores any `OSError`): a root that
/// is read-only or missing is no error.
pub fn ensure_tag(root: &Path) -> bool {
    use std::io::Write as _;
    let path = root.join(CACHEDIR_TAG_NAME);
    let tag = CACHEDIR_TAG.as_bytes();
    match fs_err::read(&path) {
        Ok(existing) if existing.len() < tag.len() && tag.starts_with(&existing) => {
            fs_err::write(&path, tag).is_ok()
        }
        Ok(_) => false,
        Err(err) if err.kind() == ErrorKind::NotFound => fs_err::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .and_then(|mut file| file.write_all(tag))
            .is_ok(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_has_huggingface_hubs_bytes_and_is_written_once() {
        let dir = tempfile::tempdir().unwrap();
        assert!(ensure_tag(dir.path()));
        let path = dir.path().join(CACHEDIR_TAG_NAME);
        let written = fs_err::read(&path).unwrap();
        // The specification: the file starts with exactly this signature.
        assert!(written.starts_with(b"Signature: 8a477f597d28d172789f06886806bc55"));
        assert_eq!(written.len(), 191);
        assert_eq!(written, CACHEDIR_TAG.as_bytes());
        // A tag already there, even a different one, is kept.
        fs_err::write(
            &path,
            "Signature: 8a477f597d28d172789f06886806bc55\n# another tool\n",
        )
        .unwrap();
        assert!(!ensure_tag(dir.path()));
        assert_eq!(
            fs_err::read_to_string(&path).unwrap(),
            "Signature: 8a477f597d28d172789f06886806bc55\n# another tool\n"
        );
        // What a killed writer left is completed.
        fs_err::write(&path, &CACHEDIR_TAG.as_bytes()[..20]).unwrap();
        assert!(ensure_tag(dir.path()));
        assert_eq!(fs_err::read(&path).unwrap(), CACHEDIR_TAG.as_bytes());
        fs_err::write(&path, "").unwrap();
        assert!(ensure_tag(dir.path()));
        assert_eq!(fs_err::read(&path).unwrap(), CACHEDIR_TAG.as_bytes());
        // Nothing else is written.
        let names: Vec<_> = fs_err::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [CACHEDIR_TAG_NAME]);
    }

    #[test]
    fn a_missing_root_is_no_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!ensure_tag(&dir.path().join("missing")));
    }
}
