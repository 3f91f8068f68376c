//! A thread blocked in a `TcpStream` read, where no token check can reach it, unblocked when its
//! deadline (`cancel_after`) cancels it: `token.arm` arms a shutdown of the socket (through a
//! `try_clone` of it) that a cancel runs once, the read returns at once, and the job returns;
//! disarming gives the clone back and guarantees no shutdown comes later. The peer here accepts
//! the connection and never answers, like a stalled upstream.
//!
//! Run with: cargo run --example unblock_socket_read

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use tethered::{CancelReason, CancelToken, NativeError, Tethered};

/// How long a request may take.
const DEADLINE: Duration = Duration::from_millis(200);

/// Sends `request` on `stream` and reads the reply to its end, or until `token` is cancelled:
/// then fails with the cancel (`io::Error::other(Cancelled)`).
pub(crate) fn request(
    mut stream: TcpStream,
    request: &[u8],
    token: &CancelToken,
) -> io::Result<Vec<u8>> {
    // Unblock: a shutdown wakes a read blocked on another thread, and makes any later read
    // return at once, so a cancel that comes before the read starts is not lost either.
    let armed = token.arm(stream.try_clone()?, |shutter, _reason| {
        let _ = shutter.shutdown(Shutdown::Both); // NotConnected: the peer closed it already
    });
    let mut reply = Vec::new();
    let exchanged = stream
        .write_all(request)
        .and_then(|()| stream.read_to_end(&mut reply));
    // Disarmed before anything else: from here on no cancel can shut the socket down, so a
    // stream that is used again (returned to a pool) is safe from a late cancel.
    drop(armed.disarm());
    // A shut-down socket ends the read with Ok (end of stream) or fails the write or the read,
    // depending on the platform and the moment: the token tells a cancel from the peer's end.
    token.check().map_err(io::Error::other)?;
    exchanged.map(|_| reply)
}

/// A peer that accepts one connection and holds it without answering until `hold` has passed.
fn stalled_peer(hold: Duration) -> io::Result<std::net::SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let address = listener.local_addr()?;
    std::thread::spawn(move || {
        if let Ok((connection, _)) = listener.accept() {
            std::thread::sleep(hold);
            drop(connection);
        }
    });
    Ok(address)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The peer would hold the connection for a minute; the process ends long before.
    let address = stalled_peer(Duration::from_secs(60))?;
    let stream = TcpStream::connect(address)?;
    println!("connected to a peer at {address} that never answers; deadline {DEADLINE:?}");

    let started = Instant::now();
    let job = tethered_tokio::spawn_native(move |token| request(stream, b"PING\n", &token));
    // At the deadline the job's token is cancelled with `Timeout`, and the armed shutdown runs;
    // awaiting the job waits until the read has returned.
    job.cancel_after(DEADLINE)?;
    let token = job.token().clone();
    let reply = job.await;
    let deadline = token.deadline().ok_or("the job has a deadline")?;
    let cancel_to_return = deadline.elapsed();
    let err = match reply {
        Err(NativeError::Cancelled {
            reason: CancelReason::Timeout,
            returned: Some(returned),
            ..
        }) => match *returned {
            Err(err) => err,
            Ok(value) => {
                return Err(format!("the peer never answers: finished with {value:?}").into());
            }
        },
        other => return Err(format!("the peer never answers: {other:?}").into()),
    };
    println!(
        "the blocking read ended after {:.1?}: {err}",
        started.elapsed()
    );
    println!("cancel to return: {cancel_to_return:.2?}");
    println!("native jobs still running: {}", tethered::stats().running);
    Ok(())
}
