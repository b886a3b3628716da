//! TODO(owner): lockfile.
