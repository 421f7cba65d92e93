//! Minimal URL parsing: `http://` (plain HTTP/1.1), `https://` (HTTP/1.1 over TLS, load
//! targets only) and `tcp://host:port` (request/response echo over raw TCP, netperf's TCP_RR).

use std::net::{SocketAddr, ToSocketAddrs};

/// A parsed `http://host[:port]/path?query` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    /// Host name or IP literal (IPv6 without brackets).
    pub host: String,
    /// TCP port (80 when absent; 443 for `https://`).
    pub port: u16,
    /// Path plus query, always starting with `/` (`/` for a `tcp://` URL).
    pub path_and_query: String,
    /// A `tcp://` URL: raw TCP request/response instead of HTTP.
    pub tcp: bool,
    /// An `https://` URL: HTTP/1.1 over TLS.
    pub tls: bool,
}

impl HttpUrl {
    /// Parse a load target: `http://…`, `https://…`, or `tcp://host:port` (a port, no path).
    pub fn parse_target(text: &str) -> Result<Self, String> {
        if let Some(rest) = text.strip_prefix("https://") {
            let mut url = Self::parse_http(&format!("http://{rest}"), 443)
                .map_err(|e| e.replace("http://", "https://"))?;
            url.tls = true;
            return Ok(url);
        }
        let Some(rest) = text.strip_prefix("tcp://") else {
            return Self::parse(text);
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.contains(['/', '?']) {
            return Err(format!(
                "bad URL {text:?}: a tcp:// URL has no path or query"
            ));
        }
        let has_port = match authority.rfind(']') {
            Some(end) => authority[end..].contains(':'),
            None => authority.contains(':'),
        };
        if !has_port {
            return Err(format!("bad URL {text:?}: a tcp:// URL needs a port"));
        }
        let mut url = Self::parse(&format!("http://{authority}/"))
            .map_err(|e| e.replace("http://", "tcp://"))?;
        url.tcp = true;
        Ok(url)
    }

    /// The URL as text (`http://host:port/path` or `tcp://host:port`).
    pub fn display(&self) -> String {
        if self.tcp {
            let host = if self.host.contains(':') {
                format!("[{}]", self.host)
            } else {
                self.host.clone()
            };
            format!("tcp://{host}:{}", self.port)
        } else {
            let scheme = if self.tls { "https" } else { "http" };
            format!("{scheme}://{}{}", self.authority(), self.path_and_query)
        }
    }

    /// Parse `text`; only the `http` scheme is accepted.
    pub fn parse(text: &str) -> Result<Self, String> {
        Self::parse_http(text, 80)
    }

    fn parse_http(text: &str, default_port: u16) -> Result<Self, String> {
        let rest = text.strip_prefix("http://").ok_or_else(|| {
            format!(
                "bad URL {text:?}: only http:// (and, to load, https:// and tcp://) URLs are \
                 supported"
            )
        })?;
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(format!("bad URL {text:?}: missing or unsupported host"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let end = v6
                .find(']')
                .ok_or_else(|| format!("bad URL {text:?}: unclosed ["))?;
            let host = &v6[..end];
            let after = &v6[end + 1..];
            let port = match after.strip_prefix(':') {
                Some(p) => parse_port(p, text)?,
                None if after.is_empty() => default_port,
                None => return Err(format!("bad URL {text:?}")),
            };
            (host.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), parse_port(p, text)?),
                None => (authority.to_string(), default_port),
            }
        };
        if host.is_empty() {
            return Err(format!("bad URL {text:?}: empty host"));
        }
        Ok(Self {
            host,
            port,
            path_and_query: path,
            tcp: false,
            tls: false,
        })
    }

    /// The `Host` header value (`host` or `host:port`).
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == if self.tls { 443 } else { 80 } {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// Resolve to socket addresses (DNS for names).
    pub fn resolve(&self) -> Result<Vec<SocketAddr>, String> {
        let addrs: Vec<SocketAddr> = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {}: {e}", self.host))?
            .collect();
        if addrs.is_empty() {
            return Err(format!("cannot resolve {}: no addresses", self.host));
        }
        Ok(addrs)
    }
}

fn parse_port(p: &str, url: &str) -> Result<u16, String> {
    p.parse::<u16>()
        .ok()
        .filter(|&v| v != 0)
        .ok_or_else(|| format!("bad URL {url:?}: invalid port {p:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_forms() {
        let u = HttpUrl::parse("http://127.0.0.1:8080/a/b?x=1").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path_and_query.as_str()),
            ("127.0.0.1", 8080, "/a/b?x=1")
        );
        let u = HttpUrl::parse("http://echo").unwrap();
        assert_eq!(
            (u.port, u.path_and_query.as_str(), u.authority().as_str()),
            (80, "/", "echo")
        );
        let u = HttpUrl::parse("http://h:81?depth=3").unwrap();
        assert_eq!(u.path_and_query, "/?depth=3");
        let u = HttpUrl::parse("http://[::1]:9000/").unwrap();
        assert_eq!(
            (u.host.as_str(), u.authority().as_str()),
            ("::1", "[::1]:9000")
        );
    }

    #[test]
    fn parses_tcp_targets() {
        let u = HttpUrl::parse_target("tcp://10.0.0.2:7007").unwrap();
        assert!(u.tcp);
        assert_eq!((u.host.as_str(), u.port), ("10.0.0.2", 7007));
        assert_eq!(u.display(), "tcp://10.0.0.2:7007");
        assert_eq!(
            HttpUrl::parse_target("tcp://[::1]:9/").unwrap().display(),
            "tcp://[::1]:9"
        );
        assert!(!HttpUrl::parse_target("http://h/x").unwrap().tcp);
        for bad in [
            "tcp://h",
            "tcp://h:7/x",
            "tcp://h:7?x=1",
            "tcp://:7",
            "tcp://h:0",
        ] {
            assert!(HttpUrl::parse_target(bad).is_err(), "{bad}");
        }
        assert!(
            HttpUrl::parse("tcp://h:7").is_err(),
            "echo --next stays http"
        );
    }

    #[test]
    fn parses_https_targets() {
        let u = HttpUrl::parse_target("https://shop.example/a?b=1").unwrap();
        assert!(u.tls && !u.tcp);
        assert_eq!((u.port, u.authority().as_str()), (443, "shop.example"));
        assert_eq!(u.display(), "https://shop.example/a?b=1");
        let u = HttpUrl::parse_target("https://127.0.0.1:8443").unwrap();
        assert_eq!(u.display(), "https://127.0.0.1:8443/");
        assert!(HttpUrl::parse_target("https://h:0/").is_err());
        assert!(
            HttpUrl::parse("https://h/").is_err(),
            "echo --next stays http"
        );
    }

    #[test]
    fn rejects_bad_urls() {
        for bad in [
            "https://x/",
            "ftp://x",
            "http://",
            "http://h:0/",
            "http://h:99999/",
            "x",
        ] {
            assert!(HttpUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
