//! The GitHub token: where it comes from (SPEC 1: `GH_TOKEN`, `GITHUB_TOKEN`,
//! `gh auth token`; for an Enterprise Server host, as gh reads them,
//! `GH_ENTERPRISE_TOKEN`, `GITHUB_ENTERPRISE_TOKEN` and `gh auth token
//! --hostname HOST`) and a type whose `Debug` never shows it.

use std::fmt;

use super::GithubError;

/// Where the token came from, for messages (never the token itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenSource {
    GhToken,
    GithubToken,
    GhEnterpriseToken,
    GithubEnterpriseToken,
    GhCli,
    Given,
}

impl fmt::Display for TokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TokenSource::GhToken => "GH_TOKEN",
            TokenSource::GithubToken => "GITHUB_TOKEN",
            TokenSource::GhEnterpriseToken => "GH_ENTERPRISE_TOKEN",
            TokenSource::GithubEnterpriseToken => "GITHUB_ENTERPRISE_TOKEN",
            TokenSource::GhCli => "`gh auth token`",
            TokenSource::Given => "the caller",
        })
    }
}

/// A GitHub token. `Debug` shows where it came from, never what it is.
#[derive(Clone)]
pub struct Token {
    pub(super) secret: String,
    pub(super) source: TokenSource,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token(<redacted>, from {})", self.source)
    }
}

impl Token {
    pub fn new(secret: &str, source: TokenSource) -> Result<Token, GithubError> {
        let secret = secret.trim();
        if secret.is_empty() {
            return Err(GithubError::NoToken);
        }
        // It goes into a header: visible ASCII only, or octocrab would panic.
        if !secret.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(GithubError::BadToken { origin: source });
        }
        Ok(Token {
            secret: secret.to_owned(),
            source,
        })
    }

    pub(crate) fn source(&self) -> TokenSource {
        self.source
    }
}

/// Whether gh counts `host` as GitHub Enterprise Server, whose tokens are
/// `GH_ENTERPRISE_TOKEN` and `GITHUB_ENTERPRISE_TOKEN`: any host but
/// github.com, a GHE.com tenant (`*.ghe.com`) and `github.localhost`.
fn is_enterprise(host: &str) -> bool {
    let host = host.split(':').next().unwrap_or(host).to_ascii_lowercase();
    !(host == "github.com" || host == "github.localhost" || host.ends_with(".ghe.com"))
}

/// SPEC 1, as gh reads tokens for `host` (the GitHub host the repository
/// is on): for github.com `GH_TOKEN`, else `GITHUB_TOKEN`; for an
/// Enterprise Server host `GH_ENTERPRISE_TOKEN`, else
/// `GITHUB_ENTERPRISE_TOKEN` (a github.com token is never sent there);
/// else `gh auth token --hostname HOST` when `gh` is installed. Never a
/// fallback to another surface.
pub fn resolve_token(host: &str) -> Result<Token, GithubError> {
    let enterprise = is_enterprise(host);
    let vars = if enterprise {
        [
            ("GH_ENTERPRISE_TOKEN", TokenSource::GhEnterpriseToken),
            (
                "GITHUB_ENTERPRISE_TOKEN",
                TokenSource::GithubEnterpriseToken,
            ),
        ]
    } else {
        [
            ("GH_TOKEN", TokenSource::GhToken),
            ("GITHUB_TOKEN", TokenSource::GithubToken),
        ]
    };
    for (var, source) in vars {
        if let Some(value) = std::env::var_os(var) {
            let value = value.to_string_lossy();
            if !value.trim().is_empty() {
                return Token::new(&value, source);
            }
        }
    }
    let missing = || match enterprise {
        true => GithubError::NoEnterpriseToken {
            host: host.to_owned(),
        },
        false => GithubError::NoToken,
    };
    let Some(gh) = find_on_path("gh") else {
        return Err(missing());
    };
    let out = std::process::Command::new(gh)
        .args(["auth", "token", "--hostname", host])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    match out {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            Token::new(&text, TokenSource::GhCli).map_err(|e| match e {
                // `gh` printed nothing: it has no login for this host.
                GithubError::NoToken => missing(),
                other => other,
            })
        }
        _ => Err(missing()),
    }
}

fn find_on_path(program: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enterprise_hosts_are_gh_s() {
        for host in [
            "github.com",
            "GitHub.com",
            "github.localhost",
            "acme.ghe.com",
        ] {
            assert!(!is_enterprise(host), "{host}");
        }
        for host in ["ghe.example.com", "ghe.example.com:8443", "127.0.0.1"] {
            assert!(is_enterprise(host), "{host}");
        }
    }

    #[test]
    fn tokens_hide_in_debug() {
        let token = Token::new(" ghp_secret123 \n", TokenSource::GhToken).unwrap();
        assert_eq!(token.secret, "ghp_secret123");
        assert!(!format!("{token:?}").contains("secret123"));
        assert!(matches!(
            Token::new("ghp_a b", TokenSource::GhToken),
            Err(GithubError::BadToken { .. })
        ));
    }
}
