//! Configuration and identity (SPEC sections 1 and 2): every tunable is a
//! `git config maverick.*` key with a flag that overrides it, and the choice
//! of surface is a pure function of config, flags and the URL git resolves
//! for a push. Split by concern, as cargo splits its own configuration:
//!
//! - [`settings`]: the settings, their defaults and how they are resolved;
//! - [`keys`]: the registry of `maverick.*` keys and how values parse;
//! - [`provenance`]: where each value came from;
//! - [`remote`]: the repository, surface and API from the remote's push URL;
//! - [`instance`]: the instance id and its one precedence.
//!
//! Every item keeps its `crate::config::X` path.

mod instance;
mod keys;
mod provenance;
mod remote;
mod settings;

pub use keys::{KnownKey, KNOWN_KEYS};
pub use settings::{Labels, Settings, SurfaceKind};

pub(crate) use instance::*;
pub(crate) use keys::*;
pub(crate) use provenance::*;
use remote::*;
pub(crate) use settings::*;
