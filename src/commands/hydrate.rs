//! `git maverick hydrate`: the cold start (SPEC 5).

use std::path::PathBuf;

use clap::Args;
use schemars::JsonSchema;
use serde::Serialize;

use super::{Context, Outcome};
use crate::cli::{issue_number, GlobalArgs};
use crate::commands::error::{CommandError, Exit};
use crate::workflow::hydrate::{self, Hydrated};

#[derive(Debug, Args)]
pub(crate) struct HydrateArgs {
    /// The epic (or a story) to read from the surface (142 or #142)
    #[arg(value_parser = issue_number)]
    pub issue: u64,
}

/// `hydrate ISSUE --json`: the state file's content (epic-state.json or
/// issue-state.json) and where it was written.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct HydrateOutput {
    #[serde(flatten)]
    pub hydrated: Hydrated,
    pub written_to: PathBuf,
}

pub(crate) fn run(
    global: &GlobalArgs,
    args: HydrateArgs,
) -> Result<Outcome<HydrateOutput>, CommandError> {
    let ctx = Context::load(global)?;
    ctx.report(hydrate(&ctx, args))
}

fn hydrate(ctx: &Context, args: HydrateArgs) -> Result<Outcome<HydrateOutput>, CommandError> {
    let surface = ctx.surface()?;
    let hydrated = hydrate::hydrate(surface.as_ref(), &ctx.settings, args.issue)?;
    let path = hydrate::write_local(&ctx.git, &hydrated)?;
    let text = serde_json::to_string_pretty(&hydrated.value()).expect("JSON values serialize");
    let note = format!("wrote {}", path.display());
    let mut o = Outcome::new(
        Exit::Ok,
        HydrateOutput {
            hydrated,
            written_to: path,
        },
    );
    for line in text.lines() {
        o = o.line(line);
    }
    Ok(o.note(note))
}
