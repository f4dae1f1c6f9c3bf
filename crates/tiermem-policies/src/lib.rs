//! Placement policies: one file per policy, named like its config name.
