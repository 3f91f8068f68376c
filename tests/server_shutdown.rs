//! The server recipe (`examples/server.rs`) under load, sent SIGTERM: 20 concurrent requests,
//! one of them stuck in a native call that never looks at its token, and a 5 s overall
//! deadline. The process exits within 6 s, every other request is answered, and the report
//! names the stuck job.

#![cfg(unix)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary knows its path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary sits in target/<profile>/deps");
    let path = profile_dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --examples` (or all of `cargo test`) first",
        path.display()
    );
    path
}

/// Sends `GET path` and reads the whole answer (the server closes after it).
fn get(address: &str, path: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

#[test]
fn sigterm_under_load_exits_within_the_deadline_and_names_the_stuck_job() {
    let mut server = Command::new(example("server"))
        .arg("5")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the example server starts");
    let mut stdout = BufReader::new(server.stdout.take().expect("piped"));
    let mut line = String::new();
    stdout
        .read_line(&mut line)
        .expect("it says where it listens");
    let address = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned();

    // One stuck request, nineteen that take 300 ms each, four at a time.
    let mut clients = Vec::new();
    let stuck_address = address.clone();
    clients.push(std::thread::spawn(move || get(&stuck_address, "/stuck")));
    std::thread::sleep(Duration::from_millis(100)); // the stuck job takes its slot first
    for _ in 0..19 {
        let address = address.clone();
        clients.push(std::thread::spawn(move || get(&address, "/work/300")));
    }
    std::thread::sleep(Duration::from_millis(200));

    let signalled = Instant::now();
    let _ = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status();
    let status = loop {
        if let Some(status) = server.try_wait().expect("waitable") {
            break status;
        }
        if signalled.elapsed() > Duration::from_secs(20) {
            let _ = server.kill();
            let _ = server.wait();
            panic!("the server still ran 20 s after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = signalled.elapsed();
    let mut rest = String::new();
    let _ = stdout.read_to_string(&mut rest);
    println!(
        "exited {status} {took:.1?} after SIGTERM; it said: {}",
        rest.trim()
    );
    assert!(status.success(), "{status}");
    assert!(
        took < Duration::from_secs(6),
        "exited {took:?} after SIGTERM"
    );
    assert!(rest.contains("shutdown on SIGTERM"), "{rest}");
    assert!(
        rest.contains("still running: ") && rest.contains("\"stuck-job\""),
        "{rest}"
    );

    // Every request but the stuck one was answered: done, or stopped by the shutdown.
    let answers: Vec<_> = clients
        .into_iter()
        .map(|client| client.join().unwrap())
        .collect();
    let answered = answers[1..]
        .iter()
        .filter(|answer| {
            // Done (200), or stopped by the shutdown: the layer's 503.
            answer.as_ref().is_ok_and(|text| {
                text.starts_with("HTTP/1.1 200 ") || text.starts_with("HTTP/1.1 503 ")
            })
        })
        .count();
    assert_eq!(answered, 19, "{answers:#?}");
}
