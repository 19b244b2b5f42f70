//! What a capability hands the composition root: its API routes, its dashboard pages, its
//! cluster-wide periodic jobs and the tasks every hub process runs. The root keeps one list
//! of capabilities and mounts, schedules and starts them all from it, so a new capability is
//! its own crate, its migrations and one line in that list.

use crate::scheduler::Tick;
use crate::settings::Settings;
use crate::state::AppState;
use axum::Router;
use utoipa_axum::router::OpenApiRouter;

/// A cluster-wide periodic job: run by the one process holding its lease (CONTRACT 11).
#[derive(Debug, Clone, Copy)]
pub struct Job {
    /// The lease's name.
    pub name: &'static str,
    /// Seconds between ticks under these settings.
    pub interval: fn(&Settings) -> u64,
    /// Seconds from the start to the first tick (a warm-up), when not one interval.
    pub first: Option<fn(&Settings) -> u64>,
    /// One run.
    pub tick: Tick,
}

/// A task every hub process runs for as long as it serves (a deliverer, a listener).
pub type Task = fn(AppState) -> crate::BoxFuture<'static, ()>;

/// One capability, as the composition root assembles it.
#[derive(Debug, Clone)]
pub struct Capability {
    /// Its name (for logs).
    pub name: &'static str,
    /// Its API routes, relative to `/api/v1`.
    pub api: fn() -> OpenApiRouter<AppState>,
    /// Its dashboard pages.
    pub pages: fn() -> Router<AppState>,
    /// Its cluster-wide periodic jobs.
    pub jobs: Vec<Job>,
    /// Its tasks that run in every process.
    pub tasks: Vec<Task>,
    /// How its records are named in the audit log and events.
    pub names: Vec<crate::names::Namer>,
}

impl Capability {
    /// A capability with routes and pages, and no jobs or tasks yet.
    pub fn new(
        name: &'static str,
        api: fn() -> OpenApiRouter<AppState>,
        pages: fn() -> Router<AppState>,
    ) -> Self {
        Capability {
            name,
            api,
            pages,
            jobs: Vec::new(),
            tasks: Vec::new(),
            names: Vec::new(),
        }
    }

    /// Adds a periodic job.
    pub fn job(mut self, name: &'static str, interval: fn(&Settings) -> u64, tick: Tick) -> Self {
        self.jobs.push(Job {
            name,
            interval,
            first: None,
            tick,
        });
        self
    }

    /// Adds a periodic job whose first tick comes `first` seconds after the start.
    pub fn job_after(
        mut self,
        name: &'static str,
        first: fn(&Settings) -> u64,
        interval: fn(&Settings) -> u64,
        tick: Tick,
    ) -> Self {
        self.jobs.push(Job {
            name,
            interval,
            first: Some(first),
            tick,
        });
        self
    }

    /// Names one kind of its records (`kind:<id>` in audit rows), with its page (`{id}`
    /// replaced by the id).
    pub fn names(
        mut self,
        kind: &'static str,
        label: &'static str,
        page: Option<&'static str>,
        names: crate::names::NamesFn,
    ) -> Self {
        self.names.push(crate::names::Namer {
            kind,
            label,
            page,
            names,
        });
        self
    }

    /// Adds a task every process runs.
    pub fn task(mut self, task: Task) -> Self {
        self.tasks.push(task);
        self
    }
}
