//! Byte counts from hostile data: the sizes of a Hub listing, a lock or a
//! cache are any `u64` a server or a file says, so they are added without
//! overflow. A sum that would pass `u64::MAX` stays at `u64::MAX` (more than
//! any disk holds, so a free-space check still refuses it) instead of
//! wrapping to a small number.

/// The sum of `sizes` in bytes, saturating at `u64::MAX`.
pub fn total(sizes: impl IntoIterator<Item = u64>) -> u64 {
    sizes.into_iter().fold(0, u64::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_saturate_instead_of_wrapping() {
        assert_eq!(total([1, 2, 3]), 6);
        assert_eq!(total([1 << 63, 1 << 63]), u64::MAX);
        assert_eq!(total([u64::MAX, 1]), u64::MAX);
        assert_eq!(total(std::iter::empty()), 0);
    }
}
