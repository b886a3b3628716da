//! Micro-benchmark of the SHA-256 that checks streamed downloads
//! ([`kernels_types::Hasher`], the `sha2` crate): hashes `MIB` MiB (default
//! 1024) fed in 256 KiB pieces from one buffer, so memory stays flat, and
//! prints the throughput and which `sha2` backend the CPU allows. Compare with
//! `openssl dgst -sha256` and `sha256sum` through `bench/hash`.
//!
//! `cargo run --release -p kernels-types --example sha256_bench [MIB]`

use std::io::Write as _;
use std::time::Instant;

use kernels_types::{DigestKind, Hasher};

fn main() {
    let mib: u64 = std::env::args()
        .nth(1)
        .map_or(1024, |a| a.parse().expect("MIB must be a whole number"));
    let piece = vec![0x5au8; 256 * 1024];
    let total = mib * 1024 * 1024;
    let mut best = f64::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        let mut hasher = Hasher::new(DigestKind::Sha256, total);
        while hasher.len() < total {
            hasher.update(&piece);
        }
        let digest = hasher.finish();
        best = best.min(start.elapsed().as_secs_f64());
        std::hint::black_box(digest);
    }
    #[cfg(target_arch = "x86_64")]
    let backend = if std::arch::is_x86_feature_detected!("sha") {
        "SHA-NI (sha2's x86 backend, chosen at run time)"
    } else {
        "software (no SHA-NI on this CPU)"
    };
    #[cfg(not(target_arch = "x86_64"))]
    let backend = "see the sha2 features of this target";
    writeln!(
        std::io::stdout(),
        "sha2 via kernels_types::Hasher: {mib} MiB in {best:.3} s = {:.0} MiB/s (best of 3); backend: {backend}",
        mib as f64 / best
    )
    .expect("write to stdout");
}
