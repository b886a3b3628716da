//! Keys, the test Fulcio CA and its GitHub-Actions-style leaf certificates
//! with an embedded precertificate SCT.

use rcgen::{
    BasicConstraints, CertificateParams, CustomExtension, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyUsagePurpose, SerialNumber,
};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _};
use sha2::{Digest as _, Sha256};
use time::OffsetDateTime;
use x509_cert::der::{Decode as _, Encode as _};

use super::TestIdentity;

/// `id-ce-embeddedSCT` / RFC 6962 precertificate SCT list.
const SCT_LIST_OID: &[u64] = &[1, 3, 6, 1, 4, 1, 11129, 2, 4, 2];
/// Subject alternative name.
const SAN_OID: &[u64] = &[2, 5, 29, 17];
/// The Fulcio extension arc `1.3.6.1.4.1.57264.1.<n>`.
fn fulcio_oid(n: u64) -> Vec<u64> {
    vec![1, 3, 6, 1, 4, 1, 57264, 1, n]
}

/// An ECDSA P-256 key usable both by rcgen (certificates) and ring (raw
/// signatures over SCTs, SETs, checkpoints and artifacts).
pub(crate) struct Key {
    signer: EcdsaKeyPair,
    pub(crate) rcgen: rcgen::KeyPair,
    /// DER SubjectPublicKeyInfo.
    pub(crate) spki: Vec<u8>,
}

impl Key {
    /// A fresh random key.
    pub(crate) fn generate() -> Key {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng)
            .expect("ring generates a P-256 key");
        let signer =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
                .expect("ring reads the key it generated");
        let rcgen = rcgen::KeyPair::try_from(pkcs8.as_ref()).expect("rcgen reads a PKCS#8 key");
        let spki = rcgen.public_key_der();
        debug_assert!(spki.ends_with(signer.public_key().as_ref()));
        Key {
            signer,
            rcgen,
            spki,
        }
    }

    /// ECDSA P-256 / SHA-256 signature over `message`, ASN.1 DER encoded.
    pub(crate) fn sign(&self, message: &[u8]) -> Vec<u8> {
        self.signer
            .sign(&SystemRandom::new(), message)
            .expect("ECDSA signing does not fail")
            .as_ref()
            .to_vec()
    }

    /// The log ID of this key as Sigstore and RFC 6962 compute it: SHA-256 of
    /// the DER SubjectPublicKeyInfo.
    pub(crate) fn log_id(&self) -> [u8; 32] {
        Sha256::digest(&self.spki).into()
    }
}

/// A certificate authority: its key and certificate.
pub(crate) struct Ca {
    pub(crate) key: Key,
    pub(crate) cert: rcgen::Certificate,
}

impl Ca {
    /// The DER certificate.
    pub(crate) fn der(&self) -> Vec<u8> {
        self.cert.der().to_vec()
    }
}

fn ca_params(common_name: &str, path_len: Option<u8>, from: OffsetDateTime) -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    name.push(DnType::OrganizationName, "kernels-test");
    name.push(DnType::CommonName, common_name);
    params.distinguished_name = name;
    params.is_ca = IsCa::Ca(match path_len {
        Some(len) => BasicConstraints::Constrained(len),
        None => BasicConstraints::Unconstrained,
    });
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
    params.not_before = from;
    params.not_after = from + time::Duration::days(3650);
    params.serial_number = Some(serial(common_name.as_bytes()));
    params
}

/// A self-signed root CA named `common_name`, valid ten years from `from`.
pub(crate) fn root_ca(common_name: &str, from: OffsetDateTime) -> Ca {
    let key = Key::generate();
    let cert = ca_params(common_name, None, from)
        .self_signed(&key.rcgen)
        .expect("rcgen signs the root");
    Ca { key, cert }
}

/// An intermediate CA (path length 0) issued by `root`.
pub(crate) fn intermediate_ca(root: &Ca, common_name: &str, from: OffsetDateTime) -> Ca {
    let key = Key::generate();
    let mut params = ca_params(common_name, Some(0), from);
    params.use_authority_key_identifier_extension = true;
    let cert = params
        .signed_by(&key.rcgen, &root.cert, &root.key.rcgen)
        .expect("rcgen signs the intermediate");
    Ca { key, cert }
}

/// A positive serial number of 16 bytes derived from `seed`.
fn serial(seed: &[u8]) -> SerialNumber {
    let mut bytes: [u8; 16] = Sha256::digest(seed)[..16].try_into().expect("16 bytes");
    bytes[0] &= 0x7f;
    bytes[0] |= 0x01;
    SerialNumber::from_slice(&bytes)
}

/// DER of `value` as an ASN.1 UTF8String (how Fulcio writes extensions from
/// `.1.8` on).
fn der_utf8(value: &str) -> Vec<u8> {
    x509_cert::der::asn1::Utf8StringRef::new(value)
        .and_then(|s| s.to_der())
        .expect("a UTF8String encodes")
}

/// DER of `bytes` as an ASN.1 OCTET STRING.
fn der_octets(bytes: &[u8]) -> Vec<u8> {
    x509_cert::der::asn1::OctetStringRef::new(bytes)
        .and_then(|s| s.to_der())
        .expect("an OCTET STRING encodes")
}

/// The critical SAN extension with one URI (Fulcio leaves have an empty
/// subject, so RFC 5280 §4.2.1.6 wants the SAN critical; rcgen's own SAN is
/// never critical).
fn san_uri_extension(uri: &str) -> CustomExtension {
    let uri_der = x509_cert::der::asn1::Ia5StringRef::new(uri)
        .and_then(|s| s.to_der())
        .expect("the SAN URI is ASCII");
    // [6] IMPLICIT IA5String: same length and content, context tag 0x86.
    let mut general_name = uri_der;
    general_name[0] = 0x86;
    let mut names = vec![0x30];
    push_der_len(&mut names, general_name.len());
    names.extend(general_name);
    let mut ext = CustomExtension::from_oid_content(SAN_OID, names);
    ext.set_criticality(true);
    ext
}

fn push_der_len(out: &mut Vec<u8>, len: usize) {
    match len {
        0..=0x7f => out.push(len as u8),
        0x80..=0xff => out.extend([0x81, len as u8]),
        _ => out.extend([0x82, (len >> 8) as u8, len as u8]),
    }
}

/// The Fulcio extensions of a GitHub Actions identity.
fn identity_extensions(identity: &TestIdentity) -> Vec<CustomExtension> {
    let der =
        |n: u64, value: &str| CustomExtension::from_oid_content(&fulcio_oid(n), der_utf8(value));
    let mut out = vec![san_uri_extension(&identity.san_uri)];
    // Legacy issuer: the raw string bytes, not DER.
    if let Some(legacy) = &identity.legacy_issuer {
        out.push(CustomExtension::from_oid_content(
            &fulcio_oid(1),
            legacy.clone(),
        ));
    }
    let claims = [
        (8, identity.issuer.as_str()),
        (9, &identity.build_signer_uri),
        (10, &identity.build_signer_digest),
        (11, "github-hosted"),
        (12, &identity.source_repository_uri),
        (13, &identity.build_signer_digest),
        (14, "refs/heads/main"),
    ];
    let kept = claims
        .into_iter()
        .filter(|(n, _)| !identity.omitted.contains(n));
    out.extend(kept.map(|(n, value)| der(n, value)));
    out
}

/// What a leaf certificate is issued with.
pub(crate) struct LeafRequest<'a> {
    pub(crate) identity: &'a TestIdentity,
    pub(crate) key: &'a Key,
    pub(crate) not_before: OffsetDateTime,
    pub(crate) not_after: OffsetDateTime,
    pub(crate) serial_seed: &'a [u8],
    /// Add a critical extension no verifier knows (`1.3.6.1.4.1.57264.99.1`).
    pub(crate) odd_critical_extension: bool,
}

/// Issue a Fulcio-style leaf for `request` under `issuer`, with one embedded
/// precertificate SCT signed by `ct` at `not_before`. Returns the DER.
pub(crate) fn issue_leaf(issuer: &Ca, ct: &Key, request: &LeafRequest<'_>) -> Vec<u8> {
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params.not_before = request.not_before;
    params.not_after = request.not_after;
    params.serial_number = Some(serial(request.serial_seed));
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
    params.use_authority_key_identifier_extension = true;
    params.custom_extensions = identity_extensions(request.identity);
    if request.odd_critical_extension {
        let mut odd =
            CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 57264, 99, 1], der_utf8("odd"));
        odd.set_criticality(true);
        params.custom_extensions.push(odd);
    }
    let sign = |params: CertificateParams| {
        params
            .signed_by(&request.key.rcgen, &issuer.cert, &issuer.key.rcgen)
            .expect("rcgen signs the leaf")
            .der()
            .to_vec()
    };
    // The precertificate's TBS is the final TBS without the SCT list, so
    // issue once without it (the SCT extension goes last, nothing else
    // changes), sign the SCT over that TBS, then issue the final certificate.
    let precert_tbs = tbs_der(&sign(params.clone()));
    let timestamp_ms = (request.not_before.unix_timestamp() as u64) * 1000;
    let sct_list = sct_list(ct, &issuer.key.spki, &precert_tbs, timestamp_ms);
    params
        .custom_extensions
        .push(CustomExtension::from_oid_content(
            SCT_LIST_OID,
            der_octets(&sct_list),
        ));
    let leaf = sign(params);
    assert_eq!(
        precert_tbs_of(&leaf),
        precert_tbs,
        "the final leaf's TBS without its SCT list is the precertificate's"
    );
    leaf
}

/// The DER TBSCertificate of a DER certificate.
fn tbs_der(cert: &[u8]) -> Vec<u8> {
    x509_cert::Certificate::from_der(cert)
        .and_then(|c| c.tbs_certificate.to_der())
        .expect("rcgen's certificate parses")
}

/// The TBSCertificate of `cert` with the SCT list extension removed, as a
/// verifier rebuilds it.
fn precert_tbs_of(cert: &[u8]) -> Vec<u8> {
    let oid = x509_cert::der::oid::ObjectIdentifier::new_unwrap("1.3.6.1.4.1.11129.2.4.2");
    let mut tbs = x509_cert::Certificate::from_der(cert)
        .expect("rcgen's certificate parses")
        .tbs_certificate;
    tbs.extensions = tbs
        .extensions
        .map(|exts| exts.into_iter().filter(|e| e.extn_id != oid).collect());
    tbs.to_der().expect("the TBS encodes")
}

/// The TLS-encoded `SignedCertificateTimestampList` holding one v1 SCT over
/// the precertificate entry `(issuer_spki, precert_tbs)` (RFC 6962 §3.2).
fn sct_list(ct: &Key, issuer_spki: &[u8], precert_tbs: &[u8], timestamp_ms: u64) -> Vec<u8> {
    let mut signed = vec![0u8, 0u8]; // version v1, signature_type certificate_timestamp
    signed.extend(timestamp_ms.to_be_bytes());
    signed.extend(1u16.to_be_bytes()); // entry_type precert_entry
    signed.extend(Sha256::digest(issuer_spki));
    let len = precert_tbs.len() as u32;
    signed.extend(&len.to_be_bytes()[1..]);
    signed.extend(precert_tbs);
    signed.extend(0u16.to_be_bytes()); // no extensions
    let signature = ct.sign(&signed);

    let mut sct = vec![0u8]; // version v1
    sct.extend(ct.log_id());
    sct.extend(timestamp_ms.to_be_bytes());
    sct.extend(0u16.to_be_bytes()); // no extensions
    sct.extend([4u8, 3u8]); // sha256, ecdsa
    sct.extend((signature.len() as u16).to_be_bytes());
    sct.extend(signature);

    let mut list = ((sct.len() + 2) as u16).to_be_bytes().to_vec();
    list.extend((sct.len() as u16).to_be_bytes());
    list.extend(sct);
    list
}
