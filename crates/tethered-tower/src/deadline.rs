//! The `grpc-timeout` header: how a gRPC caller says how long it will wait, read on the way in
//! and written on the way out; and how close to its deadline a request that stops counts as
//! stopped by it ([`drop_reason`]).

use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderName, HeaderValue};
use tethered::{CancelReason, CancelToken};

/// The header's name.
pub const GRPC_TIMEOUT: &str = "grpc-timeout";

/// [`GRPC_TIMEOUT`] as a name made once: looking a `&str` up, or inserting under one, parses
/// and checks it on every request.
pub(crate) static GRPC_TIMEOUT_NAME: HeaderName = HeaderName::from_static(GRPC_TIMEOUT);

/// The most digits the header's value may have (gRPC's `TimeoutValue`).
const MAX_DIGITS: usize = 8;

/// The deadline a request's `grpc-timeout` header sets: `Ok(None)` without the header, and an
/// error that names the header for a malformed one (gRPC's `TimeoutValue` is one to eight
/// digits and a unit: `H`, `M`, `S`, `m`, `u`, `n`). A deadline the caller meant is never
/// silently dropped: [`RequestTokenLayer`](crate::RequestTokenLayer) answers such a request
/// with HTTP 400 or gRPC's `INVALID_ARGUMENT`.
///
/// # Errors
///
/// [`InvalidGrpcTimeout`], for a header that is not well-formed.
///
/// ```
/// use std::time::Duration;
/// use http::{HeaderMap, HeaderValue};
///
/// let mut headers = HeaderMap::new();
/// assert_eq!(tethered_tower::parse_grpc_timeout(&headers)?, None);
/// headers.insert("grpc-timeout", HeaderValue::from_static("250m"));
/// assert_eq!(tethered_tower::parse_grpc_timeout(&headers)?, Some(Duration::from_millis(250)));
/// headers.insert("grpc-timeout", HeaderValue::from_static("soon"));
/// let err = tethered_tower::parse_grpc_timeout(&headers).unwrap_err();
/// assert!(err.to_string().starts_with("invalid grpc-timeout header \"soon\""));
/// # Ok::<(), tethered_tower::InvalidGrpcTimeout>(())
/// ```
pub fn parse_grpc_timeout(headers: &HeaderMap) -> Result<Option<Duration>, InvalidGrpcTimeout> {
    let Some(value) = headers.get(&GRPC_TIMEOUT_NAME) else {
        return Ok(None);
    };
    let invalid = || InvalidGrpcTimeout {
        value: String::from_utf8_lossy(value.as_bytes()).into_owned(),
    };
    let text = value.to_str().map_err(|_| invalid())?;
    let Some(split) = text.len().checked_sub(1) else {
        return Err(invalid());
    };
    let (digits, unit) = text.split_at(split);
    if digits.is_empty()
        || digits.len() > MAX_DIGITS
        || !digits.bytes().all(|byte| byte.is_ascii_digit())
    {
        return Err(invalid());
    }
    let amount: u64 = digits.parse().map_err(|_| invalid())?;
    let duration = match unit {
        "H" => amount.checked_mul(3600).map(Duration::from_secs),
        "M" => amount.checked_mul(60).map(Duration::from_secs),
        "S" => Some(Duration::from_secs(amount)),
        "m" => Some(Duration::from_millis(amount)),
        "u" => Some(Duration::from_micros(amount)),
        "n" => Some(Duration::from_nanos(amount)),
        _ => None,
    };
    duration.map(Some).ok_or_else(invalid)
}

/// A `grpc-timeout` header that is not well-formed: its value, as sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidGrpcTimeout {
    value: String,
}

impl InvalidGrpcTimeout {
    /// The header's value, as sent (lossily decoded).
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl std::fmt::Display for InvalidGrpcTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "invalid grpc-timeout header {:?}: expected 1 to 8 digits and a unit (H, M, S, m, u, n)",
            self.value
        )
    }
}

impl std::error::Error for InvalidGrpcTimeout {}

/// The `grpc-timeout` value that passes on what is left of `token`'s deadline (see
/// [`CancelToken::time_left`]), for a call made on the request's behalf: so a deadline set at
/// the edge travels every hop. `None` if the token has no deadline. The finest unit that fits
/// in eight digits is used, rounded down, and never below one unit (a deadline that passed
/// reads `1n`, which the next hop treats as passed).
///
/// ```
/// use std::time::Duration;
/// use tethered::CancelSource;
///
/// let request = CancelSource::new();
/// assert!(tethered_tower::grpc_timeout(&request.token()).is_none());
/// request.cancel_after(Duration::from_secs(30))?;
/// let header = tethered_tower::grpc_timeout(&request.token()).unwrap();
/// assert!(header.to_str()?.ends_with('u')); // just under 30 s, in microseconds
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn grpc_timeout(token: &CancelToken) -> Option<HeaderValue> {
    token.time_left().map(format_grpc_timeout)
}

/// `left` as a `grpc-timeout` value.
fn format_grpc_timeout(left: Duration) -> HeaderValue {
    const LIMIT: u128 = 99_999_999;
    let units: [(u128, char); 6] = [
        (left.as_nanos(), 'n'),
        (left.as_micros(), 'u'),
        (left.as_millis(), 'm'),
        (u128::from(left.as_secs()), 'S'),
        (u128::from(left.as_secs() / 60), 'M'),
        (u128::from(left.as_secs() / 3600), 'H'),
    ];
    let (amount, unit) = units
        .into_iter()
        .find(|(amount, _)| *amount <= LIMIT)
        .unwrap_or((LIMIT, 'H'));
    let text = format!("{}{unit}", amount.max(1));
    HeaderValue::from_str(&text).expect("digits and a letter are a valid header value")
}

/// How close to its deadline a dropped response future (or body) counts as stopped by the
/// deadline.
///
/// The deadline of a `grpc-timeout` is kept on both sides, and not only by this layer: tonic's
/// server runs its own, outside the layer, armed a moment before this one, and the client
/// (tonic's channel does) drops the call at its deadline, which started when the request was
/// sent, earlier than this layer's, which started when the request arrived. Either way the
/// response future is dropped, by the deadline, just before this layer's own timer fires: by
/// the request's transit and queueing time, a few milliseconds, more on a loaded machine. Such
/// a drop is the deadline, and the token reads `Timeout`, not `Dropped`. A client that hangs up
/// on its own this close to its deadline reads `Timeout` too.
const DEADLINE_SLACK: Duration = Duration::from_millis(50);

/// The reason a request's token is cancelled with when its response (or body) is dropped
/// unfinished: `Timeout` within [`DEADLINE_SLACK`] of its deadline, `Dropped` otherwise.
pub(crate) fn drop_reason(deadline: Option<Instant>) -> CancelReason {
    match deadline {
        Some(deadline) if Instant::now() + DEADLINE_SLACK >= deadline => CancelReason::Timeout,
        _ => CancelReason::Dropped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(value: &'static str) -> Option<Duration> {
        let mut headers = HeaderMap::new();
        headers.insert(GRPC_TIMEOUT, HeaderValue::from_static(value));
        parse_grpc_timeout(&headers).ok().flatten()
    }

    #[test]
    fn a_malformed_value_is_an_error_that_names_the_header() {
        for bad in ["", "S", "123456789S", "5x", "-5S", "5 S", "5s", "1.5S"] {
            let mut headers = HeaderMap::new();
            headers.insert(GRPC_TIMEOUT, HeaderValue::from_static(bad));
            let err = parse_grpc_timeout(&headers).unwrap_err();
            assert_eq!(err.value(), bad);
            assert!(
                err.to_string().starts_with("invalid grpc-timeout header"),
                "{err}"
            );
        }
        assert_eq!(parse_grpc_timeout(&HeaderMap::new()), Ok(None));
    }

    #[test]
    fn every_unit_parses_and_malformed_values_are_no_deadline() {
        assert_eq!(parsed("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(parsed("3M"), Some(Duration::from_secs(180)));
        assert_eq!(parsed("4S"), Some(Duration::from_secs(4)));
        assert_eq!(parsed("5m"), Some(Duration::from_millis(5)));
        assert_eq!(parsed("6u"), Some(Duration::from_micros(6)));
        assert_eq!(parsed("7n"), Some(Duration::from_nanos(7)));
        assert_eq!(parsed("99999999S"), Some(Duration::from_secs(99_999_999)));
        for bad in ["", "S", "123456789S", "5x", "-5S", "5 S", "5s", "1.5S"] {
            assert_eq!(parsed(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn formatting_takes_the_finest_unit_that_fits_and_round_trips() {
        for (left, text) in [
            (Duration::from_nanos(0), "1n"),
            (Duration::from_nanos(5), "5n"),
            (Duration::from_millis(250), "250000u"),
            (Duration::from_secs(30), "30000000u"),
            (Duration::from_secs(3000), "3000000m"),
            (Duration::from_secs(200_000), "200000S"),
            (Duration::MAX, "99999999H"),
        ] {
            let header = format_grpc_timeout(left);
            assert_eq!(header.to_str().unwrap(), text);
            let mut headers = HeaderMap::new();
            headers.insert(GRPC_TIMEOUT, header);
            let back = parse_grpc_timeout(&headers).unwrap().unwrap();
            assert!(
                back <= left.max(Duration::from_nanos(1)),
                "{left:?} -> {back:?}"
            );
        }
    }
}
