//! The steps that several commands share (as uv's `commands/project/`): a
//! command file (one per subcommand of the clap tree) calls these, the flag
//! groups of [`super::args`], the printer, progress and the JSON documents,
//! and never another command file. Nothing here imports a command file.
//!
//! * [`locking`]: a lock request with defaults, and the lock operation that
//!   `lock` (with `--breaking`), `add`, `remove` and the stale-lock gate
//!   ([`stale`]) run; [`edit`] puts `pyproject.toml` and `kernels.lock` back
//!   when locking after an edit fails.
//! * [`declared`]: the declared targets (`[[tool.kernels.targets]]`) as
//!   environments, for the lock-time check and `download`.
//! * [`read`]: a project's `kernels.lock` read with its refs, its variant
//!   selection and its trust settings; the missing-lock error.
//! * [`profile`]: the target-runtime inputs (the policy is
//!   [`crate::lock::profile`]).
//! * [`client`]: the async runtime and the Hub client with its retry observer.
//! * [`fit`]: the fit policy and fit lines of download, verify and env, the
//!   declared targets of lock, the warning of add.
//! * [`explain`]: the per-kernel variant explanation of `download --explain`
//!   and `env`; [`causes`]: one message per cause when several kernels fail
//!   alike.

pub mod causes;
pub mod client;
pub mod declared;
pub mod edit;
pub mod explain;
pub mod fit;
pub mod interrupt;
pub mod local;
pub mod locking;
pub mod profile;
pub mod read;
pub mod stale;
