//! TODO(owner): manifest.
