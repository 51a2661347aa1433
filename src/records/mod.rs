//! What this clone keeps on its own disk: a cache of what it last confirmed
//! about its own claims and branches, for checks that must make no network
//! call (the pre-push hook, the Bash guard). The surface always wins over
//! these records; they sit below every promise so that each can read them.

pub mod branch;
pub mod claim;
pub mod files;
