//! `kernels export --format spdx`: an SPDX 2.3 JSON document
//! (<https://spdx.github.io/spdx-spec/v2.3/>), valid against its JSON schema
//! (the test vendors it in `tests/schemas/`).
//!
//! * One package per variant, `filesAnalyzed: false`: name
//!   `<owner>/<name> (<variant>)`, `versionInfo` the commit, the package URL
//!   as a `PACKAGE-MANAGER` `purl` external reference, the variant hash of a
//!   variant-hash lock as its SHA256 checksum, `licenseDeclared` the SPDX id
//!   of the `metadata.json` license (else `NOASSERTION`, the name in
//!   `licenseComments`), `homepage` its `upstream`, `sourceInfo` the
//!   builder's provenance, dirty flag and signer.
//! * The document `DESCRIBES` every package.
//! * `creationInfo.created` (required by SPDX) is `SOURCE_DATE_EPOCH` when
//!   set, else the Unix epoch, so that reruns are identical;
//!   `documentNamespace` is `urn:uuid:` and the UUID v5 of the rest of the
//!   document ([`super::content_uuid`]).

use serde_json::{Map, Value, json};

use kernels_types::metadata::Metadata;

use super::license::License;
use super::{Component, Inventory, SIGNER_NOTE, SIGNER_UNKNOWN, VariantMetadata, content_uuid};

/// The document.
pub fn document(inventory: &Inventory) -> Value {
    let created = inventory
        .created
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let packages: Vec<Value> = inventory
        .components
        .iter()
        .enumerate()
        .map(|(i, c)| package(i, c))
        .collect();
    let relationships: Vec<Value> = packages
        .iter()
        .map(|p| {
            json!({
                "spdxElementId": "SPDXRef-DOCUMENT",
                "relationshipType": "DESCRIBES",
                "relatedSpdxElement": p["SPDXID"],
            })
        })
        .collect();
    let body = json!({
        "creationInfo": {
            "created": created,
            "creators": [format!("Tool: kernels-{}", env!("CARGO_PKG_VERSION"))],
            "comment": format!(
                "What kernels.lock ({} format, SHA-256 {}) pins, one package per build variant.",
                inventory.lock_format.id(),
                inventory.lock_sha256
            ),
        },
        "packages": packages,
        "relationships": relationships,
    });
    let namespace = content_uuid("spdx", body.to_string().as_bytes());
    let mut doc = Map::new();
    doc.insert("spdxVersion".into(), "SPDX-2.3".into());
    doc.insert("dataLicense".into(), "CC0-1.0".into());
    doc.insert("SPDXID".into(), "SPDXRef-DOCUMENT".into());
    doc.insert("name".into(), "kernels.lock".into());
    doc.insert(
        "documentNamespace".into(),
        format!("urn:uuid:{namespace}").into(),
    );
    if let Value::Object(body) = body {
        doc.extend(body);
    }
    Value::Object(doc)
}

/// `SPDXRef-<n>-<owner>-<name>-<variant>`, with every character SPDX ids do
/// not allow (`[A-Za-z0-9.-]`) as `-`; the index keeps ids unique.
fn spdx_id(index: usize, c: &Component) -> String {
    let text = format!("{}-{}-{}", c.repo_id.owner(), c.repo_id.name(), c.variant);
    let clean: String = text
        .chars()
        .map(|ch| {
            if ch.is_ascii_alphanumeric() || ch == '.' || ch == '-' {
                ch
            } else {
                '-'
            }
        })
        .collect();
    format!("SPDXRef-{}-{clean}", index + 1)
}

fn package(index: usize, c: &Component) -> Value {
    let metadata = c.metadata.metadata();
    let mut doc = Map::new();
    doc.insert("SPDXID".into(), spdx_id(index, c).into());
    doc.insert(
        "name".into(),
        format!("{} ({})", c.repo_id, c.variant).into(),
    );
    doc.insert("versionInfo".into(), c.commit.as_str().into());
    doc.insert("downloadLocation".into(), "NOASSERTION".into());
    doc.insert("filesAnalyzed".into(), false.into());
    if let Some(hash) = &c.variant_hash {
        doc.insert(
            "checksums".into(),
            json!([{"algorithm": "SHA256", "checksumValue": hash}]),
        );
    }
    if let Some(upstream) = metadata
        .and_then(|m| m.upstream.as_deref())
        .filter(|u| !u.is_empty())
    {
        doc.insert("homepage".into(), upstream.into());
    }
    doc.insert("licenseConcluded".into(), "NOASSERTION".into());
    let license = metadata
        .and_then(|m| m.license.as_deref())
        .map(License::parse);
    match license {
        Some(License::Spdx(id)) => {
            doc.insert("licenseDeclared".into(), id.into());
        }
        Some(License::Name(name)) => {
            doc.insert("licenseDeclared".into(), "NOASSERTION".into());
            doc.insert(
                "licenseComments".into(),
                format!(
                    "metadata.json names the license `{name}`, which is no SPDX license identifier"
                )
                .into(),
            );
        }
        None => {
            doc.insert("licenseDeclared".into(), "NOASSERTION".into());
        }
    }
    doc.insert("copyrightText".into(), "NOASSERTION".into());
    doc.insert("sourceInfo".into(), source_info(c).into());
    doc.insert(
        "externalRefs".into(),
        json!([{
            "referenceCategory": "PACKAGE-MANAGER",
            "referenceType": "purl",
            "referenceLocator": c.purl(),
        }]),
    );
    Value::Object(doc)
}

/// The variant, request, `metadata.json` state, provenance, dirty flag and
/// signer as one sentence list.
fn source_info(c: &Component) -> String {
    let mut parts = vec![format!("build variant {}", c.variant)];
    if !c.requested.is_empty() {
        parts.push(format!("requested as {}", c.requested.join(", ")));
    }
    if c.variant_hash.is_some() {
        parts.push("checksum: the variant's git_lfs_concat hash".to_owned());
    }
    match &c.metadata {
        VariantMetadata::Read {
            source,
            git_blob,
            metadata,
            ..
        } => {
            let blob = git_blob
                .as_deref()
                .map_or(String::new(), |b| format!(", git blob {b}"));
            parts.push(format!("metadata.json read from the {}{blob}", source.id()));
            parts.extend(provenance(metadata));
        }
        VariantMetadata::Unknown { reason } => {
            parts.push(format!("metadata.json unknown: {reason}"))
        }
        VariantMetadata::Invalid { problem } => {
            parts.push(format!("metadata.json invalid: {problem}"))
        }
    }
    let dirty = c
        .metadata
        .dirty()
        .map_or("unknown".to_owned(), |d| d.to_string());
    parts.push(format!("dirty: {dirty}"));
    parts.push(format!("signer: {SIGNER_UNKNOWN} ({SIGNER_NOTE})"));
    parts.join("; ")
}

/// The builder's and the kernel source's git state.
fn provenance(m: &Metadata) -> Vec<String> {
    let Some(p) = &m.provenance else {
        return vec!["no provenance".to_owned()];
    };
    let mut parts = Vec::new();
    if let Some(builder) = &p.kernel_builder {
        let git = builder.git.as_ref().map_or(String::new(), |g| {
            format!(" at {} (dirty: {})", g.commit.as_str(), g.dirty)
        });
        parts.push(format!("built by kernel-builder {}{git}", builder.version));
    }
    if let Some(kernel) = &p.kernel {
        parts.push(format!(
            "kernel source at {} (dirty: {})",
            kernel.commit.as_str(),
            kernel.dirty
        ));
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures::{DIRTY, inventory_with};

    #[test]
    fn spdx_states_the_same_provenance_and_license() {
        let doc = document(&inventory_with(DIRTY));
        let package = &doc["packages"][0];
        assert_eq!(package["licenseDeclared"], "NOASSERTION");
        assert!(
            package["licenseComments"]
                .as_str()
                .unwrap()
                .contains("`llama2`")
        );
        assert_eq!(package["homepage"], "https://github.com/acme/relu.git");
        let info = package["sourceInfo"].as_str().unwrap();
        assert!(
            info.contains("built by kernel-builder 0.17.0-dev0 at 89abcdef"),
            "{info}"
        );
        assert!(info.contains("dirty: true"), "{info}");
        assert!(info.contains("signer: unknown"), "{info}");
        assert_eq!(doc["creationInfo"]["created"], "1970-01-01T00:00:00Z");
    }
}
