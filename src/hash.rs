//! TODO(owner): hash.
