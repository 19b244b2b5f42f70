//! The LLM traces' services (CONTRACT 9; SPEC 2.11): intake, and the per-team views and monthly CSV.

use crate::auth::{Credential, TraceSender, Viewer};
use crate::error::{ApiError, ApiResult, FieldError, all_valid};
use crate::state::{AppState, now};
use crate::store::ai::{self as store, NewCall, NewTrace};
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use time::OffsetDateTime;
use trusthub_core::ai::{self, Cost, Usage};
use trusthub_core::{Role, TokenScope};

use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

pub mod otlp;
pub mod prices;
pub mod teams;
pub mod traces;

pub use otlp::*;
pub use prices::*;
pub use teams::*;
pub use traces::*;
