//! ELF symbol-version tables read directly: the versions a file needs
//! (`.gnu.version_r`) and those the host's C library defines
//! (`.gnu.version_d`), for [`super`] where the symbol table cannot answer.

use object::read::elf::{ElfFile32, ElfFile64, FileHeader};
use object::{Endianness, FileKind};

/// The version names of one version section.
type Names = Vec<String>;

/// Which symbol-version table of an ELF file [`versions`] reads.
#[derive(Debug, Clone, Copy)]
enum Table {
    /// `SHT_GNU_VERNEED` (`.gnu.version_r`): every version the file needs
    /// from each library it links.
    Needs,
    /// `SHT_GNU_VERDEF` (`.gnu.version_d`): each version the file defines
    /// (the first name of each entry; the others name its parents).
    Definitions,
}

/// The version names of `table` in the bytes of an ELF file (32- or
/// 64-bit, either endianness); `Ok(None)` when the bytes are no ELF file.
///
/// # Errors
/// `object`'s error for a truncated or malformed one.
fn versions(bytes: &[u8], table: Table) -> object::read::Result<Option<Names>> {
    match FileKind::parse(bytes) {
        Ok(FileKind::Elf64) => {
            let file = ElfFile64::<Endianness>::parse(bytes)?;
            walk(file.elf_header(), file.endian(), bytes, table).map(Some)
        }
        Ok(FileKind::Elf32) => {
            let file = ElfFile32::<Endianness>::parse(bytes)?;
            walk(file.elf_header(), file.endian(), bytes, table).map(Some)
        }
        _ => Ok(None),
    }
}

/// The version names of `table` under one ELF header; empty when the file
/// has no such section.
fn walk<Elf: FileHeader<Endian = Endianness>>(
    header: &Elf,
    endian: Endianness,
    bytes: &[u8],
    table: Table,
) -> object::read::Result<Names> {
    let sections = header.sections(endian, bytes)?;
    let name = |raw: &[u8]| String::from_utf8_lossy(raw).into_owned();
    let mut names = Vec::new();
    match table {
        Table::Needs => {
            if let Some((mut needs, link)) = sections.gnu_verneed(endian, bytes)? {
                let strings = sections.strings(endian, bytes, link)?;
                while let Some((_, mut auxes)) = needs.next()? {
                    while let Some(aux) = auxes.next()? {
                        names.push(name(aux.name(endian, strings)?));
                    }
                }
            }
        }
        Table::Definitions => {
            if let Some((mut defs, link)) = sections.gnu_verdef(endian, bytes)? {
                let strings = sections.strings(endian, bytes, link)?;
                while let Some((_, mut auxes)) = defs.next()? {
                    if let Some(aux) = auxes.next()? {
                        names.push(name(aux.name(endian, strings)?));
                    }
                }
            }
        }
    }
    Ok(names)
}

/// Every version the ELF file `bytes` needs from the libraries it links
/// (`GLIBC_2.34`, `GLIBCXX_3.4.30`, …), sorted.
///
/// # Errors
/// One line saying what the bytes are when they are no readable ELF file.
pub fn needed_versions(bytes: &[u8]) -> Result<Names, String> {
    let mut names = versions(bytes, Table::Needs)
        .map_err(|err| format!("is a truncated or malformed ELF file ({err})"))?
        .ok_or_else(|| "is not an ELF file".to_owned())?;
    names.sort();
    names.dedup();
    Ok(names)
}

/// This machine's glibc `(major, minor)`, read without starting a process:
/// the C library this very program runs on (from `/proc/self/maps`), and
/// the highest `GLIBC_X.Y` version it defines.
///
/// # Errors
/// Why it cannot be told: not Linux, no glibc mapped (a static or musl
/// build), or its version table unreadable.
pub fn host_glibc() -> Result<(u32, u32), String> {
    let maps = fs_err::read_to_string("/proc/self/maps")
        .map_err(|err| format!("cannot read this machine's glibc version: {err}"))?;
    let path = maps
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| {
            let name = path.rsplit('/').next().unwrap_or(path);
            name.starts_with("libc.so") || name.starts_with("libc-2.")
        })
        .ok_or_else(|| {
            "this program does not run on glibc (no libc.so in its memory map), so `--manylinux host` cannot tell the image's glibc: name it, for example `--manylinux manylinux_2_28`".to_owned()
        })?;
    let bytes = fs_err::read(path).map_err(|err| format!("cannot read {path}: {err}"))?;
    let defined = versions(&bytes, Table::Definitions)
        .map_err(|err| format!("cannot read the versions {path} defines: {err}"))?
        .ok_or_else(|| format!("{path} is not an ELF file"))?;
    defined
        .iter()
        .filter_map(|name| {
            let (major, minor) = name.strip_prefix("GLIBC_")?.split_once('.')?;
            let minor = minor.split('.').next()?;
            Some((major.parse().ok()?, minor.parse().ok()?))
        })
        .max()
        .ok_or_else(|| format!("{path} defines no GLIBC_X.Y version"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn the_host_glibc_is_read_from_the_mapped_library() {
        let (major, minor) = host_glibc().unwrap();
        assert_eq!(major, 2);
        assert!(minor >= 17, "glibc 2.{minor}");
    }

    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn the_needs_of_this_test_binary_name_glibc() {
        let bytes = fs_err::read(std::env::current_exe().unwrap()).unwrap();
        let needs = needed_versions(&bytes).unwrap();
        assert!(needs.iter().any(|v| v.starts_with("GLIBC_2.")), "{needs:?}");
        let mut sorted = needs.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(needs, sorted);
        // This binary defines no versions of its own.
        assert_eq!(
            versions(&bytes, Table::Definitions).unwrap(),
            Some(Vec::new())
        );
    }

    #[test]
    fn needs_of_bad_bytes_is_one_line() {
        assert_eq!(needed_versions(b"hello").unwrap_err(), "is not an ELF file");
    }
}
