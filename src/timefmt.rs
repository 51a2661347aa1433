//! Timestamps and durations as the spec writes them: RFC 3339 UTC with
//! second precision (`2026-11-30T10:15:00Z`), durations as `600`, `600s`,
//! `10m` or `4h`.
//!
//! Kept dependency-free: the product only ever needs UTC seconds.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, UTC. Second precision is all GitHub has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub fn now() -> Timestamp {
        let secs = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_secs() as i64,
            Err(e) => -(e.duration().as_secs() as i64),
        };
        Timestamp(secs)
    }

    pub fn plus(self, d: Duration) -> Timestamp {
        Timestamp(
            self.0
                .saturating_add(i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
        )
    }

    pub fn minus(self, d: Duration) -> Timestamp {
        Timestamp(
            self.0
                .saturating_sub(i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
        )
    }

    /// Seconds from `earlier` to `self`, zero when `earlier` is later.
    pub fn since(self, earlier: Timestamp) -> Duration {
        Duration::from_secs(self.0.saturating_sub(earlier.0).max(0) as u64)
    }

    /// Parses RFC 3339 as written by us, GitHub and Python's `isoformat()`:
    /// `Z` or a numeric offset, optional fractional seconds (truncated).
    pub fn parse(text: &str) -> Option<Timestamp> {
        let b = text.trim().as_bytes();
        if b.len() < 19 || !b.is_ascii() {
            return None;
        }
        let num = |range: std::ops::Range<usize>| -> Option<i64> {
            let s = std::str::from_utf8(b.get(range)?).ok()?;
            if s.bytes().all(|c| c.is_ascii_digit()) {
                s.parse().ok()
            } else {
                None
            }
        };
        if b[4] != b'-'
            || b[7] != b'-'
            || !matches!(b[10], b'T' | b't' | b' ')
            || b[13] != b':'
            || b[16] != b':'
        {
            return None;
        }
        let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
        if !(1..=12).contains(&month)
            || !(1..=31).contains(&day)
            || hour > 23
            || minute > 59
            || second > 60
        {
            return None;
        }
        let mut rest = &b[19..];
        if let Some(frac) = rest.strip_prefix(b".") {
            let digits = frac.iter().take_while(|c| c.is_ascii_digit()).count();
            if digits == 0 {
                return None;
            }
            rest = &frac[digits..];
        }
        let offset = match rest {
            b"Z" | b"z" => 0,
            [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
                let digit = |c: &u8| c.is_ascii_digit().then(|| (c - b'0') as i64);
                let minutes = (digit(h1)? * 10 + digit(h2)?) * 60 + digit(m1)? * 10 + digit(m2)?;
                if *sign == b'+' {
                    minutes * 60
                } else {
                    -minutes * 60
                }
            }
            _ => return None,
        };
        let days = days_from_civil(year, month, day);
        Some(Timestamp(
            days * 86_400 + hour * 3600 + minute * 60 + second - offset,
        ))
    }
}

/// Waits do not pass silently: one that lasts longer than this says so on
/// stderr without `-v`.
pub const ANNOUNCED_WAIT: Duration = Duration::from_secs(2);

/// Sleeps for `pause`; a pause longer than [`ANNOUNCED_WAIT`] first prints one
/// line on stderr ("waiting 43 s for GitHub's rate limit, until 10:42:00Z"),
/// so that a person or agent watching knows the command is not stuck.
pub fn wait_announced(pause: Duration, what_for: &str) {
    if pause > ANNOUNCED_WAIT {
        let until = Timestamp::now().plus(pause).to_string();
        let clock = until.split_once('T').map_or(until.as_str(), |(_, t)| t);
        eprintln!(
            "waiting {} s for {what_for}, until {clock}",
            pause.as_secs_f64().ceil() as u64
        );
    }
    std::thread::sleep(pause);
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.0.div_euclid(86_400);
        let secs = self.0.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        write!(
            f,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )
    }
}

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

// Howard Hinnant's civil calendar algorithms.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {text:?}: write seconds (600 or 600s), minutes (10m) or hours (4h), at most a year")]
pub struct DurationError {
    pub text: String,
}

/// The longest duration any setting takes: a year. Longer ones are typos,
/// and bounding them keeps every timestamp sum far from overflow.
pub const MAX_DURATION_SECS: u64 = 366 * 24 * 3600;

/// Parses `600`, `600s`, `10m`, `4h` (at most a year), and `200ms` for the
/// short waits of tests.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let err = || DurationError {
        text: text.to_owned(),
    };
    let t = text.trim();
    let (digits, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    if digits.is_empty() {
        return Err(err());
    }
    let n: u64 = digits.parse().map_err(|_| err())?;
    if unit == "ms" {
        return match n.checked_div(1000) {
            Some(secs) if secs <= MAX_DURATION_SECS => Ok(Duration::from_millis(n)),
            _ => Err(err()),
        };
    }
    let secs = match unit {
        "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        _ => None,
    }
    .filter(|s| *s <= MAX_DURATION_SECS)
    .ok_or_else(err)?;
    Ok(Duration::from_secs(secs))
}

/// The shortest of the spec's forms that says `d` exactly.
pub fn format_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s != 0 && s % 3600 == 0 {
        format!("{}h", s / 3600)
    } else if s != 0 && s % 60 == 0 {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

/// For people: `9m59s`, `2h`, `45s`.
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || out.is_empty() {
        out.push_str(&format!("{s}s"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_rfc3339() {
        for text in [
            "1970-01-01T00:00:00Z",
            "2026-11-30T10:15:00Z",
            "2000-02-29T23:59:59Z",
            "1969-12-31T23:59:59Z",
        ] {
            assert_eq!(Timestamp::parse(text).unwrap().to_string(), text);
        }
    }

    #[test]
    fn parses_offsets_and_fractions() {
        let base = Timestamp::parse("2026-04-23T10:15:00Z").unwrap();
        assert_eq!(
            Timestamp::parse("2026-04-23T10:15:00.123456+00:00"),
            Some(base)
        );
        assert_eq!(Timestamp::parse("2026-04-23T12:15:00+02:00"), Some(base));
        assert_eq!(Timestamp::parse("2026-04-23T09:15:00-01:00"), Some(base));
        for bad in [
            "",
            "2026-04-23",
            "2026-13-01T00:00:00Z",
            "2026-04-23T10:15:00",
            "2026-04-23T10:15:00.Z",
            "２０２６-04-23T10:15:00Z",
        ] {
            assert_eq!(Timestamp::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("600").unwrap().as_secs(), 600);
        assert_eq!(parse_duration("600s").unwrap().as_secs(), 600);
        assert_eq!(parse_duration("10m").unwrap().as_secs(), 600);
        assert_eq!(parse_duration("4h").unwrap().as_secs(), 14_400);
        assert_eq!(parse_duration("200ms").unwrap(), Duration::from_millis(200));
        for bad in [
            "",
            "m",
            "10x",
            "-5",
            "1.5h",
            "99999999999999999999h",
            "18446744073709551615",
            "367d",
            "8785h",
            "99999999999999ms",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(format_duration(Duration::from_secs(600)), "10m");
        assert_eq!(format_duration(Duration::from_secs(90)), "90s");
        assert_eq!(format_duration(Duration::from_secs(14_400)), "4h");
        assert_eq!(human_duration(Duration::from_secs(599)), "9m59s");
        assert_eq!(human_duration(Duration::from_secs(7200)), "2h");
        assert_eq!(human_duration(Duration::ZERO), "0s");
    }
}
