//! A named job names the thread it runs on, on any pool, for as long as its closure runs, so
//! that `top -H`, `ps -L` and a debugger show which job a pool thread is busy with.
//!
//! Linux only (`prctl(PR_SET_NAME)` through rustix, without `unsafe`): the kernel keeps 15
//! bytes of a thread's name, so a longer name is cut at a character boundary. Elsewhere, and
//! under loom, naming does nothing. An unnamed job pays nothing: no [`ThreadName`] is made.

/// The calling thread renamed for a job; its old name comes back when this is dropped.
#[must_use = "the thread gets its old name back when this is dropped"]
pub(crate) struct ThreadName {
    #[cfg(all(target_os = "linux", not(tethered_loom)))]
    old: Option<std::ffi::CString>,
}

impl ThreadName {
    /// Names the calling thread `name` (its first 15 bytes). Does nothing if the thread is
    /// already called that (a [`ThreadSpawner`](crate::ThreadSpawner) thread started for this
    /// job), if the name holds a NUL byte, or if the OS refuses.
    #[cfg(all(target_os = "linux", not(tethered_loom)))]
    pub(crate) fn set(name: &str) -> Self {
        let unchanged = ThreadName { old: None };
        if std::thread::current().name() == Some(name) {
            return unchanged;
        }
        let Ok(new) = std::ffi::CString::new(truncated(name)) else {
            return unchanged;
        };
        let Ok(old) = rustix::thread::name() else {
            return unchanged;
        };
        if rustix::thread::set_name(&new).is_err() {
            return unchanged;
        }
        ThreadName { old: Some(old) }
    }

    #[cfg(not(all(target_os = "linux", not(tethered_loom))))]
    pub(crate) fn set(_name: &str) -> Self {
        ThreadName {}
    }
}

impl Drop for ThreadName {
    fn drop(&mut self) {
        #[cfg(all(target_os = "linux", not(tethered_loom)))]
        if let Some(old) = self.old.take() {
            // Nothing to do if this fails: the thread keeps the job's name.
            let _ = rustix::thread::set_name(&old);
        }
    }
}

impl std::fmt::Debug for ThreadName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadName").finish_non_exhaustive()
    }
}

/// The longest prefix of `name` that fits the kernel's 15 bytes, cut at a character boundary.
#[cfg(all(target_os = "linux", not(tethered_loom)))]
fn truncated(name: &str) -> &str {
    const MAX: usize = 15;
    if name.len() <= MAX {
        return name;
    }
    let mut end = MAX;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn os_name() -> String {
        rustix::thread::name()
            .expect("PR_GET_NAME")
            .into_string()
            .expect("a UTF-8 thread name")
    }

    #[test]
    fn a_job_name_is_the_thread_name_while_it_runs_and_the_old_one_comes_back() {
        std::thread::Builder::new()
            .name("pool-worker".into())
            .spawn(|| {
                {
                    let _named = ThreadName::set("render-3");
                    assert_eq!(os_name(), "render-3");
                }
                assert_eq!(os_name(), "pool-worker");
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn a_long_name_is_cut_at_a_character_boundary() {
        assert_eq!(truncated("sandbox-request-12345"), "sandbox-request");
        // 'é' is two bytes: bytes 14 and 15 would split it.
        assert_eq!(truncated("sandbox-reques\u{e9}t"), "sandbox-reques");
        std::thread::spawn(|| {
            let _named = ThreadName::set("sandbox-request-12345");
            assert_eq!(os_name(), "sandbox-request");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_name_with_a_nul_byte_leaves_the_thread_alone() {
        std::thread::Builder::new()
            .name("worker".into())
            .spawn(|| {
                let _named = ThreadName::set("bad\0name");
                assert_eq!(os_name(), "worker");
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
