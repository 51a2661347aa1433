//! Who wins a race of claims (SPEC 4 and 9): the one ordering rule of the
//! settle, for an issue's claims and for the dispatch slot alike.
//!
//! Racing instances each write a claim and re-read; every reader must reach
//! the same verdict whenever it reads, so the verdict may depend only on the
//! order the surface gave the claims, never on who reads first. The claim
//! the surface placed first wins (on GitHub the lowest comment id, which it
//! assigns in ascending order; on the git surface the first compare-and-swap,
//! whose writer assigns the ids); the lexicographically lower instance id
//! breaks any tie the surface leaves. A claim written later can therefore
//! never unseat an earlier one.

use std::cmp::Ordering;

use crate::ids::InstanceId;
use crate::timefmt::Timestamp;

/// Where the surface placed one racing claim: all the settle orders by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Landed<'a> {
    /// The surface's time of the claim, where claims on different records
    /// race (the dispatch slot: one claim comment on each of many issues,
    /// whose comment ids need not be comparable on the git surface). `None`
    /// for claims on one record (an issue's claims), which its sequence
    /// orders exactly. One race never mixes the two.
    pub at: Option<Timestamp>,
    /// The surface's sequence for it: the comment id.
    pub seq: u64,
    /// The instance that wrote it: the tie-break.
    pub instance_id: &'a InstanceId,
}

impl Landed<'_> {
    /// A claim among others on the same record, ordered by its sequence.
    pub fn on_record(seq: u64, instance_id: &InstanceId) -> Landed<'_> {
        Landed {
            at: None,
            seq,
            instance_id,
        }
    }

    /// A claim racing claims on other records, ordered by the surface's
    /// time, then its sequence.
    pub fn across_records(at: Timestamp, seq: u64, instance_id: &InstanceId) -> Landed<'_> {
        Landed {
            at: Some(at),
            seq,
            instance_id,
        }
    }
}

impl Ord for Landed<'_> {
    /// Earlier first: the surface's time, its sequence, then the lower
    /// instance id.
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.seq, self.instance_id).cmp(&(other.at, other.seq, other.instance_id))
    }
}

impl PartialOrd for Landed<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Sorts racing claims into the settle's order, the winner first.
pub fn earliest_first<T>(claims: &mut [T], landed: impl Fn(&T) -> Landed<'_>) {
    claims.sort_by(|a, b| landed(a).cmp(&landed(b)));
}

/// Whether the claim `a` landed before the claim `b`, so that `b` can never
/// unseat it.
pub fn landed_before(a: Landed<'_>, b: Landed<'_>) -> bool {
    a < b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> InstanceId {
        InstanceId::parse(text).unwrap()
    }

    #[test]
    fn the_lowest_sequence_wins_on_one_record_whatever_the_instance_ids() {
        let mut claims = vec![(7, id("a")), (3, id("z")), (5, id("b"))];
        earliest_first(&mut claims, |(seq, id)| Landed::on_record(*seq, id));
        assert_eq!(claims, vec![(3, id("z")), (5, id("b")), (7, id("a"))]);
    }

    #[test]
    fn a_tie_the_surface_leaves_goes_to_the_lower_instance_id() {
        let (agent_a, agent_b) = (id("agent-a"), id("agent-b"));
        let a = Landed::on_record(4, &agent_a);
        let b = Landed::on_record(4, &agent_b);
        assert!(landed_before(a, b));
        assert!(!landed_before(b, a));
        let at = Timestamp(1_000);
        assert!(landed_before(
            Landed::across_records(at, 9, &agent_a),
            Landed::across_records(at, 9, &agent_b)
        ));
    }

    #[test]
    fn across_records_the_surface_time_orders_before_the_sequence() {
        let mut claims = vec![
            (Timestamp(20), 1, id("a")),
            (Timestamp(10), 9, id("c")),
            (Timestamp(10), 8, id("d")),
        ];
        earliest_first(&mut claims, |(at, seq, id)| {
            Landed::across_records(*at, *seq, id)
        });
        assert_eq!(
            claims,
            vec![
                (Timestamp(10), 8, id("d")),
                (Timestamp(10), 9, id("c")),
                (Timestamp(20), 1, id("a"))
            ]
        );
    }

    #[test]
    fn the_order_is_the_same_whichever_order_the_claims_are_read_in() {
        let read = [(2, id("b")), (1, id("c")), (2, id("a")), (3, id("a"))];
        let mut forward = read.to_vec();
        let mut backward: Vec<_> = read.iter().rev().cloned().collect();
        earliest_first(&mut forward, |(s, id)| Landed::on_record(*s, id));
        earliest_first(&mut backward, |(s, id)| Landed::on_record(*s, id));
        assert_eq!(forward, backward);
        assert_eq!(forward[0], (1, id("c")));
    }
}
