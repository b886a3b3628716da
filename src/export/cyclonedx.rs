//! `kernels export --format cyclonedx`: a CycloneDX 1.5 JSON BOM
//! (<https://cyclonedx.org/docs/1.5/json/>), valid against its JSON schema
//! (the test vendors it in `tests/schemas/`).
//!
//! * One `library` component per variant: `group` is the repository owner,
//!   `name` the repository name, `version` the commit, `purl` and `bom-ref`
//!   the package URL ([`super::Component::purl`]).
//! * `hashes`: the variant hash of a variant-hash lock (SHA-256, the
//!   `git_lfs_concat` of the variant's files; property
//!   `kernels:variant-hash-type` says so).
//! * `licenses`: the `metadata.json` license as an SPDX `id` where the list
//!   has it, else as a `name` ([`super::license`]).
//! * `externalReferences`: `upstream` and `source` of `metadata.json` as
//!   `vcs` references.
//! * `properties` (namespace `kernels:`): the variant, what was requested,
//!   the `metadata.json` state with its git blob id and SHA-256, backend,
//!   builder provenance and dirty flags, and the signer.
//! * `serialNumber`: `urn:uuid:` and the UUID v5 of the rest of the document
//!   ([`super::content_uuid`]); `metadata.timestamp` only with
//!   `SOURCE_DATE_EPOCH`.

use serde_json::{Map, Value, json};

use kernels_types::metadata::Metadata;

use super::license::License;
use super::{Component, Inventory, SIGNER_UNKNOWN, VariantMetadata, content_uuid};

/// The specification version written.
pub const SPEC_VERSION: &str = "1.5";

/// The BOM.
pub fn document(inventory: &Inventory) -> Value {
    let mut metadata = Map::new();
    if let Some(created) = inventory.created {
        metadata.insert("timestamp".into(), created.to_string().into());
    }
    metadata.insert(
        "tools".into(),
        json!({"components": [{
            "type": "application",
            "name": "kernels",
            "version": env!("CARGO_PKG_VERSION"),
        }]}),
    );
    metadata.insert(
        "properties".into(),
        json!([
            {"name": "kernels:lock-format", "value": inventory.lock_format.id()},
            {"name": "kernels:lock-sha256", "value": inventory.lock_sha256},
        ]),
    );
    let components: Vec<Value> = inventory.components.iter().map(component).collect();
    let body = json!({"metadata": metadata, "components": components});
    let serial = content_uuid("cyclonedx", body.to_string().as_bytes());
    let mut doc = Map::new();
    doc.insert("bomFormat".into(), "CycloneDX".into());
    doc.insert("specVersion".into(), SPEC_VERSION.into());
    doc.insert("serialNumber".into(), format!("urn:uuid:{serial}").into());
    doc.insert("version".into(), 1.into());
    if let Value::Object(body) = body {
        doc.extend(body);
    }
    Value::Object(doc)
}

fn component(c: &Component) -> Value {
    let purl = c.purl();
    let mut doc = Map::new();
    doc.insert("type".into(), "library".into());
    doc.insert("bom-ref".into(), purl.clone().into());
    doc.insert("group".into(), c.repo_id.owner().into());
    doc.insert("name".into(), c.repo_id.name().into());
    doc.insert("version".into(), c.commit.as_str().into());
    doc.insert("purl".into(), purl.into());
    if let Some(hash) = &c.variant_hash {
        doc.insert(
            "hashes".into(),
            json!([{"alg": "SHA-256", "content": hash}]),
        );
    }
    let metadata = c.metadata.metadata();
    if let Some(license) = metadata.and_then(|m| m.license.as_deref()) {
        let license = match License::parse(license) {
            License::Spdx(id) => json!({"id": id}),
            License::Name(name) => json!({"name": name}),
        };
        doc.insert("licenses".into(), json!([{"license": license}]));
    }
    let references = metadata.map(references).unwrap_or_default();
    if !references.is_empty() {
        doc.insert("externalReferences".into(), references.into());
    }
    doc.insert("properties".into(), properties(c).into());
    Value::Object(doc)
}

/// `upstream` and `source` as `vcs` references.
fn references(m: &Metadata) -> Vec<Value> {
    [
        (
            &m.upstream,
            "upstream: the repository the kernel's code comes from",
        ),
        (&m.source, "source: the kernel-builder source repository"),
    ]
    .into_iter()
    .filter_map(|(url, comment)| {
        let url = url.as_deref().filter(|u| !u.trim().is_empty())?;
        Some(json!({"type": "vcs", "url": url, "comment": comment}))
    })
    .collect()
}

/// The `kernels:` properties of a component.
fn properties(c: &Component) -> Vec<Value> {
    let mut props: Vec<(String, String)> = vec![("kernels:variant".into(), c.variant.clone())];
    for requested in &c.requested {
        props.push(("kernels:requested".into(), requested.clone()));
    }
    if c.variant_hash.is_some() {
        props.push(("kernels:variant-hash-type".into(), "git_lfs_concat".into()));
    }
    props.extend(metadata_properties(&c.metadata));
    let dirty = c
        .metadata
        .dirty()
        .map_or("unknown".to_owned(), |d| d.to_string());
    props.push(("kernels:dirty".into(), dirty));
    props.push(("kernels:signer".into(), SIGNER_UNKNOWN.into()));
    props
        .into_iter()
        .map(|(name, value)| json!({"name": name, "value": value}))
        .collect()
}

/// The state of `metadata.json` and what it says beyond license and URLs.
fn metadata_properties(state: &VariantMetadata) -> Vec<(String, String)> {
    let mut props = Vec::new();
    let (git_blob, sha256, metadata) = match state {
        VariantMetadata::Read {
            source,
            git_blob,
            sha256,
            metadata,
        } => {
            props.push((
                "kernels:metadata".into(),
                format!("read from the {}", source.id()),
            ));
            (git_blob, sha256, metadata)
        }
        VariantMetadata::Unknown { reason } => {
            props.push(("kernels:metadata".into(), format!("unknown: {reason}")));
            return props;
        }
        VariantMetadata::Invalid { problem } => {
            props.push(("kernels:metadata".into(), format!("invalid: {problem}")));
            return props;
        }
    };
    let mut push = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            props.push((format!("kernels:{name}"), value));
        }
    };
    push("metadata-json:git-blob", git_blob.clone());
    push("metadata-json:sha256", sha256.clone());
    push("metadata:id", metadata.id.clone());
    push("metadata:version", metadata.version.map(|v| v.to_string()));
    push(
        "backend",
        metadata.backend.as_ref().map(|b| b.kind.to_string()),
    );
    let archs = metadata.backend.as_ref().map(|b| b.archs.join(" "));
    push("backend:archs", archs.filter(|a| !a.is_empty()));
    push(
        "kernels-minver",
        metadata.kernels_minver.as_ref().map(ToString::to_string),
    );
    push(
        "digest:algorithm",
        metadata.digest.as_ref().map(|d| d.algorithm.to_string()),
    );
    let provenance = metadata.provenance.as_ref();
    let builder = provenance.and_then(|p| p.kernel_builder.as_ref());
    push(
        "provenance:kernel-builder:version",
        builder.map(|b| b.version.clone()),
    );
    let builder_git = builder.and_then(|b| b.git.as_ref());
    push(
        "provenance:kernel-builder:commit",
        builder_git.map(|g| g.commit.as_str().to_owned()),
    );
    push(
        "provenance:kernel-builder:dirty",
        builder_git.map(|g| g.dirty.to_string()),
    );
    let kernel = provenance.and_then(|p| p.kernel.as_ref());
    push(
        "provenance:kernel:commit",
        kernel.map(|g| g.commit.as_str().to_owned()),
    );
    push(
        "provenance:kernel:dirty",
        kernel.map(|g| g.dirty.to_string()),
    );
    props
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures::{DIRTY, inventory_with};

    fn property<'a>(doc: &'a Value, name: &str) -> Option<&'a str> {
        doc["components"][0]["properties"]
            .as_array()?
            .iter()
            .find(|p| p["name"] == name)?["value"]
            .as_str()
    }

    #[test]
    fn provenance_and_dirty_flags_become_properties() {
        let doc = document(&inventory_with(DIRTY));
        assert_eq!(property(&doc, "kernels:dirty"), Some("true"));
        assert_eq!(
            property(&doc, "kernels:provenance:kernel-builder:version"),
            Some("0.17.0-dev0")
        );
        assert_eq!(
            property(&doc, "kernels:provenance:kernel-builder:dirty"),
            Some("true")
        );
        assert_eq!(
            property(&doc, "kernels:provenance:kernel:commit"),
            Some("fedcba9876543210fedcba9876543210fedcba98")
        );
        assert_eq!(property(&doc, "kernels:requested"), Some("version 1"));
        assert_eq!(property(&doc, "kernels:signer"), Some("unknown"));
        let component = &doc["components"][0];
        assert_eq!(component["licenses"][0]["license"]["name"], "llama2");
        assert_eq!(
            component["externalReferences"][0]["url"],
            "https://github.com/acme/relu.git"
        );
        assert!(component.get("hashes").is_none());
        // No provenance: the dirty flag is unknown, not false.
        let doc = document(&inventory_with(r#"{"version": 1}"#));
        assert_eq!(property(&doc, "kernels:dirty"), Some("unknown"));
        assert!(doc["components"][0].get("licenses").is_none());
    }
}
