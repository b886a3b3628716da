//! TODO(owner): requirement.
