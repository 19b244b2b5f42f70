//! What a capability hands the composition root: its API routes, its dashboard pages, its
//! cluster-wide periodic jobs, the tasks every hub process runs, and what it installs in the
//! state at start (its parts, and its hooks into other capabilities' typed events). The root
//! keeps one list of capabilities and mounts, schedules, installs and starts them all from
//! it, so a new capability is its own crate, its migrations and one line in that list.

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

/// What a capability is given at start to install its parts: the settings, the database and
/// the parts installed so far (the keys and the CA first, by the server).
pub struct Install<'a> {
    /// The hub's settings.
    pub settings: &'a Settings,
    /// The database, migrated.
    pub db: &'a trusthub_store::Db,
    /// The state's parts.
    pub parts: &'a mut crate::state::Parts,
}

/// A step of the hub's housekeeping (every minute, in every process, in one transaction
/// with every capability's): an idempotent delete of what expired, found through an index
/// (on SQLite the one writer waits for the whole housekeeping).
pub type Purge = for<'a> fn(
    &'a AppState,
    &'a mut trusthub_store::Tx,
    time::OffsetDateTime,
) -> crate::BoxFuture<'a, trusthub_store::StoreResult<()>>;

/// What a capability does as this process starts serving (before the first request) or
/// stops (after the last one, before the database closes).
pub type Moment = fn(AppState) -> crate::BoxFuture<'static, ()>;

/// One step of a capability's start: adds parts or hooks; a refusal (a bad setting) stops
/// the start with that message.
pub type Installer = fn(&mut Install<'_>) -> Result<(), String>;

/// How a capability's own settings struct joins `trusthub serve`'s command line.
#[derive(Debug, Clone, Copy)]
pub struct SettingsOf {
    /// Adds its flags and environment variables.
    pub augment: fn(clap::Command) -> clap::Command,
    /// Reads it from the whole command line's matches.
    pub read: fn(&mut crate::settings::Sections, &clap::ArgMatches) -> Result<(), clap::Error>,
    /// Sets its defaults unless it was read.
    pub or_defaults: fn(&mut crate::settings::Sections),
}

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
    /// Its housekeeping steps.
    pub purges: Vec<Purge>,
    /// What it does as the process starts serving.
    pub on_start: Vec<Moment>,
    /// What it does as the process stops.
    pub on_stop: Vec<Moment>,
    /// What it installs at start, in the order of the capability list.
    pub installs: Vec<Installer>,
    /// What it installs once every capability's `installs` ran (a part built from others'
    /// hooks, such as the fleet's ingest writer).
    pub installs_last: Vec<Installer>,
    /// Its own settings structs.
    pub settings: Vec<SettingsOf>,
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
            purges: Vec::new(),
            on_start: Vec::new(),
            on_stop: Vec::new(),
            installs: Vec::new(),
            installs_last: Vec::new(),
            settings: Vec::new(),
        }
    }

    /// Adds its own settings struct `T` (a `clap::Args`): its flags and environment variables
    /// are read with the rest of `trusthub serve`'s; [`Settings::of`] answers it.
    pub fn settings<T: crate::settings::Section>(mut self) -> Self {
        self.settings.push(SettingsOf {
            augment: T::augment_args,
            read: crate::settings::Sections::read::<T>,
            or_defaults: crate::settings::Sections::or_defaults::<T>,
        });
        self
    }

    /// Adds a housekeeping step ([`Purge`]).
    pub fn purge(mut self, step: Purge) -> Self {
        self.purges.push(step);
        self
    }

    /// Adds what it does as the process starts serving.
    pub fn on_start(mut self, step: Moment) -> Self {
        self.on_start.push(step);
        self
    }

    /// Adds what it does as the process stops.
    pub fn on_stop(mut self, step: Moment) -> Self {
        self.on_stop.push(step);
        self
    }

    /// Adds a step to its start ([`Install`]).
    pub fn install(mut self, step: Installer) -> Self {
        self.installs.push(step);
        self
    }

    /// Adds a step that runs once every capability's `install` steps ran.
    pub fn install_last(mut self, step: Installer) -> Self {
        self.installs_last.push(step);
        self
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
