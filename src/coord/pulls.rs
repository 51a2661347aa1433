//! An open pull request that closes an issue is work in progress on it,
//! when its author is trusted as a marker's author is (SPEC 3: the
//! surface judges both by one rule): a stranger's pull request saying
//! `Fixes #7` holds nothing back.
//!
//! GitHub links a pull request to the issues its description closes with a
//! keyword (`Fixes #142`), when it merges into the default branch
//! ([`PullRequest::closes`]). `coord read`, `coord claim` (and `run`,
//! `resume`, which claim through it) and `status` count such a pull
//! request as another holder, unless it is the reader's own work: from a
//! branch of this repository that the reader claims, works on, or holds.
//! The claim protocol itself ([`lease`](super::lease)) never lists pull
//! requests: this is judged before a claim, on one list of them.

use serde::Serialize;

use crate::surface::PullRequest;

/// The open pull request that closes an issue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ClosingPull {
    pub number: u64,
    /// The branch it merges from.
    pub head_ref: String,
    /// Who opened it (a GitHub login).
    pub author: String,
    pub draft: bool,
    /// From a fork: no branch of this repository carries its work on.
    #[serde(skip)]
    pub from_fork: bool,
}

impl ClosingPull {
    /// `#7 (fix-login, by alice)`, for people.
    pub fn describe(&self) -> String {
        let draft = if self.draft { "draft " } else { "" };
        format!(
            "{draft}pull request #{} ({}, by {})",
            self.number, self.head_ref, self.author
        )
    }
}

/// The lowest-numbered open pull request by a trusted author that closes
/// `issue` and is not the reader's own: own pull requests come from this
/// repository (not a fork) and from one of `own_branches`.
pub fn closing_pull(
    pulls: &[PullRequest],
    issue: u64,
    own_branches: &[&str],
) -> Option<ClosingPull> {
    pulls
        .iter()
        .filter(|pr| pr.trusted && pr.closes(issue))
        .filter(|pr| pr.from_fork || !own_branches.contains(&pr.head_ref.as_str()))
        .min_by_key(|pr| pr.number)
        .map(|pr| ClosingPull {
            number: pr.number,
            head_ref: pr.head_ref.clone(),
            author: pr.author.clone(),
            draft: pr.draft,
            from_fork: pr.from_fork,
        })
}

/// Whether a trusted open pull request closes `issue`, whoever reads:
/// what `dispatch` hands to no one (its agent's claim would be refused).
pub fn closed_by_pull(pulls: &[PullRequest], issue: u64) -> bool {
    closing_pull(pulls, issue, &[]).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pull(number: u64, head: &str, base: &str, body: &str) -> PullRequest {
        PullRequest {
            number,
            title: String::new(),
            head_ref: head.into(),
            head_sha: String::new(),
            base_ref: base.into(),
            draft: false,
            labels: Vec::new(),
            body: body.into(),
            author: "alice".into(),
            base_repo: "acme/widgets".into(),
            base_repo_url: "https://github.com/acme/widgets".into(),
            default_branch: "main".into(),
            from_fork: false,
            trusted: true,
        }
    }

    #[test]
    fn only_a_pull_request_into_the_default_branch_closes() {
        let pulls = [
            pull(9, "a", "release", "Fixes #5"),
            pull(8, "b", "main", "See #5"),
        ];
        assert_eq!(closing_pull(&pulls, 5, &[]), None);
        let pulls = [
            pull(9, "a", "main", "Fixes #5"),
            pull(7, "b", "main", "fixes #5"),
        ];
        assert_eq!(closing_pull(&pulls, 5, &[]).map(|p| p.number), Some(7));
    }

    #[test]
    fn a_strangers_pull_request_holds_nothing() {
        let stranger = PullRequest {
            trusted: false,
            ..pull(9, "a", "main", "Fixes #5, fixes #6")
        };
        assert_eq!(closing_pull(std::slice::from_ref(&stranger), 5, &[]), None);
        let pulls = [stranger, pull(10, "b", "main", "Fixes #6")];
        let closed: Vec<u64> = (5..=7).filter(|&n| closed_by_pull(&pulls, n)).collect();
        assert_eq!(closed, [6]);
    }

    #[test]
    fn the_readers_own_branch_is_not_another_holder_unless_from_a_fork() {
        let mine = pull(9, "mine", "main", "Fixes #5");
        assert_eq!(
            closing_pull(std::slice::from_ref(&mine), 5, &["mine"]),
            None
        );
        let fork = PullRequest {
            from_fork: true,
            ..mine
        };
        assert_eq!(
            closing_pull(&[fork], 5, &["mine"]).map(|p| p.describe()),
            Some("pull request #9 (mine, by alice)".to_owned())
        );
    }
}
