//! The remote: the repository, the surface and the GitHub API worked out
//! from the URL git resolves for a push (what that URL names is the core's
//! one rule, `maverick_core::remote`), `-R`, and gh's `GH_REPO`/`GH_HOST`.

use super::*;
use crate::git::Git;

use maverick_core::remote::{github_repo, valid_repo, GithubHost, GITHUB_COM};

/// `maverick.repo`: `OWNER/NAME`.
pub(super) fn repo_key(key: &'static str, text: &str) -> Result<Option<String>, ConfigError> {
    if valid_repo(text) {
        Ok(Some(text.to_owned()))
    } else {
        Err(ConfigError::Invalid {
            key,
            value: text.to_owned(),
            expected: "OWNER/NAME",
        })
    }
}

/// The URL a push to `remote` goes to, as git resolves it (`pushurl`,
/// `insteadOf` and `pushInsteadOf` applied): the surface and the repository
/// are chosen from the URL every push uses (SPEC 2), never from the raw
/// `remote.<name>.url`. `None` when the remote is not configured.
pub(super) fn push_url(git: &Git, remote: &str) -> Result<Option<String>, ConfigError> {
    match git.push_url(remote) {
        Ok(url) => Ok(Some(url)),
        Err(_) if git.config_get(&format!("remote.{remote}.url"))?.is_none() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// What the settings that have no value of their own are worked out from.
pub(super) struct Implied<'a> {
    /// `-R/--repo`, parsed: its host (if it names one) and `OWNER/NAME`.
    pub(super) flag_repo: Option<(Option<String>, String)>,
    pub(super) gh: &'a GhEnv,
    pub(super) keys: &'a ConfigKeys,
    pub(super) remote: &'a str,
    pub(super) remote_url: Option<&'a str>,
}

impl Implied<'_> {
    /// The GitHub repository the remote's URL names, on github.com or
    /// `GH_HOST`.
    pub(super) fn repo_of_remote(&self) -> Option<String> {
        self.github_remote().map(|(_, repo)| repo)
    }

    /// The GitHub host the remote is on (github.com or `GH_HOST`) and the
    /// repository there: the host is where its API, and so its token, goes.
    pub(super) fn github_remote(&self) -> Option<(String, String)> {
        self.remote_url
            .and_then(|url| github_repo(url, self.gh.host.as_deref()))
    }

    /// The surface when nothing names one: GitHub when something names a
    /// GitHub repository or the remote is on GitHub, else git.
    pub(super) fn surface(&self) -> (SurfaceKind, Origin) {
        let github = |why: String| (SurfaceKind::Github, Origin::Derived(why));
        if self.flag_repo.is_some() {
            return github("-R/--repo names a GitHub repository".to_owned());
        }
        if self.gh.repo.is_some() {
            return github("GH_REPO names a GitHub repository".to_owned());
        }
        if self.keys.get("repo").is_some() {
            return github("maverick.repo names a GitHub repository".to_owned());
        }
        let remote = self.remote;
        match self.github_remote() {
            Some((host, _)) => github(format!("the remote {remote:?} is on {host}")),
            None => (
                SurfaceKind::Git,
                Origin::Derived(format!("the remote {remote:?} is not on GitHub")),
            ),
        }
    }

    /// `-R/--repo`, else `GH_REPO`: both beat `maverick.repo`.
    pub(super) fn repo_override(&self) -> Option<(Option<String>, Origin)> {
        if let Some((_, repo)) = &self.flag_repo {
            return Some((Some(repo.clone()), Origin::Flag("--repo")));
        }
        self.gh
            .repo
            .as_ref()
            .map(|(_, r)| (Some(r.clone()), Origin::Env("GH_REPO")))
    }

    /// The repository the remote's URL names.
    pub(super) fn repo(&self) -> (Option<String>, Origin) {
        let why = format!("the URL of the remote {:?}", self.remote);
        (self.repo_of_remote(), Origin::Derived(why))
    }

    /// The API of the host `-R`, `GH_REPO` or the remote names, else
    /// `GH_HOST`'s, else github.com's ([`host_of_names`]).
    pub(super) fn api_url(&self) -> (String, Origin) {
        let (host, origin) = self.host();
        (
            GithubHost::api_url(host.as_deref().unwrap_or(GITHUB_COM)),
            origin,
        )
    }

    /// The host `-R`, `GH_REPO` or the remote names, else `GH_HOST`
    /// ([`host_of_names`]); `None` for github.com by default.
    pub(super) fn host(&self) -> (Option<String>, Origin) {
        let flag_host = self
            .flag_repo
            .as_ref()
            .and_then(|(host, _)| host.as_deref());
        let remote = self.github_remote();
        let remote_host = remote.as_ref().map(|(host, _)| host.as_str());
        let (host, origin) = host_of_names(flag_host, self.gh, remote_host, self.remote);
        (host.map(str::to_owned), origin)
    }
}

/// gh's own variables, read as gh reads them: `GH_REPO` is `[HOST/]OWNER/NAME`
/// (as `-R`), `GH_HOST` the GitHub host when nothing else names one.
#[derive(Debug, Default)]
pub(super) struct GhEnv {
    pub(super) repo: Option<(Option<String>, String)>,
    pub(super) host: Option<String>,
}

impl GhEnv {
    pub(super) fn read() -> Result<GhEnv, ConfigError> {
        let var = |name| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let repo = match var("GH_REPO") {
            Some(text) => Some(parse_repo(text.trim()).ok_or(ConfigError::BadGhRepo(text))?),
            None => None,
        };
        let host = var("GH_HOST").map(|h| GithubHost::normalise(&h));
        Ok(GhEnv { repo, host })
    }
}

/// The API a repository's requests (and its token) go to when no URL is
/// set, from the host that names it: `-R HOST/…`, then `GH_REPO`'s host,
/// then the host the remote is on, and `GH_HOST` only when none names one
/// (gh's own order: `GH_HOST` never moves a repository whose remote says
/// where it lives).
pub(super) fn host_of_names<'a>(
    flag_host: Option<&'a str>,
    gh: &'a GhEnv,
    remote_host: Option<&'a str>,
    remote: &str,
) -> (Option<&'a str>, Origin) {
    let gh_repo_host = gh.repo.as_ref().and_then(|(host, _)| host.as_deref());
    let (host, origin) = if let Some(host) = flag_host {
        (host, Origin::Flag("--repo"))
    } else if let Some(host) = gh_repo_host {
        (host, Origin::Derived("the host GH_REPO names".to_owned()))
    } else if let Some(host) = remote_host.filter(|&h| {
        gh.host
            .as_deref()
            .is_some_and(|g| !GithubHost::same_host(g, h))
    }) {
        let why = format!("the remote {remote:?} is on {host}");
        (host, Origin::Derived(why))
    } else if let Some(host) = gh.host.as_deref() {
        (host, Origin::Env("GH_HOST"))
    } else {
        return (None, Origin::Default);
    };
    (Some(host), origin)
}

/// `OWNER/NAME` or `HOST/OWNER/NAME`: the host (if any, in its normal form,
/// so `www.github.com` is github.com) and `OWNER/NAME`.
pub(super) fn parse_repo(text: &str) -> Option<(Option<String>, String)> {
    if valid_repo(text) {
        return Some((None, text.to_owned()));
    }
    let (host, repo) = text.split_once('/')?;
    (valid_host(host) && valid_repo(repo))
        .then(|| (Some(GithubHost::normalise(host)), repo.to_owned()))
}

pub(super) fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | ':'))
}
