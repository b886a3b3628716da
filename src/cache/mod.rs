//! TODO(owner): cache.
