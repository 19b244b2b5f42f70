//! Trust Score v12 (CONTRACT 21; SPEC 1.8): a tenant's score from 0 to 100 as a pure,
//! versioned function of facts every capability provides, each lost point with its reason,
//! reproducible from its inputs (`inputs_sha256`); and the public badge in shields.io's flat
//! style.
//!
//! What it offers: [`score::v12`] (inputs to score), [`badge`] (the SVG and the shields.io
//! endpoint JSON).

pub mod badge;
pub mod score;
