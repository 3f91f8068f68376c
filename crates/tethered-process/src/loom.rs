//! What the loom models in `loom-tests/` drive: the supervisor's shared state, with the
//! children and the wake channel replaced by plain values. Built only under
//! `--cfg tethered_loom`; not part of the API.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;

use loom::sync::atomic::{AtomicBool, Ordering};
use tethered::Completer;

use crate::launch::Launch;
use crate::output::ProcessOutput;
use crate::supervisor::{Entry, Inbox};

/// A child as the inbox sees it: its id, its job's cancel flag, and whether its stop began.
#[derive(Debug)]
pub struct ModelChild {
    /// Its id.
    pub id: u64,
    /// Its job's token, reduced to the flag.
    pub cancelled: Arc<AtomicBool>,
    /// Whether the supervisor began its stop.
    pub stopped: bool,
}

impl Entry for ModelChild {
    fn id(&self) -> u64 {
        self.id
    }

    fn is_cancelled(&self) -> bool {
        // ORDERING: SeqCst, as a token's flag is read by the supervisor: the models check the
        // inbox's logic, not this stand-in's ordering.
        self.cancelled.load(Ordering::SeqCst)
    }

    fn stop(&mut self) {
        self.stopped = true;
    }
}

/// The supervisor's inbox.
#[allow(missing_debug_implementations)]
pub struct ModelInbox(Inbox<ModelChild>);

impl ModelInbox {
    /// An empty inbox.
    pub fn new() -> Self {
        ModelInbox(Inbox::new())
    }

    /// A spawning thread posts a child; `true` if it must write the wake byte.
    pub fn post(&self, child: ModelChild) -> bool {
        self.0.post(child)
    }

    /// A cancel callback posts a cancel; `true` if it must write the wake byte.
    pub fn cancel(&self, id: u64) -> bool {
        self.0.cancel(id)
    }

    /// One turn of the supervisor after `poll` returned: `drain` empties the wake channel,
    /// then the mail is delivered into `children`.
    pub fn turn(&self, drain: impl FnOnce(), children: &mut HashMap<u64, ModelChild>) {
        self.0.collect(drain).deliver(children);
    }
}

impl Default for ModelInbox {
    fn default() -> Self {
        Self::new()
    }
}

/// What a `ProcessJob` knows of its child.
#[allow(missing_debug_implementations)]
pub struct ModelLaunch(Arc<Launch>);

impl ModelLaunch {
    /// A launch still waiting for its child.
    pub fn new() -> Self {
        ModelLaunch(Launch::new())
    }

    /// The start failed with `err`; `completer` is the job's.
    pub fn failed(&self, err: io::Error, completer: Completer<ProcessOutput>) {
        self.0.failed(err, Some(completer));
    }

    /// The spawn hands the job out: the start's error if it failed before.
    pub fn hand_out(&self) -> io::Result<()> {
        self.0.hand_out()
    }
}

impl Default for ModelLaunch {
    fn default() -> Self {
        Self::new()
    }
}
