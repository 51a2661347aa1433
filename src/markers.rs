//! The marker format lives in the pure core (`maverick_core::markers`);
//! what needs the machine (a fresh random id) lives here.

pub use maverick_core::markers::*;

/// A fresh marker id ([`crate::unique::unique_id`]). It only has to be
/// unique, not secret: it lets a reader recognise a comment that a retried
/// POST created twice.
pub fn new_marker_id() -> String {
    crate::unique::unique_id()
}

#[cfg(test)]
mod tests {
    use super::new_marker_id;

    #[test]
    fn marker_ids_are_32_hex_and_distinct() {
        let ids: std::collections::HashSet<_> = (0..1000).map(|_| new_marker_id()).collect();
        assert_eq!(ids.len(), 1000);
        for id in ids {
            assert_eq!(id.len(), 32);
            assert!(id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
        }
    }
}
