//! Collecting a variant's files and writing them, with the generated
//! `.dist-info` files, into a reproducible zip.

use std::io::{self, BufWriter, Read, Seek, Write};
use std::path::{Component, Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

use crate::wheel::error::WheelError;

/// The earliest time a zip entry can carry: 1980-01-01T00:00:00Z.
pub const ZIP_EPOCH: u64 = 315_532_800;

/// Deflate level of every entry. On real kernel libraries level 3 takes about
/// half the time of zlib's default 6 for wheels about 5 % larger; the bytes
/// depend only on the input (and the pinned compressor), so rebuilds stay
/// identical.
const DEFLATE_LEVEL: i64 = 3;

/// One file of the variant, to be stored at `arcname`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Path inside the wheel, `/`-separated.
    pub arcname: String,
    /// Where the content is read from (symlinks are followed).
    pub path: PathBuf,
    /// Permission bits (`0o644`, `0o755`, …).
    pub mode: u32,
    /// For a zip-layout variant, the member of the archive at `path` whose
    /// bytes are stored (`None`: the file at `path` itself).
    pub member: Option<String>,
}

/// The entries of a zip-layout variant (`"build-layout": "zip"`, reference
/// 0.19.1 `importer.py`): every file of the archive `<dir>/<id>.zip` below
/// `prefix` (the package the runtime executes the archive's `__init__.py`
/// as), then the variant's other files (the archive itself left out), as
/// [`collect`] lists them; sorted by archive name.
///
/// # Errors
/// [`WheelError::CorruptArchive`] naming the archive when it cannot be read
/// as a zip, has unsafe member names or no `__init__.py`; as [`collect`].
pub(crate) fn collect_zip(
    dir: &Path,
    id: &str,
    prefix: &str,
    trust_root: &Path,
) -> Result<Vec<Entry>, WheelError> {
    let archive = dir.join(format!("{id}.zip"));
    let corrupt = |reason: String| WheelError::CorruptArchive {
        path: archive.clone(),
        reason,
    };
    let file = fs_err::File::open(&archive).map_err(|err| corrupt(err.to_string()))?;
    let zip = zip::ZipArchive::new(file).map_err(|err| corrupt(err.to_string()))?;
    if zip.index_for_name("__init__.py").is_none() {
        return Err(corrupt("it has no __init__.py at its root".into()));
    }
    let mut entries: Vec<Entry> = Vec::new();
    for name in zip.file_names() {
        let name = name.map_err(|err| corrupt(err.to_string()))?;
        if name.ends_with('/') || name.ends_with(".pyc") {
            continue;
        }
        let safe = name.split('/').all(|part| {
            !part.is_empty() && part != "." && part != ".." && !part.contains(['\\', '\n', '\r'])
        });
        if !safe {
            return Err(corrupt(format!(
                "member `{name}` is not a safe relative path"
            )));
        }
        entries.push(Entry {
            arcname: format!("{prefix}/{name}"),
            path: archive.clone(),
            mode: 0o644,
            member: Some(name.clone().into_owned()),
        });
    }
    let archive_name = format!("{prefix}/{id}.zip");
    let taken: std::collections::BTreeSet<String> =
        entries.iter().map(|e| e.arcname.clone()).collect();
    entries.extend(
        collect(dir, prefix, trust_root)?
            .into_iter()
            .filter(|e| e.arcname != archive_name && !taken.contains(&e.arcname)),
    );
    entries.sort_by(|a, b| a.arcname.cmp(&b.arcname));
    Ok(entries)
}

/// Lists the files under `root`, stored below `prefix` in the wheel, sorted
/// by archive name. Skips `__pycache__` directories and `*.pyc` files.
///
/// Every path must stay inside `trust_root` once symlinks are resolved (a Hub
/// cache snapshot's files point into the repository's `blobs/`, so the
/// trust root of a snapshot is its repository folder), be valid UTF-8 and
/// name only regular files and directories.
pub(crate) fn collect(
    root: &Path,
    prefix: &str,
    trust_root: &Path,
) -> Result<Vec<Entry>, WheelError> {
    let trust_root = fs_err::canonicalize(trust_root)?;
    let unsafe_path = |path: &Path, reason: &str| WheelError::UnsafePath {
        path: path.to_path_buf(),
        reason: reason.to_owned(),
    };
    let mut entries = Vec::new();
    let walk = walkdir::WalkDir::new(root)
        .follow_links(true)
        .into_iter()
        .filter_entry(|e| !(e.file_type().is_dir() && e.file_name() == "__pycache__"));
    for item in walk {
        let item = item.map_err(|err| match err.loop_ancestor() {
            Some(_) => unsafe_path(
                err.path().unwrap_or(root),
                "the symlink points back at one of its parent directories",
            ),
            None => WheelError::Io(err.into()),
        })?;
        let path = item.path();
        let real = fs_err::canonicalize(path)?;
        if !real.starts_with(&trust_root) {
            return Err(unsafe_path(
                path,
                &format!(
                    "it resolves to {}, outside {}",
                    real.display(),
                    trust_root.display()
                ),
            ));
        }
        if item.file_type().is_dir() {
            continue;
        }
        if !item.file_type().is_file() {
            return Err(unsafe_path(path, "it is not a regular file"));
        }
        if item.file_name().to_string_lossy().ends_with(".pyc") {
            continue;
        }
        let relative = path
            .strip_prefix(root)
            .map_err(|_| unsafe_path(path, "it is not below the variant directory"))?;
        let mut arcname = prefix.to_owned();
        for component in relative.components() {
            let Component::Normal(part) = component else {
                return Err(unsafe_path(path, "it contains `..` or an absolute part"));
            };
            let part = part
                .to_str()
                .ok_or_else(|| unsafe_path(path, "its name is not valid UTF-8"))?;
            if part.contains(['\n', '\r', '\\']) {
                return Err(unsafe_path(
                    path,
                    "its name contains a newline or a backslash",
                ));
            }
            arcname.push('/');
            arcname.push_str(part);
        }
        let metadata = item.metadata().map_err(|err| WheelError::Io(err.into()))?;
        entries.push(Entry {
            arcname,
            path: path.to_path_buf(),
            mode: mode_of(&metadata),
            member: None,
        });
    }
    entries.sort_by(|a, b| a.arcname.cmp(&b.arcname));
    Ok(entries)
}

#[cfg(unix)]
fn mode_of(metadata: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    metadata.permissions().mode() & 0o777
}

#[cfg(not(unix))]
fn mode_of(metadata: &std::fs::Metadata) -> u32 {
    if metadata.permissions().readonly() {
        0o444
    } else {
        0o644
    }
}

/// The zip timestamp for `epoch` seconds (UTC), clamped to the range a zip
/// entry can hold (1980-01-01 to 2107-12-31).
pub(crate) fn zip_time(epoch: u64) -> DateTime {
    let epoch = epoch.max(ZIP_EPOCH);
    let days = i64::try_from(epoch / 86_400).unwrap_or(i64::MAX);
    let secs = epoch % 86_400;
    let (year, month, day) = civil_from_days(days);
    let clamped = if year > 2107 {
        DateTime::from_date_and_time(2107, 12, 31, 23, 59, 58)
    } else {
        // Every component is in range by construction.
        DateTime::from_date_and_time(
            year as u16,
            month as u8,
            day as u8,
            (secs / 3600) as u8,
            (secs % 3600 / 60) as u8,
            (secs % 60) as u8,
        )
    };
    clamped.unwrap_or_default()
}

/// Days since 1970-01-01 to a proleptic Gregorian `(year, month, day)`
/// (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days.saturating_add(719_468);
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Quotes a RECORD field the way Python's `csv` module does.
fn csv_field(field: &str) -> String {
    if field.contains([',', '"']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

/// A reader that hashes and counts what passes through it.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
    size: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.size += n as u64;
        Ok(n)
    }
}

/// Writes the wheel to `dest` atomically ([`kernels_cache::write_atomic_with`]:
/// a temporary file in the same directory, synced and renamed at the end): the
/// variant's `entries` in order, then `generated` (`METADATA`, `WHEEL`), then
/// `<dist_info>/RECORD` listing everything with its sha256 and size. Every entry
/// is deflated (level 3) and carries the timestamp of `epoch`; the result
/// depends only on the inputs.
pub(crate) fn write_wheel(
    dest: &Path,
    entries: &[Entry],
    generated: &[(String, String)],
    dist_info: &str,
    epoch: u64,
) -> Result<(), WheelError> {
    let write =
        |file: &mut std::fs::File| write_zip(file, dest, entries, generated, dist_info, epoch);
    kernels_cache::write_atomic_with(dest, write).map_err(|err| match err {
        kernels_cache::AtomicError::Io(source) => WheelError::Write {
            path: dest.to_path_buf(),
            source,
        },
        kernels_cache::AtomicError::Write(err) => err,
    })
}

/// The zip of [`write_wheel`], written to `file`; I/O errors name `dest`.
fn write_zip(
    file: &mut std::fs::File,
    dest: &Path,
    entries: &[Entry],
    generated: &[(String, String)],
    dist_info: &str,
    epoch: u64,
) -> Result<(), WheelError> {
    let mut zip = Zip {
        writer: ZipWriter::new(BufWriter::new(file)),
        options: SimpleFileOptions::default()
            .compression_method(CompressionMethod::Deflated)
            .compression_level(Some(DEFLATE_LEVEL))
            .last_modified_time(zip_time(epoch)),
        record: String::new(),
        dest,
    };
    for entry in entries {
        zip.copy_file(entry)?;
    }
    for (name, text) in generated {
        zip.add_text(name, text)?;
    }
    zip.finish(&format!("{dist_info}/RECORD"))
}

/// A wheel being written: the zip, the options every entry shares, and the
/// `RECORD` lines so far.
struct Zip<'a, W: Write + Seek> {
    writer: ZipWriter<W>,
    options: SimpleFileOptions,
    record: String,
    /// The wheel's final path, for errors.
    dest: &'a Path,
}

impl<W: Write + Seek> Zip<'_, W> {
    fn write_error(&self, source: io::Error) -> WheelError {
        WheelError::Write {
            path: self.dest.to_path_buf(),
            source,
        }
    }

    /// Adds a file of the variant, hashing it as it is copied.
    fn copy_file(&mut self, entry: &Entry) -> Result<(), WheelError> {
        let file = fs_err::File::open(&entry.path)?;
        let inner: Box<dyn Read> = match &entry.member {
            None => Box::new(file),
            Some(member) => {
                let corrupt = |reason: String| WheelError::CorruptArchive {
                    path: entry.path.clone(),
                    reason,
                };
                let mut zip = zip::ZipArchive::new(file).map_err(|err| corrupt(err.to_string()))?;
                let mut bytes = Vec::new();
                zip.by_name(member)
                    .map_err(|err| corrupt(format!("{member}: {err}")))?
                    .read_to_end(&mut bytes)
                    .map_err(|err| corrupt(format!("{member}: {err}")))?;
                Box::new(io::Cursor::new(bytes))
            }
        };
        let large = match &entry.member {
            None => fs_err::metadata(&entry.path)?.len() >= u64::from(u32::MAX),
            Some(_) => false,
        };
        self.writer.start_file(
            entry.arcname.as_str(),
            self.options.unix_permissions(entry.mode).large_file(large),
        )?;
        let mut reader = Hashing {
            inner,
            hasher: Sha256::new(),
            size: 0,
        };
        io::copy(&mut reader, &mut self.writer).map_err(|err| self.write_error(err))?;
        self.record.push_str(&format!(
            "{},sha256={},{}\n",
            csv_field(&entry.arcname),
            URL_SAFE_NO_PAD.encode(reader.hasher.finalize()),
            reader.size
        ));
        Ok(())
    }

    /// Adds a generated text file (`0644`).
    fn add_text(&mut self, name: &str, text: &str) -> Result<(), WheelError> {
        self.writer
            .start_file(name, self.options.unix_permissions(0o644))?;
        self.writer
            .write_all(text.as_bytes())
            .map_err(|err| self.write_error(err))?;
        self.record.push_str(&format!(
            "{},sha256={},{}\n",
            csv_field(name),
            URL_SAFE_NO_PAD.encode(Sha256::digest(text.as_bytes())),
            text.len()
        ));
        Ok(())
    }

    /// Adds `RECORD` (itself listed without hash or size) and finishes the zip.
    fn finish(mut self, record_name: &str) -> Result<(), WheelError> {
        self.record
            .push_str(&format!("{},,\n", csv_field(record_name)));
        self.writer
            .start_file(record_name, self.options.unix_permissions(0o644))?;
        self.writer
            .write_all(self.record.as_bytes())
            .map_err(|err| self.write_error(err))?;
        let dest = self.dest;
        let mut out = self.writer.finish()?;
        out.flush().map_err(|source| WheelError::Write {
            path: dest.to_path_buf(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zip_times() {
        let dos = |t: DateTime| {
            (
                t.year(),
                t.month(),
                t.day(),
                t.hour(),
                t.minute(),
                t.second(),
            )
        };
        assert_eq!(dos(zip_time(0)), (1980, 1, 1, 0, 0, 0));
        assert_eq!(dos(zip_time(ZIP_EPOCH)), (1980, 1, 1, 0, 0, 0));
        // 2024-02-29T12:34:56Z (seconds are stored in 2-second steps).
        assert_eq!(dos(zip_time(1_709_210_096)), (2024, 2, 29, 12, 34, 56));
        assert_eq!(dos(zip_time(u64::MAX)), (2107, 12, 31, 23, 59, 58));
    }

    #[test]
    fn csv_quoting() {
        assert_eq!(csv_field("a/b.py"), "a/b.py");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("a\"b"), "\"a\"\"b\"");
    }
}
