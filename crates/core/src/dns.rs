//! A dns check's target and the DNS messages it exchanges (RFC 1035, 3596), pure: the
//! target `dns://<name>?type=A|AAAA|CNAME|MX|TXT&server=<ip[:port]>` (CONTRACT 32), one
//! query, and its answer read into the values people compare (`192.0.2.1`, `2001:db8::1`,
//! `alias.example.com`, `10 mail.example.com`, the TXT text).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The record types a dns check asks for.
pub const TYPES: [(&str, u16); 5] = [
    ("A", 1),
    ("AAAA", 28),
    ("CNAME", 5),
    ("MX", 15),
    ("TXT", 16),
];

/// A parsed `dns://` target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The name asked, lower case, without a trailing dot.
    pub name: String,
    /// The record type (`A` when the target names none).
    pub rtype: &'static str,
    /// The server asked (port 53 when it names none); `None`: the host's resolver.
    pub server: Option<SocketAddr>,
}

impl Target {
    /// The type's number.
    pub fn code(&self) -> u16 {
        TYPES
            .iter()
            .find(|(n, _)| *n == self.rtype)
            .map_or(1, |(_, c)| *c)
    }

    /// The canonical text of the target.
    pub fn text(&self) -> String {
        let mut s = format!("dns://{}?type={}", self.name, self.rtype);
        if let Some(server) = self.server {
            s.push_str(&format!("&server={server}"));
        }
        s
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
}

/// Parses a `dns://` target; the message says what is wrong.
pub fn parse_target(s: &str) -> Result<Target, String> {
    let rest = s
        .trim()
        .strip_prefix("dns://")
        .ok_or("must be dns://<name>?type=A|AAAA|CNAME|MX|TXT&server=<ip[:port]>")?;
    let (name, query) = rest.split_once('?').unwrap_or((rest, ""));
    let name = name
        .trim_end_matches('/')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    if !valid_name(&name) {
        return Err(format!(
            "`{name}` is not a DNS name (labels of letters, digits, - and _, at most 253 characters)"
        ));
    }
    let mut rtype = None;
    let mut server = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "type" => {
                let up = v.to_ascii_uppercase();
                rtype = Some(
                    TYPES
                        .iter()
                        .find(|(n, _)| *n == up)
                        .map(|(n, _)| *n)
                        .ok_or_else(|| {
                            format!("type `{v}` is not one of A, AAAA, CNAME, MX, TXT")
                        })?,
                );
            }
            "server" => {
                let addr = v
                    .parse::<SocketAddr>()
                    .or_else(|_| v.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 53)))
                    .or_else(|_| {
                        v.trim_start_matches('[')
                            .trim_end_matches(']')
                            .parse::<IpAddr>()
                            .map(|ip| SocketAddr::new(ip, 53))
                    })
                    .map_err(|_| {
                        format!("server `{v}` must be an IP address, with an optional port (`192.0.2.53:5353`, `[2001:db8::53]:53`)")
                    })?;
                if addr.port() == 0 {
                    return Err("server's port must be 1 to 65535".into());
                }
                server = Some(addr);
            }
            other => {
                return Err(format!(
                    "`{other}` is not a dns target option (type, server)"
                ));
            }
        }
    }
    Ok(Target {
        name,
        rtype: rtype.unwrap_or("A"),
        server,
    })
}

/// The query for `t` with message id `id` (recursion desired).
pub fn query(t: &Target, id: u16) -> Vec<u8> {
    let mut m = Vec::with_capacity(32 + t.name.len());
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in t.name.split('.') {
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.push(0);
    m.extend_from_slice(&t.code().to_be_bytes());
    m.extend_from_slice(&[0, 1]);
    m
}

/// What an answer says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The records of the asked type (canonical text each).
    Records(Vec<String>),
    /// The name does not exist (NXDOMAIN).
    NoSuchName,
    /// The server answered with another error code.
    Failed(&'static str),
    /// The answer was cut (TC): ask again over TCP.
    Truncated,
}

/// Reads a (possibly compressed) name at `pos`; the name and the position after it.
fn read_name(m: &[u8], mut pos: usize) -> Result<(String, usize), String> {
    let mut labels: Vec<String> = Vec::new();
    let mut end = None;
    let mut jumps = 0;
    loop {
        let len = *m.get(pos).ok_or("a name runs past the message")? as usize;
        if len & 0xc0 == 0xc0 {
            let lo = *m
                .get(pos + 1)
                .ok_or("a name pointer runs past the message")? as usize;
            end.get_or_insert(pos + 2);
            pos = ((len & 0x3f) << 8) | lo;
            jumps += 1;
            if jumps > 64 {
                return Err("a name's pointers loop".into());
            }
            continue;
        }
        if len == 0 {
            let after = end.unwrap_or(pos + 1);
            return Ok((labels.join(".").to_ascii_lowercase(), after));
        }
        let label = m
            .get(pos + 1..pos + 1 + len)
            .ok_or("a label runs past the message")?;
        labels.push(String::from_utf8_lossy(label).into_owned());
        pos += 1 + len;
    }
}

fn u16_at(m: &[u8], pos: usize) -> Result<u16, String> {
    m.get(pos..pos + 2)
        .map(|b| u16::from_be_bytes([b[0], b[1]]))
        .ok_or_else(|| "the message is cut short".to_owned())
}

/// Reads the answer to the query `id` for `t`.
pub fn parse_answer(m: &[u8], t: &Target, id: u16) -> Result<Answer, String> {
    if m.len() < 12 {
        return Err("the answer is shorter than a DNS header".into());
    }
    if u16_at(m, 0)? != id {
        return Err("the answer is for another query".into());
    }
    let flags = u16_at(m, 2)?;
    if flags & 0x8000 == 0 {
        return Err("the server sent a query, not an answer".into());
    }
    if flags & 0x0200 != 0 {
        return Ok(Answer::Truncated);
    }
    match flags & 0x000f {
        0 => {}
        3 => return Ok(Answer::NoSuchName),
        1 => return Ok(Answer::Failed("FORMERR")),
        2 => return Ok(Answer::Failed("SERVFAIL")),
        4 => return Ok(Answer::Failed("NOTIMP")),
        5 => return Ok(Answer::Failed("REFUSED")),
        _ => return Ok(Answer::Failed("an error code")),
    }
    let qd = u16_at(m, 4)?;
    let an = u16_at(m, 6)?;
    let mut pos = 12;
    for _ in 0..qd {
        pos = read_name(m, pos)?.1 + 4;
    }
    let want = t.code();
    let mut out = Vec::new();
    for _ in 0..an {
        let (_, after) = read_name(m, pos)?;
        let rtype = u16_at(m, after)?;
        let len = u16_at(m, after + 8)? as usize;
        let data_at = after + 10;
        let data = m
            .get(data_at..data_at + len)
            .ok_or("a record runs past the message")?;
        pos = data_at + len;
        if rtype != want {
            continue; // a CNAME chain's links before the asked records
        }
        let text = match rtype {
            1 if len == 4 => Ipv4Addr::new(data[0], data[1], data[2], data[3]).to_string(),
            28 if len == 16 => {
                let mut b = [0u8; 16];
                b.copy_from_slice(data);
                Ipv6Addr::from(b).to_string()
            }
            5 => read_name(m, data_at)?.0,
            15 => {
                let pref = u16_at(m, data_at)?;
                format!("{pref} {}", read_name(m, data_at + 2)?.0)
            }
            16 => {
                let mut s = Vec::new();
                let mut i = 0;
                while i < data.len() {
                    let n = data[i] as usize;
                    s.extend_from_slice(data.get(i + 1..i + 1 + n).ok_or("a TXT string is cut")?);
                    i += 1 + n;
                }
                String::from_utf8_lossy(&s).into_owned()
            }
            _ => return Err("a record's data has the wrong length".into()),
        };
        out.push(text);
    }
    Ok(Answer::Records(out))
}

/// Whether an answer's value is what a user expected: addresses by value (`::1` is
/// `0:0:0:0:0:0:0:1`), names without case or a trailing dot, an MX by its exchange alone or
/// with its preference, TXT exactly.
pub fn matches(rtype: &str, value: &str, expected: &str) -> bool {
    let e = expected.trim();
    match rtype {
        "A" | "AAAA" => match (value.parse::<IpAddr>(), e.parse::<IpAddr>()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        },
        "CNAME" => value.eq_ignore_ascii_case(e.trim_end_matches('.')),
        "MX" => {
            let e = e.trim_end_matches('.').to_ascii_lowercase();
            value == e || value.split_once(' ').is_some_and(|(_, host)| host == e)
        }
        _ => value == expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_with_their_defaults_and_refuse_the_rest() {
        let t = parse_target("dns://Example.COM.?type=mx&server=192.0.2.53").expect("parses");
        assert_eq!(t.name, "example.com");
        assert_eq!(t.rtype, "MX");
        assert_eq!(t.server, Some("192.0.2.53:53".parse().expect("addr")));
        assert_eq!(t.text(), "dns://example.com?type=MX&server=192.0.2.53:53");
        let t = parse_target("dns://a.test").expect("parses");
        assert_eq!((t.rtype, t.server), ("A", None));
        let t = parse_target("dns://a.test?server=[::1]:5353&type=AAAA").expect("v6");
        assert_eq!(t.server, Some("[::1]:5353".parse().expect("addr")));
        for bad in [
            "http://a.test",
            "dns://",
            "dns://a..b",
            "dns://a.test?type=SRV",
            "dns://a.test?server=ns1.test",
            "dns://a.test?ttl=3",
            "dns://a b",
        ] {
            assert!(parse_target(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn answers_are_read_through_compression() {
        let t = parse_target("dns://www.test?type=A").expect("t");
        let mut m = query(&t, 0xbeef);
        m[2] = 0x81;
        m[3] = 0x80;
        m[7] = 2; // two answers: a CNAME link, then the A record
        // www.test CNAME web.test (name by pointer to the question at 12)
        m.extend_from_slice(&[0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 6, 3, b'w', b'e', b'b']);
        let web_at = m.len() - 4;
        m.extend_from_slice(&[0xc0, 12 + 4]); // ".test" of the question
        m.extend_from_slice(&[
            0xc0,
            web_at as u8,
            0,
            1,
            0,
            1,
            0,
            0,
            0,
            60,
            0,
            4,
            192,
            0,
            2,
            7,
        ]);
        assert_eq!(
            parse_answer(&m, &t, 0xbeef).expect("reads"),
            Answer::Records(vec!["192.0.2.7".into()])
        );
        assert!(parse_answer(&m, &t, 1).is_err(), "another query's id");
        m[3] = 0x83;
        assert_eq!(
            parse_answer(&m, &t, 0xbeef).expect("reads"),
            Answer::NoSuchName
        );
    }

    #[test]
    fn expected_values_compare_as_people_write_them() {
        assert!(matches("AAAA", "::1", "0:0:0:0:0:0:0:1"));
        assert!(matches("CNAME", "web.test", "Web.Test."));
        assert!(matches("MX", "10 mail.test", "mail.test"));
        assert!(matches("MX", "10 mail.test", "10 mail.test"));
        assert!(!matches("MX", "10 mail.test", "20 mail.test"));
        assert!(!matches("A", "192.0.2.1", "192.0.2.10"));
        assert!(matches("TXT", "v=spf1 -all", "v=spf1 -all"));
    }
}
