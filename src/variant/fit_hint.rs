//! What would fit when no build variant of a kernel suits the environment: the
//! torch versions (and backend versions) the kernel has builds for with the
//! environment's backend, CPU and OS, so that the hint names an upgrade or a
//! version that exists rather than a flag that loads nothing.

use std::collections::BTreeSet;

use kernels_types::repo_id::RepoId;
use kernels_types::variant_name::{BuildVariant, Framework, MinorVersion};

use super::TorchEnv;

/// The help of [`super::VariantError::NoCompatible`] for `env`: which torch
/// versions `available` has builds for on the environment's backend family,
/// CPU and OS, and what to do (upgrade or downgrade torch into that range, or
/// lock another version of the kernel, as `kernels variants --all-versions`
/// shows them).
pub(crate) fn no_fit_help(env: &TorchEnv, repo_id: &RepoId, available: &[String]) -> String {
    let torch = MinorVersion::new(env.major, env.minor);
    let backend = env.backend();
    let (cpu, os) = (env.cpu(), env.os());
    let builds: Vec<(MinorVersion, String)> = available
        .iter()
        .filter_map(|name| {
            let variant = BuildVariant::parse(name);
            let arch = variant.arch()?;
            let torch_build = matches!(
                arch.framework,
                Framework::Torch(_) | Framework::TorchStableAbi(_)
            );
            let here = arch.backend.family() == backend.family()
                && arch.cpu.as_str() == cpu
                && arch.os.as_str() == os;
            (torch_build && here).then(|| (arch.framework.version(), arch.backend.to_string()))
        })
        .collect();
    let versions: BTreeSet<MinorVersion> = builds.iter().map(|(v, _)| *v).collect();
    let list = versions
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let platform = format!("{} on {cpu}-{os}", backend.family());
    let other = format!(
        "lock a version of `{repo_id}` that has one: `kernels variants {repo_id} --all-versions` shows each version's variants and which of them this environment loads; write that version as its requirement in pyproject.toml and run `kernels lock -P {repo_id}`"
    );
    match (versions.first(), versions.last()) {
        (Some(low), _) if *low > torch => format!(
            "builds exist for torch ≥ {low} here ({platform}: torch {list}): upgrade torch to {low} or newer, or {other}"
        ),
        (_, Some(high)) if *high < torch => format!(
            "builds exist for torch ≤ {high} here ({platform}: torch {list}), not for torch {torch}: use torch {high}, or {other}"
        ),
        (Some(_), Some(_)) => {
            let same: BTreeSet<&str> = builds
                .iter()
                .filter(|(v, _)| *v == torch)
                .map(|(_, b)| b.as_str())
                .collect();
            let same: Vec<&str> = same.into_iter().collect();
            if same.is_empty() {
                format!(
                    "builds exist for torch {list} here ({platform}), none for torch {torch}: use one of those, or {other}"
                )
            } else {
                format!(
                    "the builds for torch {torch} here ({platform}) need {}, and this torch has {backend}: install a torch built for one of them, or {other}",
                    same.join(", ")
                )
            }
        }
        _ => format!("this commit has no {platform} build for torch: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::variant::testing::env;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn names_the_range_that_exists() {
        let repo: RepoId = "acme/relu".parse().unwrap();
        let torch27 = env(Some("12.8"), "Linux", "x86_64");
        let newer = names(&[
            "torch210-cxx11-cu128-x86_64-linux",
            "torch211-cxx11-cu128-x86_64-linux",
            "torch211-cxx11-cu128-aarch64-linux",
        ]);
        let help = no_fit_help(&torch27, &repo, &newer);
        assert!(
            help.starts_with(
                "builds exist for torch ≥ 2.10 here (cuda on x86_64-linux: torch 2.10, 2.11): upgrade torch to 2.10 or newer"
            ),
            "{help}"
        );
        let older = names(&["torch25-cxx11-cu124-x86_64-linux"]);
        assert!(no_fit_help(&torch27, &repo, &older).starts_with("builds exist for torch ≤ 2.5"));
        let cuda = names(&["torch27-cxx11-cu118-x86_64-linux"]);
        let help = no_fit_help(&torch27, &repo, &cuda);
        assert!(
            help.contains("need cu118, and this torch has cu128"),
            "{help}"
        );
        let metal = names(&["torch27-metal-aarch64-darwin"]);
        let help = no_fit_help(&torch27, &repo, &metal);
        assert!(
            help.starts_with("this commit has no cuda on x86_64-linux build"),
            "{help}"
        );
    }
}
