//! The demo's command line, parsed by hand: `--name value` or `--name=value`.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// What `--help` prints.
pub(crate) const USAGE: &str = "\
Runs sandbox-like jobs behind a timeout on tokio twice: the naive way (spawn_blocking with a stop
flag that nothing sets when the timeout drops the future) and with tethered (spawn_native and
the job's own timeout). Prints what each way leaves behind and writes an SVG chart.

Usage: cargo run --release --example leak_demo -- [OPTIONS]

Options:
      --jobs <N>          sandbox jobs per run [default: 16]
      --timeout <TIME>    each job's timeout, e.g. 300ms or 1.5s [default: 300ms]
      --pool <N>          tokio's max_blocking_threads for each run, 1 to 64 [default: 4]
      --observe <TIME>    how long to watch after the timeouts [default: 1s]
      --out <PATH>        where to write the SVG chart [default: target/leak_demo.svg]
  -h, --help              print this help
";

/// The demo's settings.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    pub(crate) jobs: usize,
    pub(crate) timeout: Duration,
    pub(crate) pool: usize,
    pub(crate) observe: Duration,
    /// `None`: the default, next to the build's `target` directory.
    pub(crate) out: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            jobs: 16,
            timeout: Duration::from_millis(300),
            pool: 4,
            observe: Duration::from_secs(1),
            out: None,
        }
    }
}

/// What the command line asks for.
#[derive(Debug)]
pub(crate) enum Command {
    Run(Options),
    Help,
}

/// A command line the demo cannot run with.
#[derive(Debug)]
pub(crate) enum ArgError {
    /// An argument that is no option of the demo.
    Unknown(String),
    /// An option given without its value.
    MissingValue(&'static str),
    /// An option's value is not what it takes.
    Invalid {
        option: &'static str,
        value: String,
        expected: &'static str,
    },
    /// An argument that is not valid UTF-8.
    NotUnicode(OsString),
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgError::Unknown(arg) => write!(f, "unknown argument '{arg}'"),
            ArgError::MissingValue(option) => write!(f, "{option} needs a value"),
            ArgError::Invalid {
                option,
                value,
                expected,
            } => write!(f, "{option} takes {expected}, not '{value}'"),
            ArgError::NotUnicode(arg) => write!(f, "argument {arg:?} is not valid UTF-8"),
        }
    }
}

impl std::error::Error for ArgError {}

/// Parses the arguments after the program's name.
pub(crate) fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, ArgError> {
    let mut options = Options::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let arg = arg.into_string().map_err(ArgError::NotUnicode)?;
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => {
                (name.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        let option: &'static str = match name.as_str() {
            "-h" | "--help" if inline.is_none() => return Ok(Command::Help),
            "--jobs" => "--jobs",
            "--timeout" => "--timeout",
            "--pool" => "--pool",
            "--observe" => "--observe",
            "--out" => "--out",
            _ => return Err(ArgError::Unknown(arg)),
        };
        let value = match inline {
            Some(value) => value,
            None => match args.next() {
                Some(value) => value.into_string().map_err(ArgError::NotUnicode)?,
                None => return Err(ArgError::MissingValue(option)),
            },
        };
        match option {
            "--jobs" => {
                options.jobs = count(option, &value, 100_000, "a whole number from 1 to 100000")?;
            }
            "--pool" => {
                // Every pool thread of the naive run ends up spinning until the demo exits.
                options.pool = count(option, &value, 64, "a whole number from 1 to 64")?;
            }
            "--timeout" => options.timeout = duration(option, &value)?,
            "--observe" => {
                options.observe = duration(option, &value)?;
                if options.observe < Duration::from_millis(50) {
                    return Err(ArgError::Invalid {
                        option,
                        value,
                        expected: "at least 50ms",
                    });
                }
            }
            _ if value.is_empty() => return Err(ArgError::MissingValue(option)),
            _ => options.out = Some(PathBuf::from(value)),
        }
    }
    Ok(Command::Run(options))
}

/// A whole number from 1 to `max`.
fn count(
    option: &'static str,
    value: &str,
    max: usize,
    expected: &'static str,
) -> Result<usize, ArgError> {
    value
        .parse()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| ArgError::Invalid {
            option,
            value: value.to_owned(),
            expected,
        })
}

/// `250ms`, `2s` or `1.5s`, from 1 ms to 60 s.
fn duration(option: &'static str, value: &str) -> Result<Duration, ArgError> {
    let invalid = || ArgError::Invalid {
        option,
        value: value.to_owned(),
        expected: "a time from 1ms to 60s with its unit, like 300ms or 1.5s",
    };
    let (number, unit_secs) = if let Some(ms) = value.strip_suffix("ms") {
        (ms, 0.001)
    } else if let Some(s) = value.strip_suffix('s') {
        (s, 1.0)
    } else {
        return Err(invalid());
    };
    let number: f64 = number.parse().map_err(|_| invalid())?;
    let secs = number * unit_secs;
    if !(0.001..=60.0).contains(&secs) {
        return Err(invalid());
    }
    Ok(Duration::from_secs_f64(secs))
}
