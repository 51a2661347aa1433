//! `git maverick hydrate`: the cold start (SPEC 5).

use clap::Args;
use serde_json::{json, Value};

use super::{Context, Outcome};
use crate::cli::{issue_number, GlobalArgs};
use crate::error::{CommandError, Exit};
use crate::workflow::hydrate;

#[derive(Debug, Args)]
pub(crate) struct HydrateArgs {
    /// The epic (or a story) to read from the surface (142 or #142)
    #[arg(value_parser = issue_number)]
    pub issue: u64,
}

pub(crate) fn run(global: &GlobalArgs, args: HydrateArgs) -> Result<Outcome, CommandError> {
    let ctx = Context::load(global)?;
    let surface = ctx.surface()?;
    let hydrated = hydrate::hydrate(surface.as_ref(), &ctx.settings, args.issue)?;
    let path = hydrate::write_local(&ctx.git, &hydrated)?;
    let value = hydrated.value().clone();
    let mut json = match &value {
        Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    };
    json.insert("written_to".into(), json!(path));
    let text = serde_json::to_string_pretty(&value).expect("JSON values serialize");
    let mut o = Outcome::new(Exit::Ok, Value::Object(json));
    for line in text.lines() {
        o = o.line(line);
    }
    Ok(o.note(format!("wrote {}", path.display())))
}
