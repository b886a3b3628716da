//! `kernels to-wheel`: turn the build variants of a kernel snapshot into
//! installable Python wheels (PEP 427), one wheel per variant.
//!
//! Input is a snapshot directory holding `build/<variant>/…`: a local
//! checkout, a Hugging Face cache snapshot, or one downloaded into the cache
//! first (see [`Snapshot`]). Each variant
//! becomes `{name}-{version}[+{local}]-{python}-{abi}-{platform}.whl`, with
//! names and tags from [`WheelSpec`]. Output is reproducible: entries are
//! sorted, timestamps come from `SOURCE_DATE_EPOCH`, and generated files have
//! fixed modes, so rebuilding gives byte-identical wheels.
//!
//! [`locked`] plans the wheels of every kernel in a project's `kernels.lock`
//! (`--locked`/`--frozen`); [`build_wheels`] writes planned wheels in parallel.
//!
//! The reference `kernels` had this command in 0.6.0–0.11.3 only; see
//! [`WheelSpec::new`] and `docs/to-wheel.md` for where this one deliberately
//! differs.
//!
//! ```no_run
//! use kernels::wheel::{Kernel, Snapshot, WheelOptions, plan_wheels};
//!
//! # fn main() -> Result<(), kernels::wheel::WheelError> {
//! let kernel = Kernel::new("kernels-community/activation".parse().unwrap(), "0.0.3")?;
//! let snapshot = Snapshot::from_dir("checkout/activation".as_ref())?;
//! let options = WheelOptions {
//!     python: "3.9".parse().unwrap(),
//!     manylinux: "2.28".parse().unwrap(),
//!     macos: "11.0".parse().unwrap(),
//!     source_date_epoch: 315_532_800,
//! };
//! let mut written = Vec::new();
//! for planned in plan_wheels(&kernel, &snapshot, &[], &options)?.wheels {
//!     written.push(planned.build("dist".as_ref())?);
//! }
//! # Ok(())
//! # }
//! ```

mod archive;
mod depends;
mod error;
pub mod locked;
mod plan;
mod report;
mod source;
mod spec;

pub use archive::ZIP_EPOCH;
pub use depends::Depends;
pub use error::WheelError;
pub use plan::{build_wheels, plan_wheels};
pub use report::{Plan, PlannedWheel, WheelNote};
pub use source::{HubRevision, Snapshot};
pub use spec::{Kernel, KernelMetadata, TagVersion, WheelOptions, WheelSpec};
