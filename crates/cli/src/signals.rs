//! How the hub (`serve`, `up`) is told to stop.

/// SIGTERM or SIGINT (Ctrl-C). Registered when called, not when first awaited: called before
/// the hub is built, a stop asked for during start-up (the first start's CA takes seconds) is
/// a graceful one as soon as the hub serves, not the signal's default kill.
pub fn shutdown() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{Signal, SignalKind, signal};
        async fn on(s: Option<Signal>) {
            match s {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        let term = on(signal(SignalKind::terminate()).ok());
        let int = on(signal(SignalKind::interrupt()).ok());
        async move {
            tokio::select! {
                _ = term => {},
                _ = int => {},
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
