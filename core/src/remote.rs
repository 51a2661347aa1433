//! What a remote URL names, judged once (SPEC 1, 2 and 8): whether it is a
//! network repository (its host and path) or a local one (its path), and
//! whether it is a GitHub repository (its host and `OWNER/NAME`).
//!
//! The URL given is the one git resolves for a push (`git remote get-url
//! --push`, with `insteadOf` and `pushInsteadOf` applied), so the surface a
//! clone coordinates on and the repository the pre-push hook guards are the
//! ones its pushes reach, however the remote is spelled. Resolving a local
//! path (symlinks, the current directory) is I/O and stays with the caller.

/// Where a remote URL points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A network repository: the host (no user, no port) in its normal form
    /// ([`GithubHost::normalise`]: lowercase, any `*.github.com` is
    /// github.com) and the path without slashes at either end, a leading
    /// `~/` or a `.git`.
    Network { host: String, path: String },
    /// A local repository: the path as written (`file://` taken off).
    Local { path: String },
}

impl Location {
    /// `host/path` for a network repository, `None` for a local one.
    pub fn network_name(&self) -> Option<String> {
        match self {
            Location::Network { host, path } => Some(format!("{host}/{path}")),
            Location::Local { .. } => None,
        }
    }
}

/// Where `url` points: `scheme://[user@]host[:port]/path`, git's scp-like
/// `[user@]host:path`, `file://PATH`, or a plain path.
pub fn locate(url: &str) -> Location {
    let url = url.trim();
    if let Some((scheme, rest)) = url.split_once("://") {
        if scheme.eq_ignore_ascii_case("file") {
            // file:///path and file://localhost/path
            let path = rest.strip_prefix("localhost").unwrap_or(rest);
            return Location::Local {
                path: path.to_owned(),
            };
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        return network(authority, path);
    }
    // scp-like `[user@]host:path`: a colon before any slash, and not a
    // Windows drive letter (git's own rule in `url_is_local_not_ssh`).
    if let Some((host, path)) = url.split_once(':') {
        let drive = host.len() == 1 && host.chars().all(|c| c.is_ascii_alphabetic());
        if !host.contains('/') && !host.is_empty() && !drive {
            return network(host, path);
        }
    }
    Location::Local {
        path: url.to_owned(),
    }
}

fn network(authority: &str, path: &str) -> Location {
    let host = authority.rsplit('@').next().unwrap_or(authority);
    let host = match host.strip_prefix('[') {
        // [::1]:22
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => host.split(':').next().unwrap_or(host),
    };
    // GitHub serves its repositories under www. and ssh. too: one host.
    let host = GithubHost::normalise(host);
    let path = path.trim_matches('/');
    let path = path.strip_prefix("~/").unwrap_or(path);
    Location::Network {
        host,
        path: strip_git(path).to_owned(),
    }
}

/// A path without trailing slashes and a `.git` suffix.
pub fn strip_git(path: &str) -> &str {
    let path = path.trim_end_matches('/');
    path.strip_suffix(".git").unwrap_or(path)
}

/// The GitHub repository `url` names: its host (github.com, or `gh_host`,
/// gh's `GH_HOST` for GitHub Enterprise, whose port is ignored) and its
/// `OWNER/NAME`. `None` for any other host, a local path, or a path that is
/// not `OWNER/NAME`. The host is where the repository's API, and so its
/// token, goes.
pub fn github_repo(url: &str, gh_host: Option<&str>) -> Option<(String, String)> {
    let Location::Network { host, path } = locate(url) else {
        return None;
    };
    let named = gh_host.is_some_and(|h| GithubHost::same_host(h, &host));
    (GithubHost::of(&host) == GithubHost::Dotcom || named)
        .then_some(())
        .filter(|()| valid_repo(&path))
        .map(|()| (host, path))
}

/// `OWNER/NAME` as GitHub allows it: two parts of letters, digits, `-`,
/// `_` and `.`, neither `.` nor `..`.
pub fn valid_repo(repo: &str) -> bool {
    let ok = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    matches!(repo.split_once('/'), Some((owner, name)) if ok(owner) && ok(name))
}

/// Which GitHub a host is, gh's rule: it decides where the host's API is
/// and which environment variables hold its token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GithubHost {
    /// github.com.
    Dotcom,
    /// A GHE.com data-residency tenant, `TENANT.ghe.com`.
    Tenancy,
    /// `github.localhost`, GitHub's own development host.
    Localhost,
    /// GitHub Enterprise Server: any other host.
    EnterpriseServer,
}

/// github.com, the host every `*.github.com` is.
pub const GITHUB_COM: &str = "github.com";

const LOCALHOST: &str = "github.localhost";
const TENANCY: &str = "ghe.com";

impl GithubHost {
    /// The normal form of a GitHub host, however it was spelled (`-R
    /// HOST/OWNER/NAME`, `GH_REPO`, `GH_HOST`, a remote URL): the one form
    /// every comparison, API URL and token lookup is made on.
    ///
    /// gh's rule, followed as gh (go-gh v2 `auth.NormalizeHostname`, which
    /// gh's `ghinstance` calls) writes it: lowercase; any subdomain of
    /// github.com (`www.github.com`, `api.github.com`, `ssh.github.com`) is
    /// github.com; any subdomain of `github.localhost` is
    /// `github.localhost`; a subdomain of a GHE.com tenant
    /// (`api.acme.ghe.com`) is the tenant (`acme.ghe.com`); any other host
    /// is itself. A subdomain is a suffix after a dot: `evilgithub.com` and
    /// `github.com.example.net` are not github.com, so its token never goes
    /// there. Beyond gh, which takes no port in a host: surrounding blanks
    /// are trimmed and a `:PORT` is kept, except on github.com, whose API
    /// has one address whatever port a host was written with. (gh also
    /// sends `garage.github.com`, GitHub's own staging host, to its own
    /// API; that host is not a user's and is not followed.)
    pub fn normalise(host: &str) -> String {
        let host = host.trim().to_ascii_lowercase();
        let (name, port) = match host.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host.as_str(), None),
        };
        let subdomain_of = |parent: &str| {
            name.strip_suffix(parent)
                .is_some_and(|sub| sub.is_empty() || sub.ends_with('.'))
        };
        let name = if subdomain_of(GITHUB_COM) {
            return GITHUB_COM.to_owned();
        } else if subdomain_of(LOCALHOST) {
            LOCALHOST.to_owned()
        } else if let Some(sub) = name
            .strip_suffix(TENANCY)
            .and_then(|sub| sub.strip_suffix('.'))
            .filter(|sub| !sub.is_empty())
        {
            let tenant = sub.rsplit('.').next().unwrap_or(sub);
            format!("{tenant}.{TENANCY}")
        } else {
            return host;
        };
        match port {
            Some(port) => format!("{name}:{port}"),
            None => name,
        }
    }

    /// Whether `a` and `b` are one GitHub host, in their normal form and
    /// ports aside (a remote's URL names git's port, `GH_HOST` the web's).
    pub fn same_host(a: &str, b: &str) -> bool {
        let name = |h: &str| {
            let h = GithubHost::normalise(h);
            h.split(':').next().unwrap_or_default().to_owned()
        };
        name(a) == name(b)
    }

    /// The kind of `host`, in any spelling ([`GithubHost::normalise`]).
    pub fn of(host: &str) -> GithubHost {
        let host = GithubHost::normalise(host);
        let name = host.split(':').next().unwrap_or_default();
        match name {
            GITHUB_COM => GithubHost::Dotcom,
            LOCALHOST => GithubHost::Localhost,
            _ if name.ends_with(&format!(".{TENANCY}")) => GithubHost::Tenancy,
            _ => GithubHost::EnterpriseServer,
        }
    }

    /// The REST API base URL of `host` (any spelling) when nothing sets
    /// one: `https://api.github.com`, `https://api.TENANT.ghe.com`, else
    /// `https://HOST/api/v3` (Enterprise Server, port kept).
    pub fn api_url(host: &str) -> String {
        let host = GithubHost::normalise(host);
        match GithubHost::of(&host) {
            GithubHost::Dotcom => "https://api.github.com".to_owned(),
            GithubHost::Tenancy => format!("https://api.{host}"),
            GithubHost::Localhost | GithubHost::EnterpriseServer => {
                format!("https://{host}/api/v3")
            }
        }
    }

    /// The variables that hold a token for this host, in gh's order: an
    /// Enterprise Server host reads `GH_ENTERPRISE_TOKEN` and
    /// `GITHUB_ENTERPRISE_TOKEN` (a github.com token is never sent there),
    /// every other host `GH_TOKEN` and `GITHUB_TOKEN`.
    pub fn token_vars(self) -> [&'static str; 2] {
        match self {
            GithubHost::EnterpriseServer => ["GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"],
            GithubHost::Dotcom | GithubHost::Tenancy | GithubHost::Localhost => {
                ["GH_TOKEN", "GITHUB_TOKEN"]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_spellings_of_one_repository() {
        let want = "github.com/acme/widgets";
        for url in [
            "https://github.com/acme/widgets",
            "https://github.com/acme/widgets.git",
            "https://github.com/acme/widgets/",
            "https://user:token@GitHub.com/acme/widgets.git/",
            "https://www.github.com/acme/widgets",
            "ssh://git@github.com/acme/widgets.git",
            "ssh://git@github.com:22/acme/widgets",
            "git@github.com:acme/widgets.git",
            "github.com:acme/widgets",
            "git://github.com/acme/widgets",
        ] {
            assert_eq!(locate(url).network_name().as_deref(), Some(want), "{url}");
            assert_eq!(
                github_repo(url, None),
                Some(("github.com".to_owned(), "acme/widgets".to_owned())),
                "{url}"
            );
        }
        assert_eq!(
            locate("ssh://git@[::1]:22/~/srv/widgets.git").network_name(),
            Some("::1/srv/widgets".to_owned())
        );
    }

    #[test]
    fn local_paths_and_other_hosts_are_not_github() {
        for (url, path) in [
            ("/srv/widgets.git", "/srv/widgets.git"),
            ("../origin.git", "../origin.git"),
            ("file:///srv/widgets.git", "/srv/widgets.git"),
            ("file://localhost/srv/w", "/srv/w"),
            ("C:/repos/widgets", "C:/repos/widgets"),
        ] {
            assert_eq!(
                locate(url),
                Location::Local {
                    path: path.to_owned()
                },
                "{url}"
            );
            assert_eq!(github_repo(url, None), None, "{url}");
        }
        assert_eq!(github_repo("git@gitlab.com:acme/widgets.git", None), None);
        // An alias git never expanded names no host git maverick knows.
        assert_eq!(github_repo("gh:acme/widgets", None), None);
        assert_eq!(github_repo("https://github.com/acme", None), None);
        assert_eq!(github_repo("https://github.com/acme/w/x", None), None);
        assert_eq!(github_repo("https://github.com/../w", None), None);
    }

    #[test]
    fn a_gh_host_is_github_too() {
        let url = "https://ghe.example.com/acme/widgets.git";
        assert_eq!(github_repo(url, None), None);
        let want = Some(("ghe.example.com".to_owned(), "acme/widgets".to_owned()));
        assert_eq!(github_repo(url, Some("ghe.example.com")), want);
        assert_eq!(github_repo(url, Some("GHE.example.com:8443")), want);
    }

    #[test]
    fn repository_names() {
        assert!(valid_repo("acme/widgets"));
        assert!(valid_repo("a-b/c_d.e"));
        for bad in ["acme", "acme/", "/w", "acme/w/x", "./w", "acme/..", "a b/c"] {
            assert!(!valid_repo(bad), "{bad}");
        }
    }

    #[test]
    fn a_github_host_has_one_normal_form_as_in_gh() {
        for (host, normal) in [
            ("github.com", "github.com"),
            ("GitHub.com", "github.com"),
            (" github.com\n", "github.com"),
            // Every subdomain of github.com is github.com, at any depth.
            ("www.github.com", "github.com"),
            ("WWW.GitHub.COM", "github.com"),
            ("api.github.com", "github.com"),
            ("ssh.github.com", "github.com"),
            ("a.b.github.com", "github.com"),
            // github.com has one API, whatever port a host was written with.
            ("www.github.com:443", "github.com"),
            ("github.com:8443", "github.com"),
            // A suffix only after a dot: these are other hosts.
            ("evilgithub.com", "evilgithub.com"),
            ("github.com.example.net", "github.com.example.net"),
            ("github.community", "github.community"),
            ("api.github.localhost", "github.localhost"),
            ("github.localhost:3000", "github.localhost:3000"),
            // A tenant's subdomain is the tenant.
            ("Acme.GHE.com", "acme.ghe.com"),
            ("api.acme.ghe.com", "acme.ghe.com"),
            ("x.api.acme.ghe.com:8443", "acme.ghe.com:8443"),
            ("ghe.com", "ghe.com"),
            ("evilghe.com", "evilghe.com"),
            // Enterprise Server: lowercase, port kept.
            ("GHE.Example.com:8443", "ghe.example.com:8443"),
            ("www.ghe.example.com", "www.ghe.example.com"),
            ("::1", "::1"),
        ] {
            assert_eq!(GithubHost::normalise(host), normal, "{host:?}");
            // Normal already: normalising again changes nothing.
            assert_eq!(GithubHost::normalise(normal), normal, "{normal:?}");
        }
        assert!(GithubHost::same_host("www.github.com", "github.com"));
        assert!(GithubHost::same_host(
            "GHE.example.com:8443",
            "ghe.example.com"
        ));
        assert!(!GithubHost::same_host("evilgithub.com", "github.com"));
        assert!(!GithubHost::same_host("ghe.example.com", "github.com"));
    }

    #[test]
    fn a_remote_on_a_subdomain_of_github_com_is_on_github_com() {
        let want = Some(("github.com".to_owned(), "acme/widgets".to_owned()));
        // GitHub's ssh over the https port.
        let url = "ssh://git@ssh.github.com:443/acme/widgets.git";
        assert_eq!(github_repo(url, None), want);
        assert_eq!(
            github_repo("https://evilgithub.com/acme/widgets", None),
            None
        );
        // GH_HOST in any spelling names the remote's host.
        let url = "https://ghe.example.com/acme/widgets";
        assert!(github_repo(url, Some(" GHE.example.com ")).is_some());
        assert_eq!(github_repo(url, Some("www.github.com")), None);
    }

    #[test]
    fn github_hosts_follow_gh() {
        for (host, kind, api) in [
            ("github.com", GithubHost::Dotcom, "https://api.github.com"),
            ("GitHub.com", GithubHost::Dotcom, "https://api.github.com"),
            (
                "www.github.com",
                GithubHost::Dotcom,
                "https://api.github.com",
            ),
            (
                "api.github.com",
                GithubHost::Dotcom,
                "https://api.github.com",
            ),
            (
                "evilgithub.com",
                GithubHost::EnterpriseServer,
                "https://evilgithub.com/api/v3",
            ),
            (
                "api.acme.ghe.com",
                GithubHost::Tenancy,
                "https://api.acme.ghe.com",
            ),
            (
                "acme.ghe.com",
                GithubHost::Tenancy,
                "https://api.acme.ghe.com",
            ),
            (
                "Acme.GHE.com",
                GithubHost::Tenancy,
                "https://api.acme.ghe.com",
            ),
            (
                "github.localhost",
                GithubHost::Localhost,
                "https://github.localhost/api/v3",
            ),
            (
                "ghe.example.com",
                GithubHost::EnterpriseServer,
                "https://ghe.example.com/api/v3",
            ),
            (
                "ghe.example.com:8443",
                GithubHost::EnterpriseServer,
                "https://ghe.example.com:8443/api/v3",
            ),
            (
                "127.0.0.1",
                GithubHost::EnterpriseServer,
                "https://127.0.0.1/api/v3",
            ),
        ] {
            assert_eq!(GithubHost::of(host), kind, "{host}");
            assert_eq!(GithubHost::api_url(host), api, "{host}");
        }
        assert_eq!(
            GithubHost::EnterpriseServer.token_vars(),
            ["GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"]
        );
        for kind in [
            GithubHost::Dotcom,
            GithubHost::Tenancy,
            GithubHost::Localhost,
        ] {
            assert_eq!(kind.token_vars(), ["GH_TOKEN", "GITHUB_TOKEN"], "{kind:?}");
        }
    }
}
