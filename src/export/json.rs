//! `kernels export --format json`: the resolved set as this crate's own JSON
//! document (`schema` 1), every field of the inventory without the mapping
//! an SBOM standard imposes:
//!
//! ```text
//! {"schema": 1, "command": "export",
//!  "lock": {"format": "variant-hash" | "kernel-locks", "sha256": hex},
//!  "components": [{"repo_id", "commit", "variant", "purl", "requested": [..],
//!                  "variant_hash": "sha256-…" | null, "dirty": bool | null,
//!                  "signer": {"identity": null, "status": "unknown", "reason"},
//!                  "metadata": {"state": "read" | "unknown" | "invalid", …}}]}
//! ```

use serde_json::{Map, Value, json};

use kernels_types::metadata::{GitState, Metadata, Provenance};

use super::{Component, Inventory, SIGNER_NOTE, SIGNER_UNKNOWN, VariantMetadata};

/// The document.
pub fn document(inventory: &Inventory) -> Value {
    json!({
        "schema": 1,
        "command": "export",
        "lock": {
            "format": inventory.lock_format.id(),
            "sha256": inventory.lock_sha256,
        },
        "components": inventory.components.iter().map(component).collect::<Vec<_>>(),
    })
}

fn component(c: &Component) -> Value {
    json!({
        "repo_id": c.repo_id.as_str(),
        "commit": c.commit.as_str(),
        "variant": c.variant,
        "purl": c.purl(),
        "requested": c.requested,
        "variant_hash": c.variant_hash.as_ref().map(|h| format!("sha256-{h}")),
        "dirty": c.metadata.dirty(),
        "signer": {"identity": null, "status": SIGNER_UNKNOWN, "reason": SIGNER_NOTE},
        "metadata": metadata_doc(&c.metadata),
    })
}

fn metadata_doc(state: &VariantMetadata) -> Value {
    match state {
        VariantMetadata::Read {
            source,
            git_blob,
            sha256,
            metadata,
        } => {
            let mut doc = Map::new();
            doc.insert("state".into(), "read".into());
            doc.insert("read_from".into(), source.id().into());
            doc.insert("git_blob".into(), json!(git_blob));
            doc.insert("sha256".into(), json!(sha256));
            doc.extend(fields(metadata));
            Value::Object(doc)
        }
        VariantMetadata::Unknown { reason } => json!({"state": "unknown", "reason": reason}),
        VariantMetadata::Invalid { problem } => json!({"state": "invalid", "problem": problem}),
    }
}

/// The fields of `metadata.json` an SBOM reader wants, `null` when absent.
fn fields(m: &Metadata) -> Map<String, Value> {
    let digest = m.digest.as_ref().map(|d| {
        let files: Map<String, Value> = d
            .files
            .iter()
            .map(|(path, digest)| (path.clone(), digest.to_string().into()))
            .collect();
        json!({"algorithm": d.algorithm.as_str(), "files": files})
    });
    let backend = m
        .backend
        .as_ref()
        .map(|b| json!({"type": b.kind.as_str(), "archs": b.archs}));
    let doc = json!({
        "name": m.name,
        "id": m.id,
        "version": m.version,
        "license": m.license,
        "upstream": m.upstream,
        "source": m.source,
        "backend": backend,
        "kernels_minver": m.kernels_minver.as_ref().map(ToString::to_string),
        "digest": digest,
        "provenance": m.provenance.as_ref().map(provenance),
    });
    match doc {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn git(state: &GitState) -> Value {
    json!({"commit": state.commit.as_str(), "dirty": state.dirty})
}

fn provenance(p: &Provenance) -> Value {
    json!({
        "kernel_builder": p.kernel_builder.as_ref().map(|b| json!({
            "version": b.version,
            "git": b.git.as_ref().map(git),
        })),
        "kernel": p.kernel.as_ref().map(git),
    })
}
