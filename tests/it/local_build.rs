//! The local kernel builds that tests write (issue 44): a variant directory
//! with its `metadata.json` and files, in one of the layouts the runtime
//! accepts, shared by `local_dev.rs` and `benchmark.rs`.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A pure-Python `relu(out, x)` that writes `x.relu()` into `out`.
pub const RELU: &str = "def relu(out, x):\n    out.copy_(x.relu())\n    return out\n";

/// Where the variant directory goes under the directory written to.
#[derive(Debug, Clone, Copy)]
pub enum Layout {
    /// `<dir>/build/<variant>/`, kernel-builder's output.
    Build,
    /// `<dir>/<variant>/`.
    Root,
    /// `<dir>` is the variant directory (named `<variant>` by the caller).
    Variant,
}

/// One variant of a local build of kernel `name`: `metadata.json` (`id`,
/// version 1, no `python-depends`, a CPU backend unless set) and files.
#[derive(Debug, Clone)]
pub struct LocalBuild {
    name: String,
    id: String,
    variant: String,
    backend: String,
    files: Vec<(String, String)>,
    zipped: Vec<(String, String)>,
}

impl LocalBuild {
    /// Variant `torch-cpu` of kernel `name` whose module is `id`, with no
    /// files yet.
    pub fn new(name: &str, id: &str) -> Self {
        LocalBuild {
            name: name.to_owned(),
            id: id.to_owned(),
            variant: "torch-cpu".to_owned(),
            backend: r#"{"type": "cpu"}"#.to_owned(),
            files: Vec::new(),
            zipped: Vec::new(),
        }
    }

    /// The variant's name instead of `torch-cpu`.
    pub fn variant(mut self, variant: &str) -> Self {
        variant.clone_into(&mut self.variant);
        self
    }

    /// The `backend` object of `metadata.json`, as JSON.
    pub fn backend(mut self, json: &str) -> Self {
        json.clone_into(&mut self.backend);
        self
    }

    /// A file of the variant directory (`__init__.py`, `_ops.py`).
    pub fn file(mut self, path: &str, text: &str) -> Self {
        self.files.push((path.to_owned(), text.to_owned()));
        self
    }

    /// A file of the zip layout's archive `<id>.zip` (`metadata.json` then
    /// says `"build-layout": "zip"`).
    pub fn zipped(mut self, path: &str, text: &str) -> Self {
        self.zipped.push((path.to_owned(), text.to_owned()));
        self
    }

    /// Writes the variant under `dir` in `layout`; its directory.
    pub fn write(&self, dir: &Path, layout: Layout) -> PathBuf {
        let variant = match layout {
            Layout::Build => dir.join("build").join(&self.variant),
            Layout::Root => dir.join(&self.variant),
            Layout::Variant => dir.to_owned(),
        };
        fs_err::create_dir_all(&variant).unwrap();
        let zip = if self.zipped.is_empty() {
            ""
        } else {
            ", \"build-layout\": \"zip\""
        };
        fs_err::write(
            variant.join("metadata.json"),
            format!(
                "{{\"name\": \"{}\", \"id\": \"{}\", \"version\": 1, \"license\": \"apache-2.0\", \"python-depends\": [], \"backend\": {}{zip}}}\n",
                self.name, self.id, self.backend
            ),
        )
        .unwrap();
        for (path, text) in &self.files {
            fs_err::write(variant.join(path), text).unwrap();
        }
        if !self.zipped.is_empty() {
            let file = fs_err::File::create(variant.join(format!("{}.zip", self.id))).unwrap();
            let mut archive = zip::ZipWriter::new(file);
            for (path, text) in &self.zipped {
                archive
                    .start_file(path.as_str(), zip::write::SimpleFileOptions::default())
                    .unwrap();
                archive.write_all(text.as_bytes()).unwrap();
            }
            archive.finish().unwrap();
        }
        variant
    }
}
