//! What the API's handlers, the dashboard's pages and other capabilities call.

pub mod actions;
pub mod agents;
pub mod download;
pub mod hosts;
