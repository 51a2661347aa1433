//! The settle (SPEC 4 and 9), driven once for whatever is claimed: an
//! issue's claim (`coord claim`, lease.rs) and a dispatch slot (`dispatch`,
//! dispatch.rs).
//!
//! One round: read and decide what to claim (or answer without a race:
//! held, blocked, no slot...); the guarded write (its guard re-judges what
//! the write rests on, and refuses when another claim moved it); the settle
//! delay, through the one clock, so that lagging lists show every racing
//! write; the re-read and the verdict, which the core's ordering rule
//! ([`maverick_core::settle`]) makes the same for every reader; on a loss,
//! the withdrawal of everything the round wrote. What is claimed decides
//! whether a lost round ends the race (an issue: another instance holds it)
//! or starts the next one (the dispatch slot: another issue may be free).
//!
//! The budget counts rounds, each lost to other claims but the last (a guard
//! that refused, a verdict that went to an earlier claim, stale claims to
//! clear), not time: a round may wait long in the token's queue for
//! GitHub's limits, and that wait is shared, not lost. Every round ends
//! (each wait in it is bounded), so a bound on the rounds is a bound on the
//! race. A race out of budget says so, having withdrawn what it wrote.

use std::time::Duration;

use crate::clock::Clock;

/// What a round's read decided.
pub(crate) enum Begin<Answer, Pick> {
    /// No race to run: the protocol's answer as read (held, no slot, ...).
    Answer(Answer),
    /// Claim this.
    Claim(Pick),
    /// The read found others' claims to clear first (stale ones): a round
    /// that wrote no claim of ours, lost to nobody, and counts against the
    /// budget.
    Again,
}

/// The verdict of the re-read after a claim.
pub(crate) enum Verdict<Answer, Lost> {
    Won(Answer),
    /// An earlier claim won: what ours wrote, to withdraw.
    Lost(Lost),
}

/// What is claimed, and how: the driver calls these in the order of a
/// round (see the module's doc).
pub(crate) trait Race {
    /// What a round's read decided to claim.
    type Pick;
    /// What the guarded write returned (the comments it created).
    type Wrote;
    /// A lost claim, as the re-read saw it.
    type Lost;
    /// What the protocol answers.
    type Answer;
    type Error;

    /// Reads, and decides what to claim; `lost` rounds went to other
    /// claims so far.
    fn begin(&mut self, lost: u32) -> Result<Begin<Self::Answer, Self::Pick>, Self::Error>;

    /// The guarded write of the claim; `None` when its guard refused
    /// (another claim landed since the read).
    fn write(&mut self, pick: &Self::Pick) -> Result<Option<Self::Wrote>, Self::Error>;

    /// After the settle delay: re-reads and judges the claim `wrote`.
    fn reread(
        &mut self,
        pick: Self::Pick,
        wrote: Self::Wrote,
    ) -> Result<Verdict<Self::Answer, Self::Lost>, Self::Error>;

    /// Withdraws what a lost claim wrote. `Some`: the race ends with that
    /// answer; `None`: another round may win.
    fn withdraw(&mut self, lost: Self::Lost) -> Result<Option<Self::Answer>, Self::Error>;

    /// The answer once the budget's rounds are all lost.
    fn out_of_budget(&mut self) -> Result<Self::Answer, Self::Error>;
}

/// How a race settles: the delay before each re-read, on `clock`, and how
/// many rounds it may run: every round but the last is one lost.
pub(crate) struct Driver<'a> {
    pub(crate) clock: &'a Clock,
    pub(crate) delay: Duration,
    pub(crate) rounds: u32,
}

impl Driver<'_> {
    /// Runs `race` until it answers, or has run every round of the budget.
    pub(crate) fn run<R: Race>(&self, race: &mut R) -> Result<R::Answer, R::Error> {
        // Rounds spent, against the budget; of them, those another claim won.
        let (mut rounds, mut lost) = (0, 0);
        loop {
            if rounds >= self.rounds {
                return race.out_of_budget();
            }
            rounds += 1;
            let pick = match race.begin(lost)? {
                Begin::Answer(answer) => return Ok(answer),
                Begin::Again => continue,
                Begin::Claim(pick) => pick,
            };
            let Some(wrote) = race.write(&pick)? else {
                lost += 1;
                continue;
            };
            if !self.delay.is_zero() {
                self.clock.wait_announced(self.delay, "the settle delay");
            }
            match race.reread(pick, wrote)? {
                Verdict::Won(answer) => return Ok(answer),
                Verdict::Lost(claim) => {
                    if let Some(answer) = race.withdraw(claim)? {
                        return Ok(answer);
                    }
                    lost += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scripted race: each round's read, write and verdict in turn.
    #[derive(Default)]
    struct Script {
        refusals: u32,
        losses: u32,
        ends_on_loss: bool,
        log: Vec<String>,
    }

    impl Race for Script {
        type Pick = u32;
        type Wrote = u32;
        type Lost = u32;
        type Answer = String;
        type Error = ();

        fn begin(&mut self, lost: u32) -> Result<Begin<String, u32>, ()> {
            self.log.push(format!("read {lost}"));
            Ok(Begin::Claim(lost))
        }

        fn write(&mut self, pick: &u32) -> Result<Option<u32>, ()> {
            if self.refusals > 0 {
                self.refusals -= 1;
                self.log.push("refused".into());
                return Ok(None);
            }
            self.log.push(format!("wrote {pick}"));
            Ok(Some(*pick))
        }

        fn reread(&mut self, _: u32, wrote: u32) -> Result<Verdict<String, u32>, ()> {
            if self.losses > 0 {
                self.losses -= 1;
                return Ok(Verdict::Lost(wrote));
            }
            Ok(Verdict::Won(format!("won {wrote}")))
        }

        fn withdraw(&mut self, lost: u32) -> Result<Option<String>, ()> {
            self.log.push(format!("withdrew {lost}"));
            Ok(self.ends_on_loss.then(|| "lost".to_owned()))
        }

        fn out_of_budget(&mut self) -> Result<String, ()> {
            Ok("out of budget".into())
        }
    }

    fn settle(clock: &Clock, rounds: u32) -> Driver<'_> {
        Driver {
            clock,
            delay: Duration::from_secs(3),
            rounds,
        }
    }

    #[test]
    fn a_lost_round_is_withdrawn_and_the_next_round_may_win() {
        let clock = Clock::manual();
        let start = clock.instant();
        let mut race = Script {
            refusals: 1,
            losses: 1,
            ..Script::default()
        };
        assert_eq!(settle(&clock, 5).run(&mut race), Ok("won 2".to_owned()));
        assert_eq!(
            race.log,
            [
                "read 0",
                "refused",
                "read 1",
                "wrote 1",
                "withdrew 1",
                "read 2",
                "wrote 2"
            ]
        );
        // A settle delay before each re-read, none after a refused write.
        assert_eq!(clock.since(start).as_secs(), 6);
    }

    #[test]
    fn a_race_that_ends_on_a_loss_answers_after_withdrawing() {
        let clock = Clock::manual();
        let mut race = Script {
            losses: 1,
            ends_on_loss: true,
            ..Script::default()
        };
        assert_eq!(settle(&clock, 5).run(&mut race), Ok("lost".to_owned()));
        assert_eq!(race.log, ["read 0", "wrote 0", "withdrew 0"]);
    }

    #[test]
    fn the_budget_counts_lost_rounds_and_bounds_the_race() {
        let clock = Clock::manual();
        let mut race = Script {
            refusals: 2,
            losses: u32::MAX,
            ..Script::default()
        };
        assert_eq!(
            settle(&clock, 4).run(&mut race),
            Ok("out of budget".to_owned())
        );
        let reads = race.log.iter().filter(|l| l.starts_with("read")).count();
        assert_eq!(reads, 4, "{:?}", race.log);
        assert_eq!(race.log.last().map(String::as_str), Some("withdrew 3"));
    }
}
