//! TODO(owner): variant.
