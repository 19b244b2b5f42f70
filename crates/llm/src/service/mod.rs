//! What the API's handlers, the dashboard's pages and other capabilities call.

pub mod ai;
pub mod evidence;
pub mod explain;
