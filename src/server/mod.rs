//! TODO(owner): server.
