//! The variant-hash lock format written by reference `kernels` 0.1.7–0.16:
//! a JSON array of `{"repo_id", "sha", "variants": {<variant>: {"hash", "hash_type"}}}`.
//!
//! The writer reproduces Python's `json.dump(locks, f, indent=2)` byte for byte:
//! two-space indentation, `,` at line ends and `": "` between key and value, every non-printable or non-ASCII character escaped as `\uXXXX`,
//! and no newline after the closing `]`.

use indexmap::IndexMap;
use kernels_types::CommitId;
use serde_json::Value;

use kernels_types::digest::GIT_LFS_CONCAT;

/// The lock of one kernel: a commit and the hash of each build variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelHashLock {
    /// Hub repository id (`owner/name`) as written in the file.
    pub repo_id: String,
    /// Locked commit (40 hex).
    pub sha: CommitId,
    /// Variant name (`build/<variant>/`) → hash, in file order.
    pub variants: IndexMap<String, VariantHash>,
    /// `sha` as the file spells it, when that is not the lowercase form (a
    /// hand-edited lock): the writer writes it back as read, so that a kept
    /// entry leaves the file byte-identical.
    spelled: Option<String>,
}

impl KernelHashLock {
    /// The entry of `repo_id` locked at `sha`.
    pub fn new(repo_id: String, sha: CommitId, variants: IndexMap<String, VariantHash>) -> Self {
        KernelHashLock {
            repo_id,
            sha,
            variants,
            spelled: None,
        }
    }

    /// The `sha` text the writer writes.
    fn sha_text(&self) -> &str {
        self.spelled.as_deref().unwrap_or(self.sha.as_str())
    }
}

/// The hash of one build variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantHash {
    /// `sha256-<64 hex>`.
    pub hash: String,
    /// Always `git_lfs_concat` in files written by the reference.
    pub hash_type: String,
}

impl VariantHash {
    /// A `git_lfs_concat` hash.
    pub fn git_lfs_concat(hash: String) -> Self {
        VariantHash {
            hash,
            hash_type: GIT_LFS_CONCAT.to_owned(),
        }
    }
}

/// Serializes locks exactly like Python's `json.dump(..., indent=2)` (no final newline).
pub fn to_json(locks: &[KernelHashLock]) -> String {
    if locks.is_empty() {
        return "[]".to_owned();
    }
    let mut out = String::from("[\n");
    for (i, lock) in locks.iter().enumerate() {
        out.push_str("  {\n    \"repo_id\": ");
        push_py_string(&mut out, &lock.repo_id);
        out.push_str(",\n    \"sha\": ");
        push_py_string(&mut out, lock.sha_text());
        out.push_str(",\n    \"variants\": ");
        if lock.variants.is_empty() {
            out.push_str("{}");
        } else {
            out.push_str("{\n");
            for (j, (name, variant)) in lock.variants.iter().enumerate() {
                out.push_str("      ");
                push_py_string(&mut out, name);
                out.push_str(": {\n        \"hash\": ");
                push_py_string(&mut out, &variant.hash);
                out.push_str(",\n        \"hash_type\": ");
                push_py_string(&mut out, &variant.hash_type);
                out.push_str("\n      }");
                if j + 1 < lock.variants.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            out.push_str("    }");
        }
        out.push_str("\n  }");
        if i + 1 < locks.len() {
            out.push(',');
        }
        out.push('\n');
    }
    out.push(']');
    out
}

/// Appends a JSON string the way Python's `json` module does with `ensure_ascii=True`.
fn push_py_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// Reads the entries of a parsed variant-hash lock. Like the reference reader it
/// ignores unknown keys of an entry, and rejects unknown keys inside a variant.
/// Errors are `(entry index, message)`.
pub(crate) fn from_value(items: &[Value]) -> Result<Vec<KernelHashLock>, (usize, String)> {
    items
        .iter()
        .enumerate()
        .map(|(index, item)| entry_from_value(item).map_err(|msg| (index, msg)))
        .collect()
}

fn entry_from_value(item: &Value) -> Result<KernelHashLock, String> {
    let Value::Object(object) = item else {
        return Err(format!("expected an object, found {}", kind(item)));
    };
    let string = |key: &str| match object.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!("`{key}` must be a string, found {}", kind(other))),
        None => Err(format!("`{key}` is missing")),
    };
    let repo_id = string("repo_id")?;
    let text = string("sha")?;
    let Some(sha) = text.parse::<CommitId>().ok().filter(CommitId::is_sha1) else {
        return Err(format!(
            "`sha` of `{repo_id}` must be a 40-hex commit id, found `{text}`"
        ));
    };
    let spelled = (text != sha.as_str()).then_some(text);
    let variants = match object.get("variants") {
        Some(Value::Object(v)) => v,
        Some(other) => {
            return Err(format!(
                "`variants` of `{repo_id}` must be an object, found {}",
                kind(other)
            ));
        }
        None => return Err(format!("`variants` of `{repo_id}` is missing")),
    };
    let mut out = IndexMap::new();
    for (name, value) in variants {
        let Value::Object(fields) = value else {
            return Err(format!(
                "variant `{name}` of `{repo_id}` must be an object, found {}",
                kind(value)
            ));
        };
        if let Some(unknown) = fields.keys().find(|k| *k != "hash" && *k != "hash_type") {
            return Err(format!(
                "variant `{name}` of `{repo_id}` has unknown key `{unknown}` (expected `hash` and `hash_type`)"
            ));
        }
        let field = |key: &str| match fields.get(key) {
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!(
                "`{key}` of variant `{name}` of `{repo_id}` must be a string, found {}",
                kind(other)
            )),
            None => Ok(None),
        };
        let hash = field("hash")?
            .ok_or_else(|| format!("variant `{name}` of `{repo_id}` has no `hash`"))?;
        let hash_type = field("hash_type")?.unwrap_or_else(|| GIT_LFS_CONCAT.to_owned());
        out.insert(name.clone(), VariantHash { hash, hash_type });
    }
    Ok(KernelHashLock {
        repo_id,
        sha,
        variants: out,
        spelled,
    })
}

/// A short description of a JSON value's type for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_escaping() {
        let mut out = String::new();
        push_py_string(&mut out, "a\"b\\c\u{7f}é😀\u{1}");
        assert_eq!(out, r#""a\"b\\c\u007f\u00e9\ud83d\ude00\u0001""#);
    }

    #[test]
    fn empty_forms() {
        assert_eq!(to_json(&[]), "[]");
        let lock = KernelHashLock::new(
            "a/b".into(),
            "0".repeat(40).parse().unwrap(),
            IndexMap::new(),
        );
        assert_eq!(
            to_json(&[lock]),
            format!(
                "[\n  {{\n    \"repo_id\": \"a/b\",\n    \"sha\": \"{}\",\n    \"variants\": {{}}\n  }}\n]",
                "0".repeat(40)
            )
        );
    }

    /// A hand-edited upper-case `sha` reads as its commit and is written back
    /// as spelled, so that `kernels lock` keeping the entry changes no byte.
    #[test]
    fn an_upper_case_sha_is_written_back_as_read() {
        let text = format!(
            r#"[{{"repo_id": "a/b", "sha": "{}", "variants": {{}}}}]"#,
            "AB".repeat(20)
        );
        let items: Vec<Value> = serde_json::from_str(&text).unwrap();
        let locks = from_value(&items).unwrap();
        assert_eq!(locks[0].sha.as_str(), "ab".repeat(20));
        assert!(to_json(&locks).contains(&"AB".repeat(20)));
        let short = r#"[{"repo_id": "a/b", "sha": "abcdef0", "variants": {}}]"#;
        let items: Vec<Value> = serde_json::from_str(short).unwrap();
        assert!(
            from_value(&items)
                .unwrap_err()
                .1
                .contains("40-hex commit id")
        );
    }
}
