//! TODO(owner): resolver.
