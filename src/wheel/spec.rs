//! What a wheel for one build variant is called and what its metadata says:
//! file name, tags, local version, `WHEEL` and `METADATA` texts.

use std::fmt;
use std::str::FromStr;

use pep440_rs::Version;

use kernels_types::repo_id::RepoId;
use kernels_types::variant_name::{
    ArchVariant, Backend, BuildVariant, Cpu, CxxAbi, Framework, Os, VariantKind,
};

use kernels_types::metadata::{Metadata, MetadataError};

use crate::wheel::depends::Depends;
use crate::wheel::error::WheelError;

/// A `major.minor` version given on the command line (`3.9`, `2.28`, `11.0`).
///
/// ```
/// use kernels::wheel::TagVersion;
/// let v: TagVersion = "2.28".parse().unwrap();
/// assert_eq!((v.major, v.minor), (2, 28));
/// assert!("3".parse::<TagVersion>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TagVersion {
    /// Major component.
    pub major: u32,
    /// Minor component.
    pub minor: u32,
}

impl FromStr for TagVersion {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parse = |part: &str| {
            (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
                .then(|| part.parse::<u32>().ok())
                .flatten()
        };
        s.split_once('.')
            .and_then(|(major, minor)| Some((parse(major)?, parse(minor)?)))
            .map(|(major, minor)| TagVersion { major, minor })
            .ok_or_else(|| format!("`{s}` is not of the form MAJOR.MINOR, for example `3.9`"))
    }
}

impl fmt::Display for TagVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Settings shared by every wheel of one `to-wheel` run.
#[derive(Debug, Clone, Copy)]
pub struct WheelOptions {
    /// Lowest CPython version of compiled wheels (`cp39-abi3`) and the
    /// `Requires-Python` lower bound of every wheel.
    pub python: TagVersion,
    /// glibc version of the `manylinux_X_Y` platform tag of Linux wheels.
    pub manylinux: TagVersion,
    /// macOS version of the `macosx_X_Y` platform tag of macOS wheels.
    pub macos: TagVersion,
    /// Timestamp of every zip entry, seconds since the Unix epoch
    /// (`SOURCE_DATE_EPOCH`); clamped to the zip range 1980-01-01 .. 2107-12-31.
    pub source_date_epoch: u64,
}

/// The kernel a wheel is built for: its Hub repository and the version the
/// wheels carry.
#[derive(Debug, Clone)]
pub struct Kernel {
    repo_id: RepoId,
    version: Version,
    /// Local-version label put before each variant's own label
    /// (`g1a2b3c4` for kernels without a release version).
    commit_label: Option<String>,
}

impl Kernel {
    /// Checks that the repository name is a valid Python project name and
    /// that `version` is a PEP 440 version without a local part (the local
    /// part is derived from each build variant). A leading `v` is accepted.
    pub fn new(repo_id: RepoId, version: &str) -> Result<Self, WheelError> {
        let name = repo_id.name();
        let valid_name = name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && name.ends_with(|c: char| c.is_ascii_alphanumeric());
        if !valid_name {
            return Err(WheelError::BadProjectName {
                repo_id: repo_id.to_string(),
            });
        }
        let parsed = Version::from_str(version).map_err(|err| WheelError::BadVersion {
            version: version.to_owned(),
            reason: err.to_string(),
        })?;
        if parsed.is_local() {
            return Err(WheelError::BadVersion {
                version: version.to_owned(),
                reason: "it has a local part (`+…`); to-wheel derives the local part from each build variant"
                    .to_owned(),
            });
        }
        Ok(Kernel {
            repo_id,
            version: parsed,
            commit_label: None,
        })
    }

    /// A kernel without a release version, named by its commit: version `0`
    /// with the local label `g<first 7 hex digits>` (as `git describe`), so
    /// its wheels are `0+g1a2b3c4.<variant label>`. Used by `--locked`/`--frozen` when
    /// neither the lock nor a tag gives a version. `commit` must be hex.
    pub fn at_commit(repo_id: RepoId, commit: &str) -> Result<Self, WheelError> {
        let short: String = commit.chars().take(7).collect();
        if !kernels_types::CommitId::is_abbreviation(&short) {
            return Err(WheelError::BadVersion {
                version: commit.to_owned(),
                reason: "a commit id is 40 hexadecimal digits".to_owned(),
            });
        }
        let mut kernel = Kernel::new(repo_id, "0")?;
        kernel.commit_label = Some(format!("g{}", short.to_ascii_lowercase()));
        Ok(kernel)
    }

    /// The Hub repository.
    pub fn repo_id(&self) -> &RepoId {
        &self.repo_id
    }

    /// The normalized public version (`v0.0.3` → `0.0.3`).
    pub fn version(&self) -> &Version {
        &self.version
    }

    /// The version before any variant label: the public version, plus
    /// `+g<commit>` for [`Kernel::at_commit`] kernels.
    pub fn display_version(&self) -> String {
        match &self.commit_label {
            Some(label) => format!("{}+{label}", self.version),
            None => self.version.to_string(),
        }
    }

    /// The import package directory: the repository name with every run of
    /// `-`, `_` and `.` replaced by `_` (`flash-attn2` → `flash_attn2`), the
    /// name kernel builds use for the package under `build/<variant>/`.
    pub fn package_dir(&self) -> String {
        let mut out = String::new();
        for c in self.repo_id.name().chars() {
            if matches!(c, '-' | '_' | '.') {
                if !out.ends_with('_') {
                    out.push('_');
                }
            } else {
                out.push(c);
            }
        }
        out
    }
}

/// Name, tags and requirements of the wheel for one build variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelSpec {
    /// The escaped distribution name used in the file name and the
    /// `.dist-info` directory (package dir, lowercased).
    pub escaped_name: String,
    /// `Name:` in `METADATA` (the repository name).
    pub project_name: String,
    /// The full version including the local part (`0.0.3+torch27cu126cxx11`).
    pub version: String,
    /// Python tag (`cp39`, `py3`).
    pub python_tag: String,
    /// ABI tag (`abi3`, `none`).
    pub abi_tag: String,
    /// Platform tag (`manylinux_2_28_x86_64`, `macosx_11_0_arm64`, `win_amd64`, `any`).
    pub platform_tag: String,
    /// `Root-Is-Purelib` (pure-Python wheels only).
    pub root_is_purelib: bool,
    /// `Requires-Python` lower bound.
    pub requires_python: String,
    /// The framework requirement, if the variant has one.
    pub requires_dist: Option<String>,
}

impl WheelSpec {
    /// Derives the wheel of `variant`.
    ///
    /// | variant | tags | local version | `Requires-Dist` |
    /// |---|---|---|---|
    /// | `torch27-cxx11-cu126-x86_64-linux` | `cp39-abi3-manylinux_2_28_x86_64` | `torch27cu126cxx11` | `torch==2.7.*` |
    /// | `torch210-metal-aarch64-darwin` | `cp39-abi3-macosx_11_0_arm64` | `torch210metal` | `torch==2.10.*` |
    /// | `torch29-cu130-x86_64-windows` | `cp39-abi3-win_amd64` | `torch29cu130` | `torch==2.9.*` |
    /// | `torch-stable-abi29-cu126-x86_64-linux` | `cp39-abi3-manylinux_2_28_x86_64` | `torchstableabi29cu126` | `torch>=2.9` |
    /// | `tvm-ffi01-cu128-x86_64-linux` | `cp39-abi3-manylinux_2_28_x86_64` | `tvmffi01cu128` | `apache-tvm-ffi==0.1.*` |
    /// | `torch-cuda` | `py3-none-any` | `cuda` | `torch` |
    /// | `torch-universal` | `py3-none-any` | none | none |
    ///
    /// Unlike the reference (0.6–0.11.3) this keeps `torch210` as 2.10,
    /// writes ROCm/XPU compute tags as they are (`rocm63`, not `curocm63`),
    /// supports macOS, Windows, stable-ABI, tvm-ffi and noarch variants, and
    /// puts the local part in `METADATA`'s `Version` too.
    ///
    /// Errors: [`WheelError::UnsupportedVariant`] for a name that is not a
    /// known build variant.
    pub fn new(
        kernel: &Kernel,
        variant: &BuildVariant,
        options: &WheelOptions,
    ) -> Result<Self, WheelError> {
        let python = options.python;
        let (python_tag, abi_tag, platform_tag, local, requires_dist) = match variant.kind() {
            VariantKind::Arch(arch) => (
                format!("cp{}{}", python.major, python.minor),
                "abi3".to_owned(),
                platform_tag(arch, options),
                Some(arch_local_version(arch)),
                Some(arch_requirement(arch)),
            ),
            VariantKind::Noarch(backend) => (
                "py3".to_owned(),
                "none".to_owned(),
                "any".to_owned(),
                Some(backend.as_str().to_owned()),
                Some("torch".to_owned()),
            ),
            VariantKind::Universal => (
                "py3".to_owned(),
                "none".to_owned(),
                "any".to_owned(),
                None,
                None,
            ),
            VariantKind::Unknown | VariantKind::Mlx(_) | VariantKind::Sdk(_) => {
                return Err(WheelError::UnsupportedVariant {
                    variant: variant.name().to_owned(),
                });
            }
        };
        let public = kernel.version().to_string();
        let labels: Vec<String> = kernel.commit_label.iter().cloned().chain(local).collect();
        let version = if labels.is_empty() {
            public
        } else {
            format!("{public}+{}", labels.join("."))
        };
        Ok(WheelSpec {
            escaped_name: kernel.package_dir().to_ascii_lowercase(),
            project_name: kernel.repo_id().name().to_owned(),
            version,
            root_is_purelib: abi_tag == "none",
            python_tag,
            abi_tag,
            platform_tag,
            requires_python: format!(">={python}"),
            requires_dist,
        })
    }

    /// `{python}-{abi}-{platform}`.
    pub fn tag(&self) -> String {
        format!("{}-{}-{}", self.python_tag, self.abi_tag, self.platform_tag)
    }

    /// `{name}-{version}-{tag}.whl` (PEP 427).
    pub fn file_name(&self) -> String {
        format!("{}-{}-{}.whl", self.escaped_name, self.version, self.tag())
    }

    /// `{name}-{version}.dist-info`.
    pub fn dist_info(&self) -> String {
        format!("{}-{}.dist-info", self.escaped_name, self.version)
    }

    /// The text of `<dist-info>/WHEEL`.
    pub fn wheel_text(&self) -> String {
        format!(
            "Wheel-Version: 1.0\nGenerator: kernels ({})\nRoot-Is-Purelib: {}\nTag: {}\n",
            env!("CARGO_PKG_VERSION"),
            self.root_is_purelib,
            self.tag()
        )
    }

    /// The text of `<dist-info>/METADATA` (core metadata 2.1): the header
    /// fields, then a short Markdown description naming the kernel and variant.
    pub fn metadata_text(&self, repo_id: &RepoId, variant: &str, extra: &KernelMetadata) -> String {
        let mut text = format!(
            "Metadata-Version: 2.1\nName: {}\nVersion: {}\nSummary: Kernel {repo_id} from the Hugging Face Hub, build variant {variant}\nRequires-Python: {}\n",
            self.project_name, self.version, self.requires_python
        );
        if let Some(license) = &extra.license {
            text.push_str(&format!("License: {license}\n"));
        }
        for (label, url) in &extra.project_urls {
            text.push_str(&format!("Project-URL: {label}, {url}\n"));
        }
        for requirement in self.requires_dist.iter().chain(&extra.requires) {
            text.push_str(&format!("Requires-Dist: {requirement}\n"));
        }
        text.push_str(&format!(
            "Description-Content-Type: text/markdown\n\n# {}\n\nBuild variant `{variant}` of the Hugging Face Hub kernel `{repo_id}`, packaged by `kernels to-wheel`.\n",
            self.project_name
        ));
        text
    }
}

/// Facts from a variant's `metadata.json` that go into `METADATA`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelMetadata {
    /// `license` (an SPDX expression in current kernels).
    pub license: Option<String>,
    /// `(label, url)` pairs from `upstream` and `source`.
    pub project_urls: Vec<(String, String)>,
    /// The dependency fields (`python-depends`, `python-depends-backends`,
    /// `kernel-depends`).
    pub depends: Depends,
    /// Top-level fields this version does not know, in file order.
    pub unknown_fields: Vec<String>,
    /// `digest`: what every file of the variant hashes to; the planner
    /// refuses a variant whose files differ ([`crate::install::digest`]).
    pub digest: Option<kernels_types::metadata::VariantDigest>,
    /// The `Requires-Dist` values of one variant after its framework
    /// requirement (see [`Depends::requirements`]); filled by the planner.
    pub requires: Vec<String>,
}

impl KernelMetadata {
    /// Reads the fields from the JSON text of `metadata.json`
    /// ([`Metadata::from_slice`]); unknown top-level fields are listed in
    /// `unknown_fields`. `license`, `upstream` and `source` become `METADATA`
    /// header lines, so they must be single-line (they are trimmed; empty
    /// means absent).
    ///
    /// # Errors
    /// The [`MetadataError`] of the text, or of a multi-line header field.
    pub fn from_json(text: &str) -> Result<Self, MetadataError> {
        let metadata: Metadata = text.parse()?;
        let line = |key: &str, value: Option<String>| match value {
            Some(s) if s.contains(['\n', '\r']) => {
                Err(MetadataError::field(key, "is not a single-line string"))
            }
            Some(s) => Ok(Some(s.trim().to_owned()).filter(|s| !s.is_empty())),
            None => Ok(None),
        };
        let mut project_urls = Vec::new();
        for (key, label, value) in [
            ("upstream", "Upstream", metadata.upstream),
            ("source", "Source", metadata.source),
        ] {
            if let Some(url) = line(key, value)? {
                project_urls.push((label.to_owned(), url));
            }
        }
        Ok(KernelMetadata {
            license: line("license", metadata.license)?,
            project_urls,
            depends: Depends {
                python: metadata.python_depends,
                python_backends: metadata.python_depends_backends,
                kernels: metadata.kernel_depends,
            },
            unknown_fields: metadata.unknown_fields,
            digest: metadata.digest,
            requires: Vec::new(),
        })
    }
}

fn platform_tag(arch: &ArchVariant, options: &WheelOptions) -> String {
    match arch.os {
        Os::Linux => format!(
            "manylinux_{}_{}_{}",
            options.manylinux.major,
            options.manylinux.minor,
            arch.cpu.as_str()
        ),
        Os::Darwin => {
            let cpu = match arch.cpu {
                Cpu::Aarch64 => "arm64",
                Cpu::X86_64 => "x86_64",
            };
            format!(
                "macosx_{}_{}_{cpu}",
                options.macos.major, options.macos.minor
            )
        }
        Os::Windows => match arch.cpu {
            Cpu::X86_64 => "win_amd64".to_owned(),
            Cpu::Aarch64 => "win_arm64".to_owned(),
        },
    }
}

fn arch_local_version(arch: &ArchVariant) -> String {
    let framework = match arch.framework {
        Framework::Torch(v) => format!("torch{}", v.digits()),
        Framework::TorchStableAbi(v) => format!("torchstableabi{}", v.digits()),
        Framework::TvmFfi(v) => format!("tvmffi{}", v.digits()),
    };
    let cxx = arch.cxx_abi.map_or("", |abi| match abi {
        CxxAbi::Cxx11 => "cxx11",
        CxxAbi::Cxx98 => "cxx98",
    });
    let compute: Backend = arch.backend;
    format!("{framework}{compute}{cxx}")
}

fn arch_requirement(arch: &ArchVariant) -> String {
    match arch.framework {
        Framework::Torch(v) => format!("torch=={v}.*"),
        Framework::TorchStableAbi(v) => format!("torch>={v}"),
        Framework::TvmFfi(v) => format!("apache-tvm-ffi=={v}.*"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> WheelOptions {
        WheelOptions {
            python: "3.9".parse().unwrap(),
            manylinux: "2.28".parse().unwrap(),
            macos: "11.0".parse().unwrap(),
            source_date_epoch: 315_532_800,
        }
    }

    fn spec(variant: &str) -> WheelSpec {
        let kernel =
            Kernel::new("kernels-community/flash-attn2".parse().unwrap(), "v0.0.3").unwrap();
        WheelSpec::new(&kernel, &BuildVariant::parse(variant), &options()).unwrap()
    }

    #[test]
    fn names_tags_and_requirements() {
        let cases = [
            (
                "torch27-cxx11-cu126-x86_64-linux",
                "flash_attn2-0.0.3+torch27cu126cxx11-cp39-abi3-manylinux_2_28_x86_64.whl",
                Some("torch==2.7.*"),
            ),
            (
                "torch210-cxx11-cu128-aarch64-linux",
                "flash_attn2-0.0.3+torch210cu128cxx11-cp39-abi3-manylinux_2_28_aarch64.whl",
                Some("torch==2.10.*"),
            ),
            (
                "torch27-cxx11-rocm63-x86_64-linux",
                "flash_attn2-0.0.3+torch27rocm63cxx11-cp39-abi3-manylinux_2_28_x86_64.whl",
                Some("torch==2.7.*"),
            ),
            (
                "torch210-cxx11-xpu20253-x86_64-linux",
                "flash_attn2-0.0.3+torch210xpu20253cxx11-cp39-abi3-manylinux_2_28_x86_64.whl",
                Some("torch==2.10.*"),
            ),
            (
                "torch210-metal-aarch64-darwin",
                "flash_attn2-0.0.3+torch210metal-cp39-abi3-macosx_11_0_arm64.whl",
                Some("torch==2.10.*"),
            ),
            (
                "torch29-cu130-x86_64-windows",
                "flash_attn2-0.0.3+torch29cu130-cp39-abi3-win_amd64.whl",
                Some("torch==2.9.*"),
            ),
            (
                "torch-stable-abi29-cu126-x86_64-linux",
                "flash_attn2-0.0.3+torchstableabi29cu126-cp39-abi3-manylinux_2_28_x86_64.whl",
                Some("torch>=2.9"),
            ),
            (
                "tvm-ffi01-cu128-x86_64-linux",
                "flash_attn2-0.0.3+tvmffi01cu128-cp39-abi3-manylinux_2_28_x86_64.whl",
                Some("apache-tvm-ffi==0.1.*"),
            ),
            (
                "torch-cuda",
                "flash_attn2-0.0.3+cuda-py3-none-any.whl",
                Some("torch"),
            ),
            (
                "torch-universal",
                "flash_attn2-0.0.3-py3-none-any.whl",
                None,
            ),
        ];
        for (variant, file, requirement) in cases {
            let spec = spec(variant);
            assert_eq!(spec.file_name(), file, "{variant}");
            assert_eq!(spec.requires_dist.as_deref(), requirement, "{variant}");
            assert_eq!(spec.root_is_purelib, spec.platform_tag == "any");
        }
    }

    #[test]
    fn metadata_and_wheel_texts() {
        let spec = spec("torch27-cxx11-cu126-x86_64-linux");
        assert_eq!(
            spec.dist_info(),
            "flash_attn2-0.0.3+torch27cu126cxx11.dist-info"
        );
        let extra = KernelMetadata::from_json(
            r#"{"license": "BSD-3-Clause", "upstream": "https://github.com/x/y.git", "version": 1}"#,
        )
        .unwrap();
        let repo: RepoId = "kernels-community/flash-attn2".parse().unwrap();
        assert_eq!(
            spec.metadata_text(&repo, "torch27-cxx11-cu126-x86_64-linux", &extra),
            "Metadata-Version: 2.1\nName: flash-attn2\nVersion: 0.0.3+torch27cu126cxx11\n\
             Summary: Kernel kernels-community/flash-attn2 from the Hugging Face Hub, build variant torch27-cxx11-cu126-x86_64-linux\n\
             Requires-Python: >=3.9\nLicense: BSD-3-Clause\n\
             Project-URL: Upstream, https://github.com/x/y.git\nRequires-Dist: torch==2.7.*\n\
             Description-Content-Type: text/markdown\n\n# flash-attn2\n\n\
             Build variant `torch27-cxx11-cu126-x86_64-linux` of the Hugging Face Hub kernel \
             `kernels-community/flash-attn2`, packaged by `kernels to-wheel`.\n"
        );
        assert!(
            spec.wheel_text()
                .ends_with("Root-Is-Purelib: false\nTag: cp39-abi3-manylinux_2_28_x86_64\n")
        );
        assert!(KernelMetadata::from_json(r#"{"license": ["MIT"]}"#).is_err());
        assert!(KernelMetadata::from_json("{").is_err());
        assert_eq!(
            KernelMetadata::from_json(r#"{"source": "a\nb"}"#)
                .unwrap_err()
                .to_string(),
            "`source` is not a single-line string"
        );
        let blank = KernelMetadata::from_json(r#"{"license": "  ", "upstream": " u "}"#).unwrap();
        assert_eq!(blank.license, None);
        assert_eq!(
            blank.project_urls,
            [("Upstream".to_owned(), "u".to_owned())]
        );
    }

    #[test]
    fn rejects_unknown_variants_bad_versions_and_names() {
        let kernel = Kernel::new("kernels-community/relu".parse().unwrap(), "1").unwrap();
        assert!(matches!(
            WheelSpec::new(&kernel, &BuildVariant::parse("torch-ext"), &options()),
            Err(WheelError::UnsupportedVariant { variant }) if variant == "torch-ext"
        ));
        let repo: RepoId = "kernels-community/relu".parse().unwrap();
        assert!(Kernel::new(repo.clone(), "1.0+local").is_err());
        assert!(Kernel::new(repo, "not a version").is_err());
        assert!(Kernel::new("a/-relu".parse().unwrap(), "1").is_err());
    }

    #[test]
    fn commit_versions_put_the_commit_before_the_variant_label() {
        let repo: RepoId = "kernels-community/relu".parse().unwrap();
        let kernel =
            Kernel::at_commit(repo.clone(), "D649EFB5aaaabbbbccccddddeeeeffff00001111").unwrap();
        let spec =
            |variant| WheelSpec::new(&kernel, &BuildVariant::parse(variant), &options()).unwrap();
        assert_eq!(
            spec("torch27-cxx11-cu126-x86_64-linux").file_name(),
            "relu-0+gd649efb.torch27cu126cxx11-cp39-abi3-manylinux_2_28_x86_64.whl"
        );
        assert_eq!(spec("torch-universal").version, "0+gd649efb");
        assert!(Kernel::at_commit(repo.clone(), "xyz").is_err());
        assert!(Kernel::at_commit(repo, "d649ef").is_err());
    }
}
