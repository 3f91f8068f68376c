//! The `grpc-timeout` header: how a gRPC caller says how long it will wait, read on the way in
//! and written on the way out.

use std::time::Duration;

use http::{HeaderMap, HeaderValue};
use tethered::CancelToken;

/// The header's name.
pub const GRPC_TIMEOUT: &str = "grpc-timeout";

/// The most digits the header's value may have (gRPC's `TimeoutValue`).
const MAX_DIGITS: usize = 8;

/// The deadline a request's `grpc-timeout` header sets, if it has a well-formed one: one to
/// eight digits and a unit (`H`, `M`, `S`, `m`, `u`, `n`). A malformed header is no deadline.
///
/// ```
/// use std::time::Duration;
/// use http::{HeaderMap, HeaderValue};
///
/// let mut headers = HeaderMap::new();
/// headers.insert("grpc-timeout", HeaderValue::from_static("250m"));
/// assert_eq!(tethered_tower::parse_grpc_timeout(&headers), Some(Duration::from_millis(250)));
/// headers.insert("grpc-timeout", HeaderValue::from_static("soon"));
/// assert_eq!(tethered_tower::parse_grpc_timeout(&headers), None);
/// ```
pub fn parse_grpc_timeout(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(GRPC_TIMEOUT)?.to_str().ok()?;
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    if digits.is_empty()
        || digits.len() > MAX_DIGITS
        || !digits.bytes().all(|byte| byte.is_ascii_digit())
    {
        return None;
    }
    let amount: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(amount.checked_mul(3600)?),
        "M" => Duration::from_secs(amount.checked_mul(60)?),
        "S" => Duration::from_secs(amount),
        "m" => Duration::from_millis(amount),
        "u" => Duration::from_micros(amount),
        "n" => Duration::from_nanos(amount),
        _ => return None,
    })
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(value: &'static str) -> Option<Duration> {
        let mut headers = HeaderMap::new();
        headers.insert(GRPC_TIMEOUT, HeaderValue::from_static(value));
        parse_grpc_timeout(&headers)
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
            let back = parse_grpc_timeout(&headers).unwrap();
            assert!(
                back <= left.max(Duration::from_nanos(1)),
                "{left:?} -> {back:?}"
            );
        }
    }
}
