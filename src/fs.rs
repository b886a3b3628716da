//! TODO(owner): fs.
