//! When tiermem itself fails (a panic of one of its threads, a pool that cannot grow): the
//! program keeps running with its data, untiered. `Runtime::degrade` stops every move,
//! brings every page home (a staged page moved back, a compressed one decompressed and
//! installed with UFFDIO_COPY, which also wakes a thread waiting on it), unregisters every
//! range (the kernel wakes whoever still waits on a fault there; from then on it serves
//! them itself), and says so in one line. New memory is left to the kernel from then on.
//! Where the pages do not fit back in memory it drains instead (nothing evicted, tier
//! faults still served); a failed userfaultfd always brings them home; a page that does not
//! decompress ends the program with SIGBUS (`page_lost`).
//! docs/runtime.md "When tiermem itself fails".

use super::page::{Page, PageState};
use super::{lock, report_fatal, Runtime};
use crate::sys::PAGE;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The runtime has degraded (or is degrading): nothing is registered or evicted any more.
static DEGRADED: AtomicBool = AtomicBool::new(false);
/// Tiering stopped without bringing the pages home (not enough memory): the fault threads
/// go on serving tier faults, nothing is evicted.
static DRAINING: AtomicBool = AtomicBool::new(false);
/// Memory kept free beyond what the bring-home needs.
const HOME_MARGIN_BYTES: u64 = 32 << 20;
/// The message of the last panic on one of tiermem's threads (the panic hook's).
static PANIC_MSG: Mutex<String> = Mutex::new(String::new());

/// True once the runtime has given up tiering.
#[inline]
pub fn active() -> bool {
    DEGRADED.load(Ordering::Relaxed)
}

/// A panic hook that keeps the message of a panic on tiermem's threads for `degrade`'s
/// line instead of printing it (the program's stderr gets one line, not a Rust backtrace
/// note); any other thread's panic goes to the hook there was.
pub fn install_panic_hook() {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if crate::on_runtime_thread() {
            let msg = match info.payload().downcast_ref::<&str>() {
                Some(s) => s.to_string(),
                None => info
                    .payload()
                    .downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_default(),
            };
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()));
            *PANIC_MSG.lock().unwrap_or_else(|p| p.into_inner()) =
                format!("{msg}{}", at.unwrap_or_default());
        } else {
            prev(info)
        }
    }));
}

/// One of tiermem's threads (`name`) panicked; its unwinding has ended (it holds no lock).
/// Returns whether the thread should run again: a fault thread while tiering drains (the
/// pages still in the pools need it). A fault thread that panics again while draining
/// brings every page home whatever memory it takes (a hang is worse than an OOM kill).
pub fn thread_panicked(rt: &Runtime, name: &str) -> bool {
    let msg = std::mem::take(&mut *PANIC_MSG.lock().unwrap_or_else(|p| p.into_inner()));
    let fault_thread = name.starts_with("tiermem-fault");
    if fault_thread && DRAINING.load(Ordering::SeqCst) {
        rt.bring_home(&format!("{name} panicked again while draining: {msg}"));
        return false;
    }
    rt.degrade(&format!("{name} panicked: {msg}"));
    fault_thread && DRAINING.load(Ordering::SeqCst)
}

/// What is wrong with the userfaultfd, if its poll says it failed (POLLERR, POLLHUP,
/// POLLNVAL: none of which a working one answers), or a failure is injected there.
pub fn uffd_broken(revents: i16) -> Option<String> {
    if crate::inject::fire(crate::inject::Kind::UffdError) {
        return Some(format!("injected uffd-error ({})", crate::inject::VAR));
    }
    let bad = revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL);
    (bad != 0).then(|| format!("poll answered {bad:#x}"))
}

/// Bytes this process may still take: MemAvailable, and below the memory.max of its own
/// cgroup (v2) if it has one.
fn memory_headroom() -> u64 {
    if crate::inject::fire(crate::inject::Kind::LowMemory) {
        return 0;
    }
    let kb = |text: &str, key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|k| k * 1024)
    };
    let mut room = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| kb(&m, "MemAvailable:"))
        .unwrap_or(u64::MAX);
    let cg = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    if let Some(path) = cg.lines().find_map(|l| l.strip_prefix("0::")) {
        let dir = format!("/sys/fs/cgroup{}", path.trim());
        let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).ok();
        if let (Some(max), Some(cur)) = (read("memory.max"), read("memory.current")) {
            if let (Ok(max), Ok(cur)) = (max.trim().parse::<u64>(), cur.trim().parse::<u64>()) {
                room = room.min(max.saturating_sub(cur));
            }
        }
    }
    room
}

impl Runtime {
    /// True once the runtime has given up tiering.
    pub fn degraded(&self) -> bool {
        active()
    }

    /// Give up tiering, keeping every byte (see the module's comment). Once per process;
    /// safe from any of tiermem's threads, with the others running.
    pub fn degrade(&self, reason: &str) {
        if DEGRADED.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut st = lock(self);
        // No move starts from now on (every eviction, sample and range move checks this
        // under the lock); an eviction between its stage and its commit finds its page
        // moved back and discards what it compressed.
        st.frozen = true;
        self.can_make_room.store(false, Ordering::Relaxed);
        // What coming home takes beyond what the pools give back.
        let compressed: u64 = st
            .tiers
            .iter()
            .filter(|t| t.node.is_none())
            .map(|t| t.pages)
            .sum();
        let pools: u64 = st.tiers.iter().map(|t| t.pool.pool_bytes).sum();
        let need = (compressed * PAGE as u64).saturating_sub(pools);
        let room = memory_headroom();
        if need > 0 && need.saturating_add(HOME_MARGIN_BYTES) > room {
            // Drain-only: the pages stay where they are and come home as they are touched
            // (the fault threads go on); a fault a dying fault thread had read and not
            // served is woken to come again.
            DRAINING.store(true, Ordering::SeqCst);
            let hwm = st.hwm as usize;
            drop(st);
            self.uffd.wake(self.arena, hwm * PAGE);
            report_fatal(&format!(
                "tiering stopped: {reason}; not enough memory to bring {} MiB home ({} MiB \
                 available): nothing is evicted any more, {compressed} compressed pages come \
                 home as the program touches them; the program continues",
                need >> 20,
                room >> 20
            ));
            return;
        }
        drop(st);
        self.bring_home(reason);
    }

    /// The userfaultfd failed (seen by a fault thread, which then ends): no fault can be
    /// served through it, so draining is no choice; every page comes home at once (as far
    /// as the userfaultfd still installs them), also when tiering was already draining.
    pub fn uffd_failed(&self, why: &str) {
        if !DEGRADED.swap(true, Ordering::SeqCst) || DRAINING.swap(false, Ordering::SeqCst) {
            self.bring_home(&format!("the userfaultfd failed: {why}"));
        }
    }

    /// Bring every page home and unregister every range (see the module's comment).
    fn bring_home(&self, reason: &str) {
        let mut st = lock(self);
        st.frozen = true;
        self.can_make_room.store(false, Ordering::Relaxed);
        let hwm = st.hwm as usize;
        let tiered: u64 = st
            .tiers
            .iter()
            .filter(|t| t.node.is_none())
            .map(|t| t.pages)
            .sum();
        self.untier_locked(&mut st, self.arena, hwm * PAGE, None);
        let left: u64 = st
            .tiers
            .iter()
            .filter(|t| t.node.is_none())
            .map(|t| t.pages)
            .sum();
        // Every registered run: left to the kernel, as lazy registration leaves new memory.
        let registered = |s: PageState| !matches!(s, PageState::Hole | PageState::Unregistered);
        let mut i = 0;
        let mut unregistered = 0u64;
        while i < hwm {
            if !registered(st.pages[i].state) {
                i += 1;
                continue;
            }
            let mut j = i + 1;
            while j < hwm && registered(st.pages[j].state) {
                j += 1;
            }
            if left > 0 && (i..j).any(|k| matches!(st.pages[k].state, PageState::Compressed { .. }))
            {
                // A page that did not come home stays registered: its fault still comes to
                // the fault thread, which decompresses it.
                i = j;
                continue;
            }
            self.uffd.unregister(self.addr(i), (j - i) * PAGE);
            for k in i..j {
                let f = st.pages[k].flags;
                st.set(k, Page::new(PageState::Unregistered, f));
            }
            unregistered += (j - i) as u64;
            i = j;
        }
        st.unregistered.clear();
        drop(st);
        let kept = if left > 0 {
            format!("; {left} pages could not come home and stay in their tier")
        } else {
            String::new()
        };
        report_fatal(&format!(
            "tiering stopped: {reason}; {} pages brought home, {unregistered} pages \
             unregistered{kept}; the program continues untiered",
            tiered - left
        ));
    }
}

/// The compressed copy of the page at `addr` does not decompress: its bytes are lost, and
/// no answer to the program's access is right (zeros or garbage would be read as its data).
/// The program ends as the kernel ends one that touches memory it cannot read back (an
/// uncorrectable memory error): SIGBUS, with one line saying why. Never returns.
pub fn page_lost(addr: usize) {
    report_fatal(&format!(
        "the compressed page at {addr:#x} does not decompress (corrupt): its bytes are lost; \
         ending the program with SIGBUS rather than let it read wrong bytes"
    ));
    super::log::flush();
    // The default action of SIGBUS, unblocked on this thread only and raised on it: the
    // kernel ends the whole process (no handler of the program's runs on tiermem's thread,
    // which would fault on the page again). `_exit` only if it somehow returns.
    // No memory of the program's is touched.
    // SAFETY: signal, pthread_sigmask, raise and _exit with a local sigset.
    unsafe {
        libc::signal(libc::SIGBUS, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGBUS);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(libc::SIGBUS);
        libc::_exit(128 + libc::SIGBUS);
    }
}
