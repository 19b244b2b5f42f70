//! What the API's handlers, the dashboard's pages and other capabilities call.

pub mod apps;
pub mod events;
pub mod push;
pub mod restart;
pub mod rules;
