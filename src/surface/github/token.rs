//! The GitHub token: where it comes from (SPEC 1: `GH_TOKEN`, `GITHUB_TOKEN`,
//! `gh auth token`; for an Enterprise Server host, as gh reads them,
//! `GH_ENTERPRISE_TOKEN`, `GITHUB_ENTERPRISE_TOKEN` and `gh auth token
//! --hostname HOST`) and a type whose `Debug` never shows it.

use std::fmt;

use maverick_core::remote::GithubHost;

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

/// SPEC 1, as gh reads tokens for `host` (the GitHub host the repository
/// is on): for github.com `GH_TOKEN`, else `GITHUB_TOKEN`; for an
/// Enterprise Server host `GH_ENTERPRISE_TOKEN`, else
/// `GITHUB_ENTERPRISE_TOKEN` (a github.com token is never sent there);
/// else `gh auth token --hostname HOST` when `gh` is installed. Never a
/// fallback to another surface.
pub fn resolve_token(host: &str) -> Result<Token, GithubError> {
    let enterprise = GithubHost::of(host) == GithubHost::EnterpriseServer;
    let vars = GithubHost::of(host)
        .token_vars()
        .map(|var| (var, source_of(var)));
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
    let Some(gh) = crate::programs::find_on_path("gh") else {
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

/// The source a token read from `var` is reported as.
fn source_of(var: &str) -> TokenSource {
    match var {
        "GH_TOKEN" => TokenSource::GhToken,
        "GITHUB_TOKEN" => TokenSource::GithubToken,
        "GH_ENTERPRISE_TOKEN" => TokenSource::GhEnterpriseToken,
        "GITHUB_ENTERPRISE_TOKEN" => TokenSource::GithubEnterpriseToken,
        _ => TokenSource::Given,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
