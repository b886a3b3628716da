//! Writing what a plan resolved: `kernels.lock` (unless unchanged or a dry
//! run), the cut-off recorded in `pyproject.toml`, the status lines and the
//! JSON document of `kernels lock`.

use super::LockRequest;
use super::plan::Plan;
use std::path::Path;
use std::process::ExitCode;

use kernels_cache::atomic::write_atomic;

use crate::cli::args::OutputFormat;
use crate::cli::json::{LockDoc, LockedEntryDoc};
use crate::cli::printer::Printer;
use crate::lock::conflict;
use crate::lock::cooldown::Cooldown;
use crate::lock::format::LockFormat;
use crate::lock::freshness::LockOnDisk;
use crate::lock::profile::Profile;
use crate::lock::sticky::Change;

/// Prints what `plan` resolved and writes it (unless the bytes are unchanged
/// or `--dry-run`); with `--format json`, the document.
pub(super) fn write_plan(
    request: &LockRequest,
    printer: &Printer,
    plan: &Plan,
    merged: Option<&conflict::Merged>,
    on_disk: &LockOnDisk,
) -> miette::Result<ExitCode> {
    let lock_path = on_disk.path();
    let resolved = Resolved {
        lock_path,
        outcome: &plan.outcome,
        profile: &plan.profile,
        changes: &plan.changes,
        kept: &plan.kept,
    };
    if !printer.is_quiet() {
        print_status(printer, &resolved, merged, plan)?;
    }
    let unchanged = on_disk.text() == Some(plan.json.as_str());
    if unchanged {
        printer.status(format_args!("{} is up to date", lock_path.display()));
    } else if request.dry_run {
        printer.status(format_args!(
            "Dry run: {} was not written",
            lock_path.display()
        ));
    } else {
        write_atomic(lock_path, plan.json.as_bytes()).map_err(|err| {
            miette::miette!(
                code = "kernels::lock::write",
                help = "check that the project directory is writable",
                "cannot write {}: {err}",
                lock_path.display()
            )
        })?;
        printer.status(format_args!("Wrote {}", lock_path.display()));
    }
    if !request.dry_run {
        record_cutoff(&request.project_dir, printer, plan, !unchanged)?;
    }
    if request.format == OutputFormat::Json {
        print_json(
            printer,
            &resolved,
            plan,
            !unchanged && !request.dry_run,
            request.dry_run,
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Records the cut-off a lock was resolved under in `pyproject.toml`
/// (`[tool.kernels] exclude-newer-cutoff`), so that `kernels lock --check`
/// and teammates use the same instant: when the lock was `written`, the
/// cut-off of this run (removed without one, or for a fixed `exclude-newer`);
/// when it was not, only a missing record is added.
fn record_cutoff(
    project_dir: &Path,
    printer: &Printer,
    plan: &Plan,
    written: bool,
) -> miette::Result<()> {
    let wanted = plan.cooldown.as_ref().and_then(Cooldown::to_record);
    let path = project_dir.join(crate::lock::manifest::MANIFEST_FILE_NAME);
    let text = fs_err::read_to_string(&path).map_err(|err| miette::miette!("{err}"))?;
    let recorded =
        crate::lock::manifest::ToolSettings::read(project_dir)?.and_then(|t| t.cooldown.recorded);
    if !written && (recorded.is_some() || wanted.is_none()) {
        return Ok(());
    }
    let Some(edited) = crate::lock::cooldown::record(&text, wanted) else {
        return Ok(());
    };
    write_atomic(&path, edited.as_bytes()).map_err(|err| {
        miette::miette!(
            code = "kernels::lock::write",
            help = "check that the project directory is writable",
            "cannot write {}: {err}",
            path.display()
        )
    })?;
    match wanted {
        Some(cutoff) => printer.status(format_args!(
            "Recorded the cut-off {cutoff} in {} ({})",
            path.display(),
            crate::lock::cooldown::CUTOFF_KEY
        )),
        None => printer.status(format_args!(
            "Removed {} from {}",
            crate::lock::cooldown::CUTOFF_KEY,
            path.display()
        )),
    }
    Ok(())
}

/// What one `kernels lock` run resolved, for its status lines and JSON.
struct Resolved<'a> {
    lock_path: &'a Path,
    outcome: &'a crate::lock::project::LockOutcome,
    profile: &'a Profile,
    changes: &'a [Change],
    kept: &'a [String],
}

/// The status lines of a `kernels lock` that resolved: conflict repair,
/// warnings, `Resolved N kernels in …`, what changed (or, without a previous
/// lock, what was locked) and a change of lock format.
fn print_status(
    printer: &Printer,
    resolved: &Resolved<'_>,
    merged: Option<&conflict::Merged>,
    plan: &Plan,
) -> miette::Result<()> {
    let (old_format, had_previous, elapsed) = (plan.old_format, plan.had_previous, plan.elapsed);
    let Resolved {
        lock_path,
        outcome,
        profile,
        changes,
        kept,
    } = resolved;
    if let Some(merged) = merged {
        printer.status(format_args!(
            "{} had merge conflicts in {}; kept the {} entries both sides agree on and resolved the rest again",
            lock_path.display(),
            if merged.conflicting.is_empty() {
                "no entry".to_owned()
            } else {
                merged.conflicting.join(", ")
            },
            kept.len()
        ));
    }
    print_remarks(printer, resolved, plan);
    crate::cli::project::fit::lock::print_outcome(printer, &outcome.fit, &plan.targets);
    let count = outcome.lockfile.locked_kernels(lock_path)?.len();
    printer.status(format_args!(
        "Resolved {count} kernel{} in {:.2}s",
        if count == 1 { "" } else { "s" },
        elapsed.as_secs_f64()
    ));
    if had_previous {
        for change in *changes {
            printer.status(format_args!("{change}"));
        }
    } else {
        for line in &outcome.locked {
            printer.status(format_args!("{line}"));
        }
    }
    if let Some(old_format) = old_format
        && old_format != profile.lock_format
        && merged.is_none()
    {
        printer.status(format_args!(
            "warning: {} was in the {} format; it is rewritten in the {} format",
            lock_path.display(),
            old_format.name(),
            profile.lock_format.name()
        ));
    }
    Ok(())
}

/// The resolver's warnings and held-back notes of a `kernels lock` that
/// resolved. A lock that stays as it is (same entries, same format) repeats
/// no remark about the requirements: the run that wrote it said them.
fn print_remarks(printer: &Printer, resolved: &Resolved<'_>, plan: &Plan) {
    let Resolved {
        lock_path,
        outcome,
        profile,
        changes,
        ..
    } = resolved;
    let unchanged =
        plan.had_previous && changes.is_empty() && plan.old_format == Some(profile.lock_format);
    let said_before: Vec<String> = match lock_path
        .parent()
        .map(crate::lock::manifest::Manifest::read)
    {
        Some(Ok(manifest)) if unchanged => {
            crate::lock::support::check_requirements(profile, &manifest)
                .map(|w| w.iter().map(|w| w.head()).collect())
                .unwrap_or_default()
        }
        _ => Vec::new(),
    };
    // A remark is known by its head: the form it suggests was checked
    // against the Hub when the lock was resolved.
    let fresh: Vec<&String> = outcome
        .warnings
        .iter()
        .filter(|w| !said_before.iter().any(|head| w.starts_with(head.as_str())))
        .collect();
    for warning in grouped_by_subject(&fresh) {
        printer.status(format_args!("warning: {warning}"));
    }
    for held_back in &outcome.held_back {
        printer.status(format_args!("note: {held_back}"));
    }
}

/// `--format json`: what was locked and what changed, as one document on stdout.
fn print_json(
    printer: &Printer,
    resolved: &Resolved<'_>,
    plan: &Plan,
    written: bool,
    dry_run: bool,
) -> miette::Result<()> {
    let (old_format, had_previous) = (plan.old_format, plan.had_previous);
    let Resolved {
        lock_path,
        outcome,
        profile,
        changes,
        kept,
    } = resolved;
    let kernels: Vec<LockedEntryDoc> = outcome
        .lockfile
        .locked_kernels(lock_path)?
        .iter()
        .map(|kernel| LockedEntryDoc {
            repo_id: kernel.repo_id.to_string(),
            commit: kernel.commit.clone(),
            variants: kernel
                .variants
                .as_ref()
                .map(|v| v.keys().map(ToString::to_string).collect()),
        })
        .collect();
    // As text mode: with a previous lock in this format, only the entries
    // that change (an entry resolved again to the same commit is not news).
    let locked: Vec<&crate::lock::project::Locked> = outcome
        .locked
        .iter()
        .filter(|l| {
            !had_previous
                || changes.iter().any(|c| match c {
                    Change::Added { repo_id, .. } | Change::Updated { repo_id, .. } => {
                        *repo_id == l.repo_id
                    }
                    Change::Removed { .. } => false,
                })
        })
        .collect();
    printer.json_line(&LockDoc {
        schema: LockDoc::SCHEMA,
        command: "lock",
        lock_file: lock_path.display().to_string(),
        format: Some(profile.lock_format.id()),
        previous_format: old_format.map(LockFormat::id),
        written,
        dry_run,
        changes,
        kernels,
        locked,
        warnings: &outcome.warnings,
        kept,
        error: None,
        failed: Vec::new(),
        fit: outcome
            .fit
            .iter()
            .map(crate::cli::json::FitFindingDoc::new)
            .collect(),
    });
    Ok(())
}

/// The subject of a remark that starts with one: `` `org/name` `` of
/// `` `org/name`: … ``.
fn subject(remark: &str) -> Option<&str> {
    let rest = remark.strip_prefix('`')?;
    let end = rest.find('`')?;
    rest[end + 1..].starts_with(':').then(|| &rest[..end])
}

/// Remarks that say the same of several subjects (the text equal once each
/// subject is taken out) as one: the first in full, then `(the same for
/// `b`, `c`)`; others as they are, in their order.
fn grouped_by_subject(remarks: &[&String]) -> Vec<String> {
    let mut groups: Vec<(String, String, Vec<&str>)> = Vec::new();
    for remark in remarks {
        let Some(name) = subject(remark) else {
            groups.push((String::new(), (*remark).clone(), Vec::new()));
            continue;
        };
        let shape = remark.replace(name, "\u{0}");
        match groups
            .iter_mut()
            .find(|(s, _, _)| !s.is_empty() && *s == shape)
        {
            Some((_, _, others)) => others.push(name),
            None => groups.push((shape, (*remark).clone(), Vec::new())),
        }
    }
    groups
        .into_iter()
        .map(|(_, first, others)| {
            if others.is_empty() {
                return first;
            }
            let list: Vec<String> = others.iter().map(|n| format!("`{n}`")).collect();
            format!("{first} (the same for {})", list.join(", "))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::grouped_by_subject;

    #[test]
    fn remarks_of_the_same_shape_are_said_once() {
        let remarks = [
            "`a/x`: no `vN` branch in `a/x`: keep it".to_owned(),
            "plain remark".to_owned(),
            "`b/y`: no `vN` branch in `b/y`: keep it".to_owned(),
            "`c/z`: something else".to_owned(),
        ];
        let refs: Vec<&String> = remarks.iter().collect();
        assert_eq!(
            grouped_by_subject(&refs),
            [
                "`a/x`: no `vN` branch in `a/x`: keep it (the same for `b/y`)",
                "plain remark",
                "`c/z`: something else",
            ]
        );
    }
}
