//! Outgoing mail (invitations, password resets) over SMTP with lettre.

use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

/// Sends mail through the configured SMTP server.
#[derive(Clone)]
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailer")
            .field("from", &self.from)
            .finish_non_exhaustive()
    }
}

impl Mailer {
    /// From `TRUSTHUB_SMTP_URL` (`smtp://[user:password@]host[:port]`, default port 25) and
    /// `TRUSTHUB_SMTP_FROM`. The hub speaks plain SMTP to a relay it trusts (typically the
    /// host's own MTA on localhost); `smtps://` is refused rather than silently downgraded.
    pub fn new(url: &str, from: &str) -> Result<Mailer, String> {
        let rest = url.strip_prefix("smtp://").ok_or_else(|| {
            "TRUSTHUB_SMTP_URL must be smtp://[user:password@]host[:port] (TLS to the relay is not supported yet)".to_owned()
        })?;
        let rest = rest.split(['/', '?']).next().unwrap_or(rest);
        let (userinfo, hostport) = match rest.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, rest),
        };
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) => (
                h,
                p.parse::<u16>()
                    .map_err(|_| "TRUSTHUB_SMTP_URL: bad port".to_owned())?,
            ),
            None => (hostport, 25),
        };
        if host.is_empty() {
            return Err("TRUSTHUB_SMTP_URL: missing host".into());
        }
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host).port(port);
        if let Some(u) = userinfo {
            let (user, pass) = u.split_once(':').unwrap_or((u, ""));
            builder =
                builder.credentials(lettre::transport::smtp::authentication::Credentials::new(
                    user.to_owned(),
                    pass.to_owned(),
                ));
        }
        let transport = builder.build();
        let from = from
            .parse()
            .map_err(|e| format!("TRUSTHUB_SMTP_FROM: {e}"))?;
        Ok(Mailer { transport, from })
    }

    /// Sends one plain-text mail to every recipient and waits for the relay's answer (alert
    /// notifications, whose deliveries record the outcome and retry).
    pub async fn send(&self, to: &[String], subject: &str, body: String) -> Result<(), String> {
        let mut builder = Message::builder().from(self.from.clone()).subject(subject);
        for t in to {
            let mb: Mailbox = t.parse().map_err(|e| format!("bad recipient {t}: {e}"))?;
            builder = builder.to(mb);
        }
        let msg = builder
            .body(body)
            .map_err(|e| format!("cannot build the message: {e}"))?;
        self.transport
            .send(msg)
            .await
            .map(|_| ())
            .map_err(|e| format!("the SMTP relay refused it: {e}"))
    }

    /// Sends one plain-text mail in the background; a failure is logged (never the body,
    /// which may hold a one-time token).
    pub fn send_later(&self, to: &str, subject: &str, body: String) {
        let to_box: Mailbox = match to.parse() {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, "mail not sent: bad recipient");
                return;
            }
        };
        let msg = match Message::builder()
            .from(self.from.clone())
            .to(to_box)
            .subject(subject)
            .body(body)
        {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, "mail not sent: cannot build message");
                return;
            }
        };
        let transport = self.transport.clone();
        let subject = subject.to_owned();
        tokio::spawn(async move {
            match transport.send(msg).await {
                Ok(_) => tracing::info!(%subject, "mail sent"),
                Err(e) => tracing::warn!(%subject, error = %e, "mail not sent"),
            }
        });
    }
}
