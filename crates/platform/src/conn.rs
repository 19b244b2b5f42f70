//! Connection limits (CONTRACT 18), the way nginx and Go's `net/http` keep them: at most
//! `TRUSTHUB_MAX_CONNECTIONS` open at once (the next ones wait in the kernel's backlog, and
//! keep-alive connections idle between requests are closed to make room, as nginx does), a
//! request's headers within 10 s of its first byte (a new connection's within 10 s of
//! opening), an idle keep-alive connection closed after 75 s, and a request body within 60 s
//! ([`body_deadline`]). A slow client never holds more than its own connection; no worker
//! waits on it.
//!
//! The header and idle deadlines are kept at the byte stream (TLS already removed): bytes
//! read after a response was written start a new request, whose head ends at the first
//! blank line; a `101 Switching Protocols` answer (WebSocket) ends all deadlines of that
//! connection, a `100 Continue` changes nothing. The hub speaks HTTP/1.1 only (its TLS offers
//! `http/1.1` alone).

use axum::serve::Listener;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::futures::OwnedNotified;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// Time for a request's headers, from its first byte (or from the connection's opening).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Time an idle keep-alive connection stays open.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(75);
/// Time for a request's body, from the moment the handler starts reading it.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(60);

/// A listener that keeps at most `max` connections open and puts deadlines on each.
#[derive(Debug)]
pub struct Guarded<L> {
    inner: L,
    permits: Arc<Semaphore>,
    /// Wakes the keep-alive connections idle between requests when the cap is reached.
    idle: Arc<Notify>,
}

impl<L> Guarded<L> {
    /// Wraps `inner`.
    pub fn new(inner: L, max: usize) -> Guarded<L> {
        Guarded {
            inner,
            permits: Arc::new(Semaphore::new(max.max(1))),
            idle: Arc::new(Notify::new()),
        }
    }
}

impl<L> Listener for Guarded<L>
where
    L: Listener,
    L::Io: Unpin,
{
    type Io = Timed<L::Io>;
    type Addr = L::Addr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (io, addr) = self.inner.accept().await;
        // At the cap, a new connection makes the keep-alive connections idle between requests
        // close, and waits until one has (those after it wait in the backlog).
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                self.idle.notify_waiters();
                match self.permits.clone().acquire_owned().await {
                    Ok(p) => p,
                    // The semaphore is never closed.
                    Err(_) => std::future::pending().await,
                }
            }
        };
        (Timed::new(io, permit, self.idle.clone()), addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// Where a connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for a request: `started` once its first byte came; `matched` counts the
    /// bytes of `\r\n\r\n` seen in a row.
    Head { started: bool, matched: u8 },
    /// The head is in; the body (bounded by [`body_deadline`]) and the answer follow.
    Answering,
    /// Upgraded (WebSocket): no deadlines here.
    Upgraded,
}

/// A connection with deadlines.
#[derive(Debug)]
pub struct Timed<T> {
    io: T,
    phase: Phase,
    deadline: Pin<Box<Sleep>>,
    armed: bool,
    /// The listener's call to close idle keep-alive connections at the cap.
    idle: Arc<Notify>,
    /// Listening for that call: only while idle after an answer.
    reclaim: Option<Pin<Box<OwnedNotified>>>,
    /// Who last read: woken when an answer makes the connection idle, so that the idle
    /// deadline and the call above are polled (the server may not read again on its own
    /// until bytes come).
    reader: Option<std::task::Waker>,
    _permit: OwnedSemaphorePermit,
}

impl<T> Timed<T> {
    fn new(io: T, permit: OwnedSemaphorePermit, idle: Arc<Notify>) -> Timed<T> {
        Timed {
            io,
            phase: Phase::Head {
                started: false,
                matched: 0,
            },
            deadline: Box::pin(tokio::time::sleep(HEADER_TIMEOUT)),
            armed: true,
            idle,
            reclaim: None,
            reader: None,
            _permit: permit,
        }
    }

    /// The wrapped stream.
    pub fn inner(&self) -> &T {
        &self.io
    }

    fn arm(&mut self, after: Duration) {
        self.deadline.as_mut().reset(Instant::now() + after);
        self.armed = true;
    }

    /// Follows the bytes read: the start and the end of a request's head.
    fn saw_read(&mut self, bytes: &[u8]) {
        if let Phase::Head { started, matched } = self.phase {
            if bytes.is_empty() {
                return;
            }
            if !started {
                self.arm(HEADER_TIMEOUT);
                self.reclaim = None;
            }
            let mut m = matched;
            for &b in bytes {
                m = match (m, b) {
                    (0 | 2, b'\r') => m + 1,
                    (1 | 3, b'\n') => m + 1,
                    (_, b'\r') => 1,
                    _ => 0,
                };
                if m == 4 {
                    self.phase = Phase::Answering;
                    self.armed = false;
                    return;
                }
            }
            self.phase = Phase::Head {
                started: true,
                matched: m,
            };
        }
    }

    /// Follows the bytes written: an answer ends a request (idle from here), a 101 ends
    /// every deadline, a 100 changes nothing.
    fn saw_write(&mut self, bytes: &[u8]) {
        if self.phase == Phase::Upgraded || bytes.is_empty() {
            return;
        }
        if bytes.starts_with(b"HTTP/1.1 101 ") {
            self.phase = Phase::Upgraded;
            self.armed = false;
            self.reclaim = None;
        } else if bytes.starts_with(b"HTTP/1.1 100 ") {
        } else {
            self.phase = Phase::Head {
                started: false,
                matched: 0,
            };
            self.arm(IDLE_TIMEOUT);
            self.reclaim = Some(Box::pin(self.idle.clone().notified_owned()));
            if let Some(reader) = &self.reader {
                reader.wake_by_ref();
            }
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Timed<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        if !self
            .reader
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            self.reader = Some(cx.waker().clone());
        }
        match Pin::new(&mut self.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                // Only a request's head is scanned; bodies and upgraded streams pass as they are.
                if matches!(self.phase, Phase::Head { .. }) {
                    self.saw_read(&buf.filled()[before..]);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => {
                if let Some(reclaim) = self.reclaim.as_mut()
                    && reclaim.as_mut().poll(cx).is_ready()
                {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "idle connection closed: the hub is at its connection cap",
                    )));
                }
                if self.armed && self.deadline.as_mut().poll(cx).is_ready() {
                    let why = match self.phase {
                        Phase::Head { started: true, .. } => {
                            "the request headers did not arrive within 10 s"
                        }
                        _ => "idle connection closed",
                    };
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, why)));
                }
                Poll::Pending
            }
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Timed<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            self.saw_write(&buf[..n]);
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = r
            && n > 0
        {
            let first = bufs.iter().find(|b| !b.is_empty()).map(|b| &b[..]);
            self.saw_write(first.unwrap_or_default());
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Bounds every request body to [`BODY_TIMEOUT`] from the moment the request reached the
/// router: a body still arriving then fails with 408 (the extractors turn a body read error
/// into a problem).
pub async fn body_deadline(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::body::HttpBody as _;
    use futures_util::StreamExt;
    // Nothing to wait for (GET, HEAD, a WebSocket upgrade, an empty POST): as it is.
    if req.body().size_hint().exact() == Some(0) {
        return next.run(req).await;
    }
    let deadline = Instant::now() + BODY_TIMEOUT;
    let (parts, body) = req.into_parts();
    let stream = body.into_data_stream();
    let bounded = futures_util::stream::unfold(Some(stream), move |state| async move {
        let mut stream = state?;
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(item)) => Some((item, Some(stream))),
            Ok(None) => None,
            Err(_) => Some((
                Err(axum::Error::new(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the request body did not arrive within 60 s",
                ))),
                None,
            )),
        }
    });
    let req = axum::extract::Request::from_parts(parts, axum::body::Body::from_stream(bounded));
    next.run(req).await
}

/// Raises this process's soft limit of open files to its hard limit (what nginx's
/// `worker_rlimit_nofile` and Go's runtime do at start): each agent holds about two
/// connections (its WebSocket and its pushes' keep-alive), beyond the usual soft limit of
/// 1,024 at about 500 agents. Returns the soft limit before and after.
pub fn raise_open_files() -> io::Result<(u64, u64)> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    let before = limit.current.unwrap_or(u64::MAX);
    if limit.current.is_some() && limit.current != limit.maximum {
        limit.current = limit.maximum;
        setrlimit(Resource::Nofile, limit)?;
    }
    Ok((
        before,
        getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn timed(io: tokio::io::DuplexStream) -> Timed<tokio::io::DuplexStream> {
        let permit = Arc::new(Semaphore::new(1))
            .try_acquire_owned()
            .expect("permit");
        Timed::new(io, permit, Arc::new(Notify::new()))
    }

    /// At the cap, a keep-alive connection idle between requests is closed at once to admit
    /// the next one (nginx does the same); one in the middle of a request, a new one still
    /// sending its head and an upgraded one are not.
    #[tokio::test]
    async fn at_the_cap_idle_keep_alive_connections_make_room() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let app = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
        tokio::spawn(async move {
            axum::serve(Guarded::new(listener, 2), app)
                .await
                .expect("serve")
        });
        let get = |mut c: tokio::net::TcpStream| async move {
            c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .expect("w");
            let mut buf = [0u8; 256];
            let n = c.read(&mut buf).await.expect("answer");
            assert!(buf[..n].starts_with(b"HTTP/1.1 200"), "{:?}", &buf[..n]);
            c
        };
        // Two connections at the cap: one answered and idle, one mid-head.
        let mut idle = get(tokio::net::TcpStream::connect(addr).await.expect("c1")).await;
        let mut busy = tokio::net::TcpStream::connect(addr).await.expect("c2");
        busy.write_all(b"GET / HTTP/1.1\r\n").await.expect("w");
        tokio::time::sleep(Duration::from_millis(100)).await;
        // A third is served well before the 75 s idle timeout: the idle one made room.
        let third = tokio::net::TcpStream::connect(addr).await.expect("c3");
        tokio::time::timeout(Duration::from_secs(5), get(third))
            .await
            .expect("served at once");
        let mut buf = [0u8; 16];
        assert_eq!(
            idle.read(&mut buf).await.unwrap_or(0),
            0,
            "the idle one was closed"
        );
        // The one mid-request is still served.
        busy.write_all(b"Host: x\r\n\r\n").await.expect("w");
        let n = busy.read(&mut [0u8; 256]).await.expect("answer");
        assert!(n > 0);
    }

    #[tokio::test(start_paused = true)]
    async fn headers_dripped_slowly_are_cut_at_10_s() {
        let (mut client, server) = tokio::io::duplex(1024);
        let mut server = timed(server);
        client.write_all(b"GET / HTTP/1.1\r\nHo").await.expect("w");
        let mut buf = [0u8; 64];
        let n = server.read(&mut buf).await.expect("first bytes");
        assert!(n > 0);
        let err = server.read(&mut buf).await.expect_err("cut");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test(start_paused = true)]
    async fn an_answered_connection_idles_75_s_and_a_websocket_has_no_deadline() {
        let (mut client, server) = tokio::io::duplex(1024);
        let mut server = timed(server);
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("w");
        let mut buf = [0u8; 64];
        let _ = server.read(&mut buf).await.expect("head");
        server
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            .await
            .expect("answer");
        let started = Instant::now();
        let err = server.read(&mut buf).await.expect_err("idle");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_secs(75));

        let (mut client, server) = tokio::io::duplex(1024);
        let mut server = timed(server);
        client
            .write_all(b"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n")
            .await
            .expect("w");
        let _ = server.read(&mut buf).await.expect("head");
        server
            .write_all(b"HTTP/1.1 101 Switching Protocols\r\n\r\n")
            .await
            .expect("101");
        let read = tokio::time::timeout(Duration::from_secs(3600), server.read(&mut buf)).await;
        assert!(read.is_err(), "still open an hour later");
    }
}
