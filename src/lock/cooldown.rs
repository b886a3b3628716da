//! The release cooldown (`[tool.kernels] exclude-newer`, `kernels lock
//! --exclude-newer`): what is resolved anew locks the newest commit that is
//! older than a cut-off instant, as uv's `exclude-newer`, pnpm's
//! `minimumReleaseAge` and Dependabot's `cooldown` hold back fresh releases.
//!
//! * The setting is an RFC 3339 instant (`2026-11-25T00:00:00Z`), a date
//!   (`2026-11-25`, midnight UTC) or a span before now (`7 days`, `P7D`,
//!   jiff's friendly or ISO 8601 form).
//! * A span is turned into a fixed instant when `kernels lock` runs; the lock
//!   formats are the reference's bytes and cannot hold it, so the instant is
//!   recorded in `pyproject.toml` as `[tool.kernels] exclude-newer-cutoff`,
//!   which `kernels lock --check` (and `--locked`) uses instead of the span
//!   (the rule is in `docs/lockfile.md`, "Release cooldown").
//! * `exclude-newer-package = { "org/name" = false }` exempts a repository.
//! * A `vN` branch resolves to the newest commit of its history dated at or
//!   before the cut-off (the commits API); a tag requirement to the highest
//!   matching tag whose commit is. Revisions are used as written.

use std::fmt;

use jiff::{Span, Timestamp, tz::TimeZone};
use kernels_hub::{HubClient, HubError};
use kernels_types::repo_id::RepoId;
use kernels_types::wire::{CommitInfo, RepoType};
use toml_edit::DocumentMut;

/// The `[tool.kernels]` key `kernels lock` records a span's instant in.
pub const CUTOFF_KEY: &str = "exclude-newer-cutoff";

/// An `exclude-newer` value as written.
#[derive(Debug, Clone)]
pub enum ExcludeNewer {
    /// A fixed instant (an RFC 3339 time, or a date at midnight UTC).
    Instant(Timestamp),
    /// A span before the time `kernels lock` runs, with its text.
    Span {
        /// The text as written (`7 days`).
        text: String,
        /// The parsed span (positive).
        span: Span,
    },
}

/// Two spans are equal when their units are ([`Span::fieldwise`]).
impl PartialEq for ExcludeNewer {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ExcludeNewer::Instant(a), ExcludeNewer::Instant(b)) => a == b,
            (ExcludeNewer::Span { span: a, .. }, ExcludeNewer::Span { span: b, .. }) => {
                a.fieldwise() == b.fieldwise()
            }
            _ => false,
        }
    }
}

impl Eq for ExcludeNewer {}

impl ExcludeNewer {
    /// Parses `2026-11-25T00:00:00Z`, `2026-11-25` or a positive span
    /// (`7 days`, `1 week`, `P7D`); the error says which forms are accepted.
    pub fn parse(text: &str) -> Result<ExcludeNewer, String> {
        let trimmed = text.trim();
        if let Ok(instant) = trimmed.parse::<Timestamp>() {
            return Ok(ExcludeNewer::Instant(instant));
        }
        if let Ok(date) = trimmed.parse::<jiff::civil::Date>()
            && let Ok(zoned) = date.to_zoned(TimeZone::UTC)
        {
            return Ok(ExcludeNewer::Instant(zoned.timestamp()));
        }
        match trimmed.parse::<Span>() {
            Ok(span) if span.is_positive() => Ok(ExcludeNewer::Span {
                text: trimmed.to_owned(),
                span,
            }),
            _ => Err(format!(
                "`{text}` is neither an RFC 3339 time (`2026-11-25T00:00:00Z`), a date (`2026-11-25`) nor a positive span (`7 days`, `P7D`)"
            )),
        }
    }

    /// The instant this value stands for at `now`, to the second.
    pub fn at(&self, now: Timestamp) -> Result<Timestamp, String> {
        let instant = match self {
            ExcludeNewer::Instant(t) => *t,
            ExcludeNewer::Span { text, span } => now
                .to_zoned(TimeZone::UTC)
                .checked_sub(*span)
                .map_err(|err| format!("`{text}` before now: {err}"))?
                .timestamp(),
        };
        Ok(truncate(instant))
    }
}

impl fmt::Display for ExcludeNewer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExcludeNewer::Instant(t) => write!(f, "{}", truncate(*t)),
            ExcludeNewer::Span { text, .. } => f.write_str(text),
        }
    }
}

/// `t` without its fraction of a second (the form recorded and printed).
fn truncate(t: Timestamp) -> Timestamp {
    Timestamp::from_second(t.as_second()).unwrap_or(t)
}

/// Where the cut-off in force comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `--exclude-newer` on the command line.
    Flag(ExcludeNewer),
    /// `[tool.kernels] exclude-newer`, resolved now when it is a span.
    Manifest(ExcludeNewer),
    /// The instant `exclude-newer-cutoff` recorded by the last `kernels lock`.
    Recorded(ExcludeNewer),
}

/// The cut-off in force for one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cooldown {
    /// Commits dated after it are held back.
    pub cutoff: Timestamp,
    /// The setting it came from.
    pub origin: Origin,
    /// Repositories the cut-off does not apply to (`exclude-newer-package`).
    pub exempt: Vec<RepoId>,
}

/// The cooldown settings of `[tool.kernels]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CooldownSettings {
    /// `exclude-newer`.
    pub exclude_newer: Option<ExcludeNewer>,
    /// `exclude-newer-package` entries set to `false`.
    pub exempt: Vec<RepoId>,
    /// `exclude-newer-cutoff`, written by `kernels lock`.
    pub recorded: Option<Timestamp>,
}

/// Which command asks: `kernels lock` resolves a span now; a check uses the
/// instant the last lock recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// `kernels lock` (and the re-lock of `download`).
    Lock,
    /// `kernels lock --check` / `--locked`, `kernels outdated`.
    Check,
}

impl CooldownSettings {
    /// The cut-off in force at `now`: `flag` (`--exclude-newer`), else an
    /// instant of `exclude-newer`, else (for [`Use::Check`], or when the
    /// manifest has no `exclude-newer`) the recorded instant, else the span of
    /// `exclude-newer` before `now`. `None`: no cooldown.
    pub fn in_force(
        &self,
        flag: Option<&ExcludeNewer>,
        purpose: Use,
        now: Timestamp,
    ) -> Result<Option<Cooldown>, String> {
        let recorded = self.recorded.map(ExcludeNewer::Instant);
        let origin = match (flag, &self.exclude_newer, recorded) {
            (Some(flag), _, _) => Origin::Flag(flag.clone()),
            (None, Some(setting @ ExcludeNewer::Instant(_)), _) => {
                Origin::Manifest(setting.clone())
            }
            (None, Some(_), Some(recorded)) if purpose == Use::Check => Origin::Recorded(recorded),
            (None, Some(setting), _) => Origin::Manifest(setting.clone()),
            (None, None, Some(recorded)) => Origin::Recorded(recorded),
            (None, None, None) => return Ok(None),
        };
        let value = match &origin {
            Origin::Flag(v) | Origin::Manifest(v) | Origin::Recorded(v) => v,
        };
        Ok(Some(Cooldown {
            cutoff: value.at(now)?,
            origin,
            exempt: self.exempt.clone(),
        }))
    }
}

impl Cooldown {
    /// Whether the cut-off applies to `repo_id` (repository ids compare
    /// without case).
    pub fn applies_to(&self, repo_id: &RepoId) -> bool {
        !self
            .exempt
            .iter()
            .any(|e| e.as_str().eq_ignore_ascii_case(repo_id.as_str()))
    }

    /// The span a held-back commit waits for, when the cut-off moves with time.
    fn span(&self) -> Option<Span> {
        match &self.origin {
            Origin::Flag(ExcludeNewer::Span { span, .. })
            | Origin::Manifest(ExcludeNewer::Span { span, .. }) => Some(*span),
            _ => None,
        }
    }

    /// The instant `kernels lock` records in `exclude-newer-cutoff`: every
    /// cut-off but a fixed `exclude-newer` of the manifest, which records
    /// itself.
    pub fn to_record(&self) -> Option<Timestamp> {
        match &self.origin {
            Origin::Manifest(ExcludeNewer::Instant(_)) => None,
            _ => Some(self.cutoff),
        }
    }

    /// Whether a Hub commit date is at or before the cut-off; a date that does
    /// not parse is not.
    pub fn admits(&self, date: &str) -> bool {
        date.parse::<Timestamp>().is_ok_and(|d| d <= self.cutoff)
    }

    /// What the setting says, for messages: `exclude-newer = "7 days"`.
    pub fn describe(&self) -> String {
        match &self.origin {
            Origin::Flag(v) => format!("--exclude-newer {v}"),
            Origin::Manifest(v) => format!("exclude-newer = \"{v}\""),
            Origin::Recorded(v) => format!("{CUTOFF_KEY} = \"{v}\""),
        }
    }

    /// The newest commit of `revision`'s history (newest first, the commits
    /// API) dated at or before the cut-off, and how many newer ones were
    /// passed over; `Ok(None)` when every commit is newer.
    pub async fn newest_admitted(
        &self,
        client: &HubClient,
        repo_type: RepoType,
        repo_id: &RepoId,
        revision: &str,
    ) -> Result<Option<(CommitInfo, Vec<CommitInfo>)>, HubError> {
        let mut history = client
            .list_commits_until(repo_type, repo_id, revision, |c| self.admits(&c.date))
            .await?;
        match history.pop() {
            Some(last) if self.admits(&last.date) => Ok(Some((last, history))),
            _ => Ok(None),
        }
    }

    /// The record of what the cut-off held back of `repo_id` at `chosen`:
    /// `locked` instead of the newer commits `skipped` (newest first).
    pub fn held_back(
        &self,
        repo_id: &RepoId,
        chosen: &str,
        locked: CommitInfo,
        skipped: &[CommitInfo],
    ) -> Option<HeldBack> {
        let newest = skipped.first()?.clone();
        let until = self.span().and_then(|span| {
            let date = newest.date.parse::<Timestamp>().ok()?;
            Some(
                date.to_zoned(TimeZone::UTC)
                    .checked_add(span)
                    .ok()?
                    .timestamp(),
            )
        });
        Some(HeldBack {
            repo_id: repo_id.to_string(),
            chosen: chosen.to_owned(),
            locked,
            newest,
            skipped: skipped.len(),
            cutoff: self.cutoff,
            setting: self.describe(),
            until: until.map(truncate),
        })
    }
}

/// A resolution the cooldown changed: the commit locked instead of the
/// newer ones of the same branch or tag range.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HeldBack {
    /// The repository.
    pub repo_id: String,
    /// The branch or tag resolved (`v1`, `v0.2.0`).
    pub chosen: String,
    /// The commit locked.
    pub locked: CommitInfo,
    /// The newest commit (or tag's commit) held back.
    pub newest: CommitInfo,
    /// How many commits (or tags) were held back.
    pub skipped: usize,
    /// The cut-off.
    #[serde(serialize_with = "as_text")]
    pub cutoff: Timestamp,
    /// The setting, as [`Cooldown::describe`] names it.
    pub setting: String,
    /// When the newest held-back commit leaves the cooldown (a span's cut-off
    /// moves with time; a fixed one does not: `None`).
    #[serde(serialize_with = "as_text_opt")]
    pub until: Option<Timestamp>,
}

fn as_text<S: serde::Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(t)
}

fn as_text_opt<S: serde::Serializer>(t: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.collect_str(t),
        None => s.serialize_none(),
    }
}

impl fmt::Display for HeldBack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (n, s) = (self.skipped, if self.skipped == 1 { "" } else { "s" });
        write!(
            f,
            "{} {}: locked {} of {}; the cooldown ({}, cut-off {}) holds back {n} newer commit{s}, the newest {} of {}",
            self.repo_id,
            self.chosen,
            self.locked.id.short(),
            self.locked.date,
            self.setting,
            self.cutoff,
            self.newest.id.short(),
            self.newest.date,
        )?;
        match self.until {
            Some(until) => write!(f, " (until {until})"),
            None => write!(f, " (until the cut-off moves past it)"),
        }
    }
}

/// `text` (a `pyproject.toml`) with `[tool.kernels] exclude-newer-cutoff` set
/// to `cutoff`, or removed for `None`; every other byte is kept. `None` when
/// the file already says so (or is not TOML, which the manifest reader
/// reports first).
pub fn record(text: &str, cutoff: Option<Timestamp>) -> Option<String> {
    let mut doc = text.parse::<DocumentMut>().ok()?;
    let kernels = doc
        .get_mut("tool")
        .and_then(|t| t.get_mut("kernels"))
        .and_then(toml_edit::Item::as_table_like_mut)?;
    let current = kernels.get(CUTOFF_KEY).and_then(|i| i.as_str());
    let wanted = cutoff.map(|t| t.to_string());
    if current == wanted.as_deref() {
        return None;
    }
    match wanted {
        Some(value) => {
            kernels.insert(CUTOFF_KEY, toml_edit::value(value));
        }
        None => {
            kernels.remove(CUTOFF_KEY);
        }
    }
    Some(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn parses_instants_dates_and_spans() {
        assert_eq!(
            ExcludeNewer::parse("2026-11-25T10:00:00Z").unwrap(),
            ExcludeNewer::Instant(ts("2026-11-25T10:00:00Z"))
        );
        assert_eq!(
            ExcludeNewer::parse("2026-11-25").unwrap(),
            ExcludeNewer::Instant(ts("2026-11-25T00:00:00Z"))
        );
        let now = ts("2026-12-02T10:30:15.5Z");
        for text in ["7 days", "1 week", "P7D", "7d"] {
            let value = ExcludeNewer::parse(text).unwrap();
            assert_eq!(value.at(now).unwrap(), ts("2026-11-25T10:30:15Z"), "{text}");
        }
        for bad in ["soon", "-7 days", "0 days", ""] {
            assert!(ExcludeNewer::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_check_uses_the_recorded_instant_of_a_span() {
        let now = ts("2026-12-02T00:00:00Z");
        let settings = CooldownSettings {
            exclude_newer: ExcludeNewer::parse("7 days").ok(),
            exempt: Vec::new(),
            recorded: Some(ts("2026-11-20T00:00:00Z")),
        };
        let at = |flag: Option<&ExcludeNewer>, purpose| {
            settings
                .in_force(flag, purpose, now)
                .unwrap()
                .unwrap()
                .cutoff
        };
        assert_eq!(at(None, Use::Lock), ts("2026-11-25T00:00:00Z"));
        assert_eq!(at(None, Use::Check), ts("2026-11-20T00:00:00Z"));
        let flag = ExcludeNewer::parse("2026-01-01").unwrap();
        assert_eq!(at(Some(&flag), Use::Check), ts("2026-01-01T00:00:00Z"));
        let none = CooldownSettings::default();
        assert_eq!(none.in_force(None, Use::Lock, now).unwrap(), None);
    }

    #[test]
    fn records_and_removes_the_cutoff_keeping_comments() {
        let text = "[tool.kernels] # settings\nexclude-newer = \"7 days\" # a week\n\n[tool.kernels.dependencies]\n\"a/b\" = 1\n";
        let written = record(text, Some(ts("2026-11-25T10:00:00Z"))).unwrap();
        assert_eq!(
            written,
            "[tool.kernels] # settings\nexclude-newer = \"7 days\" # a week\nexclude-newer-cutoff = \"2026-11-25T10:00:00Z\"\n\n[tool.kernels.dependencies]\n\"a/b\" = 1\n"
        );
        assert_eq!(record(&written, Some(ts("2026-11-25T10:00:00Z"))), None);
        assert_eq!(record(&written, None).unwrap(), text);
        assert_eq!(record(text, None), None);
    }
}
