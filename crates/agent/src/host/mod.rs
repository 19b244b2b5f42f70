//! This host as the agent touches it, below everything else in the agent (it imports no
//! other module of it): running a program ([`command`], with a time limit and no shell,
//! as a project's [`owner`] when it runs for a project), the Docker Engine API
//! ([`docker`]), the process table ([`procfs`]), the agent's own private [`files`] and disk
//! walks on a niced thread of their own ([`background`]).

pub mod background;
pub mod command;
pub mod docker;
pub mod files;
pub mod owner;
pub mod procfs;
