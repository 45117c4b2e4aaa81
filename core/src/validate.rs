//! Small input checks shared by the operations; each failure is a 400 naming the field.

use crate::error::{Error, Result};
use crate::ids::truncate;

/// Trims `value` and requires 1..=`max` characters.
pub fn text(field: &str, value: &str, max: usize) -> Result<String> {
    let v = value.trim();
    if v.is_empty() {
        return Err(Error::invalid(format!("{field} must not be empty")));
    }
    if v.chars().count() > max {
        return Err(Error::invalid(format!(
            "{field} must be at most {max} characters"
        )));
    }
    Ok(v.to_owned())
}

/// An E.164 number: `+`, a non-zero digit, and 1–14 more digits.
pub fn e164(field: &str, value: &str) -> Result<String> {
    let ok = value
        .strip_prefix('+')
        .is_some_and(|d| (2..=15).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit()))
        && !value.starts_with("+0");
    if ok {
        Ok(value.to_owned())
    } else {
        Err(Error::invalid(format!(
            "{field} `{}` is not an E.164 phone number such as +14155550123",
            truncate(value, 40)
        )))
    }
}

/// An IANA time zone of the tz database (`Europe/Paris`, `UTC`), as the database names it.
pub fn timezone(field: &str, value: &str) -> Result<String> {
    value
        .trim()
        .parse::<chrono_tz::Tz>()
        .map(|zone| zone.name().to_owned())
        .map_err(|_| {
            Error::invalid(format!(
                "{field} `{}` is not an IANA time zone such as `Europe/Paris`",
                truncate(value, 60)
            ))
        })
}

/// A time of day `HH:MM` (24 h), as minutes after midnight.
pub fn time_of_day(field: &str, value: &str) -> Result<u32> {
    let parsed = value.split_once(':').and_then(|(h, m)| {
        let two_digits = |s: &str| s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit());
        (two_digits(h) && two_digits(m))
            .then(|| (h.parse::<u32>().ok(), m.parse::<u32>().ok()))
            .and_then(|(h, m)| Some((h?, m?)))
            .filter(|(h, m)| *h < 24 && *m < 60)
    });
    parsed.map(|(h, m)| h * 60 + m).ok_or_else(|| {
        Error::invalid(format!(
            "{field} `{}` is not a time of day HH:MM such as 09:30",
            truncate(value, 20)
        ))
    })
}

/// Where a call's media stream connects (`{url}/{call_sid}`): a `wss://` URL, or `ws://` to a
/// loopback host (a runtime on the same machine), with no query string or fragment; returned
/// without a trailing slash.
pub fn runtime_stream_url(field: &str, value: &str) -> Result<String> {
    let parsed = url::Url::parse(value.trim()).map_err(|_| {
        Error::invalid(format!(
            "{field} must be an absolute wss:// URL such as wss://runtime.example.com/media"
        ))
    })?;
    let loopback = match parsed.host() {
        Some(url::Host::Domain(name)) => name == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => return Err(Error::invalid(format!("{field} must name a host"))),
    };
    match parsed.scheme() {
        "wss" => {}
        "ws" if loopback => {}
        "ws" => {
            return Err(Error::invalid(format!(
                "{field} must use wss://; ws:// is accepted only for a loopback host"
            )));
        }
        _ => return Err(Error::invalid(format!("{field} must be a wss:// URL"))),
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(Error::invalid(format!(
            "{field} must not have a query string or fragment: the call's id is appended to its path"
        )));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(Error::invalid(format!(
            "{field} must not carry credentials; the runtime authenticates with its own API key"
        )));
    }
    if parsed.as_str().len() > 2048 {
        return Err(Error::invalid(format!(
            "{field} must be at most 2048 characters"
        )));
    }
    Ok(parsed.as_str().trim_end_matches('/').to_owned())
}

/// A plausible e-mail address, returned lower case.
pub fn email(field: &str, value: &str) -> Result<String> {
    let v = value.trim().to_lowercase();
    let ok = v.len() <= 254
        && v.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !v.chars().any(char::is_whitespace)
                && !domain.contains('@')
        });
    if ok {
        Ok(v)
    } else {
        Err(Error::invalid(format!(
            "{field} `{}` is not an e-mail address",
            truncate(value, 80)
        )))
    }
}

/// A finite number within `min..=max`.
pub fn number(field: &str, value: f64, min: f64, max: f64) -> Result<f64> {
    if value.is_finite() && value >= min && value <= max {
        Ok(value)
    } else {
        Err(Error::invalid(format!(
            "{field} must be a number between {min} and {max}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks() {
        assert!(e164("to_number", "+14155550123").is_ok());
        assert!(e164("to_number", "14155550123").is_err());
        assert!(e164("to_number", "+0123").is_err());
        assert!(e164("to_number", "+1").is_err());
        assert_eq!(
            email("email", " Ana@Example.com ").unwrap(),
            "ana@example.com"
        );
        assert!(email("email", "ana@example").is_err());
        assert!(text("name", "  ", 10).is_err());
        assert!(text("name", "abcdefghijk", 10).is_err());
        assert!(number("t", f64::NAN, 0.0, 2.0).is_err());
    }

    #[test]
    fn runtime_stream_urls() {
        let ok = |v: &str| runtime_stream_url("runtime_stream_url", v);
        assert_eq!(
            ok(" wss://rt.example.com/media/ ").unwrap(),
            "wss://rt.example.com/media"
        );
        assert_eq!(ok("ws://127.0.0.1:8765").unwrap(), "ws://127.0.0.1:8765");
        assert_eq!(
            ok("ws://localhost:8765/s").unwrap(),
            "ws://localhost:8765/s"
        );
        assert_eq!(ok("ws://[::1]:8765").unwrap(), "ws://[::1]:8765");
        for bad in [
            "ws://rt.example.com/media",
            "https://rt.example.com",
            "wss://rt.example.com/media?token=1",
            "wss://rt.example.com/media#x",
            "wss://user:pw@rt.example.com",
            "rt.example.com",
        ] {
            let err = ok(bad).unwrap_err().to_string();
            assert!(err.starts_with("runtime_stream_url"), "{bad}: {err}");
        }
    }
}
