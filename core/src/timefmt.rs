//! Timestamps and durations as the spec writes them: RFC 3339 UTC with
//! second precision (`2026-11-30T10:15:00Z`), durations as `600`, `600s`,
//! `10m` or `4h`.
//!
//! The calendar is chrono's; the product only ever needs UTC seconds. What
//! time it is, the clock (`clock.rs`) tells.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};

/// Seconds since the Unix epoch, UTC. Second precision is all GitHub has.
/// Written and read (serde) as RFC 3339 text; the default is the epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

impl Timestamp {
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
    /// `Z` or a numeric offset (normalised to UTC), optional fractional
    /// seconds (truncated). Impossible dates (February 31) are refused.
    pub fn parse(text: &str) -> Option<Timestamp> {
        let parsed = DateTime::parse_from_rfc3339(text.trim()).ok()?;
        Some(Timestamp(parsed.timestamp()))
    }

    fn to_utc(self) -> DateTime<Utc> {
        // Only a saturated sum lies outside chrono's years; it reads as the
        // last (or first) second chrono can write.
        DateTime::from_timestamp(self.0, 0).unwrap_or(if self.0 < 0 {
            DateTime::<Utc>::MIN_UTC
        } else {
            DateTime::<Utc>::MAX_UTC
        })
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_utc().to_rfc3339_opts(SecondsFormat::Secs, true))
    }
}

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Timestamp::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("{text:?} is not an RFC 3339 time")))
    }
}

impl schemars::JsonSchema for Timestamp {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "RFC 3339, UTC, whole seconds: 2026-11-30T10:15:00Z",
            "type": "string",
            "format": "date-time",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {text:?}: write seconds (600 or 600s), minutes (10m) or hours (4h), at most a year")]
pub struct DurationError {
    pub text: String,
}

/// The longest duration any setting takes: a year. Longer ones are typos,
/// and bounding them keeps every timestamp sum far from overflow.
pub const MAX_DURATION_SECS: u64 = 366 * 24 * 3600;

/// What a lease duration (ttl, heartbeat interval, grace, clock skew) must
/// be: whole seconds, at least one. Lease stamps are whole seconds, so a
/// `500ms` ttl would be a lease stale the moment it is written.
pub fn check_lease_duration(d: Duration) -> Result<(), &'static str> {
    if d < Duration::from_secs(1) || d.subsec_nanos() != 0 {
        Err("a whole number of seconds, at least 1s (leases are stamped to the second)")
    } else {
        Ok(())
    }
}

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
    fn refuses_impossible_dates_and_knows_leap_years() {
        for bad in [
            "2026-02-31T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-00-10T00:00:00Z",
            "2026-04-23T24:00:00Z",
            "2026-04-23T10:60:00Z",
            "2026-04-23T10:15:00+24:00",
        ] {
            assert_eq!(Timestamp::parse(bad), None, "{bad}");
        }
        // Leap days of leap years, the 400-year rule included.
        for leap in ["2024-02-29T12:00:00Z", "2000-02-29T00:00:00Z"] {
            assert_eq!(Timestamp::parse(leap).unwrap().to_string(), leap);
        }
        let feb29 = Timestamp::parse("2024-02-29T00:00:00Z").unwrap();
        assert_eq!(
            feb29.plus(Duration::from_secs(86_400)).to_string(),
            "2024-03-01T00:00:00Z"
        );
        assert_eq!(
            Timestamp::parse("2024-03-01T00:00:00Z")
                .unwrap()
                .since(Timestamp::parse("2024-02-28T00:00:00Z").unwrap()),
            Duration::from_secs(2 * 86_400)
        );
    }

    #[test]
    fn offsets_are_written_back_as_utc() {
        // An offset crossing midnight and a year: written back as UTC with `Z`.
        let t = Timestamp::parse("2027-01-01T01:30:00+02:00").unwrap();
        assert_eq!(t.to_string(), "2026-12-31T23:30:00Z");
        assert_eq!(Timestamp(0).to_string(), "1970-01-01T00:00:00Z");
        assert_eq!(
            Timestamp::parse("2026-11-30T10:15:00z")
                .unwrap()
                .to_string(),
            "2026-11-30T10:15:00Z"
        );
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
