//! Explaining a log line (CONTRACT 25, `/ai/explain`): the built-in rules for the lines an
//! operator meets most — sshd authentication failures, OOM kills, failed systemd units, a
//! full disk, segfaults, TLS errors — in English and German, and the redaction a line goes
//! through before it may leave the hub for a language model (the SDKs' rules for e-mail and
//! IP addresses, tokens and numbers with checksums, plus user names as log lines write them).

/// The languages of the built-in rules.
pub const LANGS: [&str; 2] = ["en", "de"];

/// What a rule found in a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    /// The rule (`ssh_auth_failure`, `oom_kill`, `unit_failed`, `disk_full`, `segfault`,
    /// `tls_error`).
    pub rule: &'static str,
    /// The explanation in the asked language.
    pub text: String,
}

/// The word after `key` in `line` (up to a space, `,`, `;`, `)` or a quote).
fn after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let i = line.find(key)? + key.len();
    let rest = line[i..].trim_start();
    let end = rest
        .find(|c: char| c.is_whitespace() || ",;)'\"[]".contains(c))
        .unwrap_or(rest.len());
    Some(&rest[..end]).filter(|w| !w.is_empty())
}

/// Between `open` and `close` after `key`: `Killed process 812 (java)` → `java`.
fn between<'a>(line: &'a str, key: &str, open: char, close: char) -> Option<&'a str> {
    let i = line.find(key)? + key.len();
    let rest = &line[i..];
    let a = rest.find(open)? + open.len_utf8();
    let b = rest[a..].find(close)? + a;
    Some(&rest[a..b]).filter(|w| !w.is_empty())
}

fn has(line: &str, words: &[&str]) -> bool {
    let lower = line.to_lowercase();
    words.iter().any(|w| lower.contains(&w.to_lowercase()))
}

/// The built-in explanation of a line, in `lang` (`en` or `de`); `None` when no rule knows
/// the line.
pub fn explain(line: &str, lang: &str) -> Option<Explanation> {
    let de = lang == "de";
    let pick = |en: String, german: String| if de { german } else { en };
    if has(line, &["sshd"])
        && has(
            line,
            &[
                "failed password",
                "invalid user",
                "authentication failure",
                "failed publickey",
            ],
        )
    {
        let user = after(line, "invalid user ")
            .or_else(|| after(line, "for invalid user "))
            .or_else(|| after(line, "Failed password for "))
            .or_else(|| after(line, "Failed publickey for "))
            .or_else(|| after(line, "user="))
            .unwrap_or("?");
        let from = after(line, " from ")
            .or_else(|| after(line, "rhost="))
            .unwrap_or("?");
        let invalid = has(line, &["invalid user"]);
        return Some(Explanation {
            rule: "ssh_auth_failure",
            text: pick(
                format!(
                    "An SSH login as \"{user}\" from {from} was refused{}. One line is a typo; many from the same address are someone guessing passwords: allow keys only (PasswordAuthentication no) and block the address (fail2ban, the firewall).",
                    if invalid {
                        " — no such user exists on this host"
                    } else {
                        " (wrong password or key)"
                    }
                ),
                format!(
                    "Eine SSH-Anmeldung als „{user}“ von {from} wurde abgelehnt{}. Eine Zeile ist ein Tippfehler; viele von derselben Adresse sind jemand, der Passwörter rät: nur Schlüssel erlauben (PasswordAuthentication no) und die Adresse sperren (fail2ban, Firewall).",
                    if invalid {
                        " — diesen Benutzer gibt es auf diesem Host nicht"
                    } else {
                        " (falsches Passwort oder falscher Schlüssel)"
                    }
                ),
            ),
        });
    }
    if has(
        line,
        &[
            "out of memory",
            "oom-kill",
            "oom_reaper",
            "invoked oom-killer",
        ],
    ) {
        let process = between(line, "Killed process", '(', ')')
            .or_else(|| after(line, "task="))
            .or_else(|| {
                line.split_whitespace()
                    .find(|w| w.ends_with("invoked"))
                    .map(|w| w.trim_end_matches("invoked"))
            })
            .unwrap_or("a process");
        return Some(Explanation {
            rule: "oom_kill",
            text: pick(
                format!(
                    "The kernel ran out of memory and killed {process} to free it (the OOM killer). Whatever {process} was doing stopped abruptly: check whether it restarted, then give the host more memory or swap, or limit the process (MemoryMax= in its unit)."
                ),
                format!(
                    "Dem Kernel ging der Arbeitsspeicher aus und er hat {process} beendet, um Speicher freizugeben (OOM-Killer). Was {process} gerade tat, brach ab: prüfen, ob es neu gestartet ist, dann dem Host mehr Speicher oder Swap geben oder den Prozess begrenzen (MemoryMax= in seiner Unit)."
                ),
            ),
        });
    }
    if has(
        line,
        &[
            "no space left on device",
            "enospc",
            "disk full",
            "filesystem full",
        ],
    ) {
        return Some(Explanation {
            rule: "disk_full",
            text: pick(
                "A write failed because the file system is full (ENOSPC). Programs that cannot write may lose data or stop: find what grew (`df -h`, then `du -xh --max-depth=1 /` on the full mount), clean up logs or old files, and set an alert on disk use.".to_owned(),
                "Ein Schreibvorgang schlug fehl, weil das Dateisystem voll ist (ENOSPC). Programme, die nicht schreiben können, verlieren Daten oder halten an: herausfinden, was gewachsen ist (`df -h`, dann `du -xh --max-depth=1 /` auf dem vollen Mount), Logs oder alte Dateien aufräumen und eine Warnung für die Plattenbelegung setzen.".to_owned(),
            ),
        });
    }
    if has(line, &["segfault at", "segmentation fault", "sigsegv"]) {
        let process = line
            .split_whitespace()
            .find_map(|w| {
                w.split_once('[')
                    .filter(|(_, r)| r.ends_with("]:"))
                    .map(|(n, _)| n)
            })
            .filter(|n| !n.is_empty() && *n != "kernel:")
            .unwrap_or("a program");
        let lib = after(line, " in ").unwrap_or("?");
        return Some(Explanation {
            rule: "segfault",
            text: pick(
                format!(
                    "{process} crashed: it read or wrote memory it does not own (a segmentation fault, in {lib}). It is a bug in the program or a library it uses, sometimes bad memory: update the package, and if it repeats, report it with the core dump (`coredumpctl info`)."
                ),
                format!(
                    "{process} ist abgestürzt: es hat auf Speicher zugegriffen, der ihm nicht gehört (Speicherzugriffsfehler, in {lib}). Das ist ein Fehler im Programm oder einer Bibliothek, selten defekter Speicher: das Paket aktualisieren und bei Wiederholung mit dem Core-Dump melden (`coredumpctl info`)."
                ),
            ),
        });
    }
    if has(
        line,
        &[
            "certificate has expired",
            "certificate verify failed",
            "ssl routines",
            "tls handshake",
            "x509:",
            "unknown ca",
            "handshake failure",
            "ssl_error",
        ],
    ) {
        let expired = has(line, &["expired"]);
        return Some(Explanation {
            rule: "tls_error",
            text: pick(
                format!(
                    "A TLS connection failed{}. Clients refuse a certificate that has expired, is for another name or is signed by a CA they do not trust: check the certificate (`openssl s_client -connect host:443 -servername host`), renew it, and make sure the chain is complete.",
                    if expired {
                        " because a certificate has expired"
                    } else {
                        ""
                    }
                ),
                format!(
                    "Eine TLS-Verbindung ist fehlgeschlagen{}. Clients lehnen Zertifikate ab, die abgelaufen sind, auf einen anderen Namen lauten oder von einer unbekannten CA stammen: das Zertifikat prüfen (`openssl s_client -connect host:443 -servername host`), erneuern und die Kette vollständig ausliefern.",
                    if expired {
                        ", weil ein Zertifikat abgelaufen ist"
                    } else {
                        ""
                    }
                ),
            ),
        });
    }
    if has(line, &["systemd"])
        && has(
            line,
            &[
                "failed with result",
                "failed to start",
                "entered failed state",
                "main process exited, code=exited",
            ],
        )
    {
        let unit = line
            .split_whitespace()
            .map(|w| w.trim_end_matches([':', '.']))
            .find(|w| {
                [".service", ".socket", ".timer", ".mount"]
                    .iter()
                    .any(|s| w.ends_with(s))
            })
            .map(str::to_owned)
            .or_else(|| after(line, "Failed to start ").map(|s| s.trim_end_matches('.').to_owned()))
            .unwrap_or_else(|| "a unit".into());
        return Some(Explanation {
            rule: "unit_failed",
            text: pick(
                format!(
                    "The systemd unit {unit} failed: its program exited with an error or did not start. `systemctl status {unit}` and `journalctl -u {unit} -n 50` show why; fix the cause, then `systemctl restart {unit}`."
                ),
                format!(
                    "Die systemd-Unit {unit} ist fehlgeschlagen: ihr Programm hat mit einem Fehler geendet oder ist nicht gestartet. `systemctl status {unit}` und `journalctl -u {unit} -n 50` zeigen den Grund; die Ursache beheben, dann `systemctl restart {unit}`."
                ),
            ),
        });
    }
    None
}

/// Where the host name of a syslog line is: after `Nov 27 10:01:02` (BSD syslog, a day
/// padded with a space too) or after an RFC 3339 time stamp (rsyslog's precise format).
fn syslog_host(words: &[&str]) -> Option<usize> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let clock = |w: &str| {
        w.len() == 8
            && w.bytes().enumerate().all(|(i, b)| {
                if i == 2 || i == 5 {
                    b == b':'
                } else {
                    b.is_ascii_digit()
                }
            })
    };
    let filled: Vec<(usize, &str)> = words
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, w)| !w.is_empty())
        .collect();
    let first = filled.first()?.1;
    let at = if MONTHS.contains(&first)
        && filled
            .get(1)
            .is_some_and(|(_, d)| d.len() <= 2 && d.bytes().all(|b| b.is_ascii_digit()))
        && filled.get(2).is_some_and(|(_, t)| clock(t))
    {
        3
    } else if first.len() >= 19
        && first.as_bytes().get(10) == Some(&b'T')
        && first[..4].bytes().all(|b| b.is_ascii_digit())
    {
        1
    } else {
        return None;
    };
    let (i, host) = filled.get(at)?;
    // A program tag (`sshd[1]:`) is not a host.
    (!host.ends_with(':')).then_some(*i)
}

/// A log line as it may leave the hub: secrets first ([`trusthub_core::secrets`]: values of
/// secret-named keys, `Authorization` values, URL userinfo, PEM blocks, JWTs, AWS keys, long
/// hex and base64 runs), then the SDKs' redaction (e-mail and IP addresses, tokens,
/// API keys, card numbers, IBANs, phone numbers) and user names where log lines name them
/// (`for [invalid user] <name>`, `user=<name>`, `ruser=<name>`, `user <name>`,
/// `for user <name>`, `by <name>(uid=…)`, `USER=<name>`), and the host name of a syslog line.
pub fn redact_line(line: &str) -> String {
    let text = trusthub_core::redact::redact(&trusthub_core::secrets::secrets(line)).text;
    let words: Vec<&str> = text.split(' ').collect();
    // A name is replaced up to what follows it (`carol(uid=0)` keeps `(uid=0)`).
    let user = |w: &str| {
        let cut = w.find(|c: char| "(,;:\"'".contains(c)).unwrap_or(w.len());
        format!("[USER]{}", &w[cut..])
    };
    let named = |w: &str| !w.is_empty() && !w.starts_with('[') && !w.starts_with('(');
    let host_at = syslog_host(&words);
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut next_is_user = false;
    for (i, w) in words.iter().enumerate() {
        if Some(i) == host_at {
            out.push("[HOST]".into());
            continue;
        }
        if next_is_user && named(w) {
            out.push(user(w));
            next_is_user = false;
            continue;
        }
        next_is_user = false;
        if let Some((k, v)) = w.split_once('=')
            && ["user", "ruser", "USER", "acct", "logname"].contains(&k)
            && named(v)
        {
            out.push(format!("{k}={}", user(v)));
            continue;
        }
        let next = words.get(i + 1).copied().unwrap_or_default();
        let after_next = words.get(i + 2).copied().unwrap_or_default();
        next_is_user = match *w {
            "user" => true,
            "for" => next != "invalid" && next != "user" && matches!(after_next, "from" | "port"),
            "by" => next.contains("(uid="),
            _ => false,
        };
        out.push((*w).to_owned());
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_lines_are_explained_in_english_and_german() {
        let cases = [
            (
                "Nov 27 10:01:02 web-1 sshd[812]: Failed password for invalid user admin from 203.0.113.9 port 50514 ssh2",
                "ssh_auth_failure",
                "\"admin\" from 203.0.113.9",
                "„admin“ von 203.0.113.9",
            ),
            (
                "Nov 27 10:01:02 web-1 sshd[812]: Failed password for alice from 198.51.100.7 port 2222 ssh2",
                "ssh_auth_failure",
                "wrong password or key",
                "falsches Passwort",
            ),
            (
                "kernel: Out of memory: Killed process 4242 (java) total-vm:8388608kB, anon-rss:6291456kB",
                "oom_kill",
                "killed java",
                "hat java beendet",
            ),
            (
                "systemd[1]: nginx.service: Failed with result 'exit-code'.",
                "unit_failed",
                "nginx.service failed",
                "nginx.service ist fehlgeschlagen",
            ),
            (
                "postgres[77]: could not write to file \"pg_wal/xlogtemp.77\": No space left on device",
                "disk_full",
                "file system is full",
                "Dateisystem voll",
            ),
            (
                "kernel: nginx[1234]: segfault at 0 ip 00007f sp 00007ffd error 4 in libc.so.6[7f+155000]",
                "segfault",
                "nginx crashed",
                "nginx ist abgestürzt",
            ),
            (
                "curl: (60) SSL certificate problem: certificate has expired",
                "tls_error",
                "because a certificate has expired",
                "abgelaufen",
            ),
        ];
        for (line, rule, en, de) in cases {
            let e = explain(line, "en").unwrap_or_else(|| panic!("{line}"));
            assert_eq!(e.rule, rule, "{line}");
            assert!(e.text.contains(en), "{line}: {}", e.text);
            let d = explain(line, "de").expect("de");
            assert!(d.text.contains(de), "{line}: {}", d.text);
            assert_ne!(e.text, d.text);
        }
        assert_eq!(explain("GET /index.html 200 512", "en"), None);
    }

    #[test]
    fn user_names_and_addresses_do_not_leave() {
        for (line, gone) in [
            (
                "sshd[812]: Failed password for invalid user admin from 203.0.113.9 port 50514 ssh2",
                vec!["admin", "203.0.113.9"],
            ),
            (
                "sshd[812]: Failed password for alice from 2001:db8::7 port 22 ssh2",
                vec!["alice", "2001:db8::7"],
            ),
            (
                "pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=10.0.0.8  user=bob",
                vec!["bob", "10.0.0.8"],
            ),
            (
                "sudo: pam_unix(sudo:session): session opened for user carol(uid=0) by dave(uid=1000)",
                vec!["carol", "dave"],
            ),
            (
                "CRON[99]: pam_unix(cron:session): session opened for user erin by (uid=0)",
                vec!["erin"],
            ),
            (
                "postfix/smtp[3]: to=<frank@example.org>, relay=mx.example.org[192.0.2.1]:25, status=sent",
                vec!["frank@example.org", "192.0.2.1"],
            ),
        ] {
            let r = redact_line(line);
            for g in gone {
                assert!(!r.contains(g), "{g} left in {r}");
            }
            assert!(
                r.contains("[USER]") || r.contains("[EMAIL]") || r.contains("[IP]"),
                "{r}"
            );
        }
        // What is not personal stays.
        let r = redact_line(
            "sshd[812]: Failed password for invalid user admin from 203.0.113.9 port 50514 ssh2",
        );
        assert!(
            r.starts_with(
                "sshd[812]: Failed password for invalid user [USER] from [IP] port 50514 ssh2"
            ),
            "{r}"
        );
        // The host name of a syslog line, in both formats syslog daemons write.
        for (line, want) in [
            (
                "Nov 27 10:01:02 payroll-db-7 sshd[1]: x",
                "Nov 27 10:01:02 [HOST] sshd[1]: x",
            ),
            (
                "Nov  7 10:01:02 payroll-db-7 kernel: x",
                "Nov  7 10:01:02 [HOST] kernel: x",
            ),
            (
                "2026-11-27T10:01:02.123456+00:00 payroll-db-7 sshd[1]: x",
                "2026-11-27T10:01:02.123456+00:00 [HOST] sshd[1]: x",
            ),
            (
                "Nov 27 10:01:02 sshd[1]: no host here",
                "Nov 27 10:01:02 sshd[1]: no host here",
            ),
        ] {
            assert_eq!(redact_line(line), want);
        }
    }
}
