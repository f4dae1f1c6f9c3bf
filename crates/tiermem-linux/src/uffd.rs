//! userfaultfd: the raw ABI (system headers here are 6.1, so the newer constants such as
//! UFFDIO_MOVE are defined here) and a thin safe wrapper.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

pub const UFFD_API: u64 = 0xAA;
pub const UFFD_FEATURE_MOVE: u64 = 1 << 16;
pub const UFFD_EVENT_PAGEFAULT: u8 = 0x12;
pub const UFFD_PAGEFAULT_FLAG_WRITE: u64 = 1 << 0;
pub const UFFDIO_REGISTER_MODE_MISSING: u64 = 1 << 0;
pub const UFFDIO_COPY_MODE_DONTWAKE: u64 = 1 << 0;
pub const UFFDIO_MOVE_MODE_DONTWAKE: u64 = 1 << 0;
pub const UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES: u64 = 1 << 1;

const fn iowr(nr: u64, size: u64) -> u64 {
    (3 << 30) | (size << 16) | (0xAA << 8) | nr
}
const fn ior(nr: u64, size: u64) -> u64 {
    (2 << 30) | (size << 16) | (0xAA << 8) | nr
}
pub const UFFDIO_API: u64 = iowr(0x3F, 24);
pub const UFFDIO_REGISTER: u64 = iowr(0x00, 32);
pub const UFFDIO_UNREGISTER: u64 = ior(0x01, 16);
pub const UFFDIO_WAKE: u64 = ior(0x02, 16);
pub const UFFDIO_COPY: u64 = iowr(0x03, 40);
pub const UFFDIO_ZEROPAGE: u64 = iowr(0x04, 32);
pub const UFFDIO_MOVE: u64 = iowr(0x05, 40);

#[repr(C)]
#[derive(Default)]
struct Api {
    api: u64,
    features: u64,
    ioctls: u64,
}
#[repr(C)]
#[derive(Default)]
struct Range {
    start: u64,
    len: u64,
}
#[repr(C)]
#[derive(Default)]
struct Register {
    range: Range,
    mode: u64,
    ioctls: u64,
}
#[repr(C)]
#[derive(Default)]
struct Copy {
    dst: u64,
    src: u64,
    len: u64,
    mode: u64,
    copy: i64,
}
#[repr(C)]
#[derive(Default)]
struct ZeroPage {
    range: Range,
    mode: u64,
    zeropage: i64,
}
#[repr(C)]
#[derive(Default)]
struct Move {
    dst: u64,
    src: u64,
    len: u64,
    mode: u64,
    moved: i64,
}

/// One message read from the descriptor (struct uffd_msg, 32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct Msg {
    pub event: u8,
    pub reserved1: u8,
    pub reserved2: u16,
    pub reserved3: u32,
    pub flags: u64,
    pub address: u64,
    pub extra: u64,
}

/// The device node of Linux 6.1+ (`USERFAULTFD_IOC_NEW`): whoever may open it gets a
/// userfaultfd that handles kernel-mode faults too, with no capability and whatever
/// `vm.unprivileged_userfaultfd` says; the administrator grants it to a group.
pub const DEV: &str = "/dev/userfaultfd";
/// `_IO(0xAA, 0x00)` (linux/userfaultfd.h): a new userfaultfd from the device's fd.
const USERFAULTFD_IOC_NEW: u64 = 0xAA00;

/// Why a userfaultfd could not be created, in words an operator can act on: both ways to
/// get one (the device node; the system call) and what each needs.
pub fn permission_hint() -> String {
    let setting = std::fs::read_to_string("/proc/sys/vm/unprivileged_userfaultfd")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    let dev = match std::fs::metadata(DEV) {
        Ok(_) => format!("{DEV} is not open to this user"),
        Err(_) => format!("this kernel has no {DEV}"),
    };
    format!(
        "userfaultfd is not permitted for this user ({dev}, and the userfaultfd system call \
         is refused: vm.unprivileged_userfaultfd = {setting}, or a seccomp filter); fix: give \
         the user {DEV} (a group and a udev rule, docs/runtime.md \"Unprivileged users\"), or \
         `sudo sysctl -w vm.unprivileged_userfaultfd=1`, or run as root / with CAP_SYS_PTRACE"
    )
}

/// A userfaultfd from the device node (`O_CLOEXEC | O_NONBLOCK`), at the number the device's
/// fd had (the lowest free one, as the system call's would be).
fn open_dev() -> io::Result<i32> {
    // SAFETY: open(2) of a NUL-terminated path literal.
    let dev = unsafe { libc::open(c"/dev/userfaultfd".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if dev < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: USERFAULTFD_IOC_NEW takes the new descriptor's flags as its argument.
    let fd = unsafe {
        libc::ioctl(dev, USERFAULTFD_IOC_NEW as _, libc::O_CLOEXEC | libc::O_NONBLOCK)
    };
    let e = io::Error::last_os_error();
    if fd < 0 {
        // SAFETY: closes the device fd opened above, ours alone.
        unsafe { libc::close(dev) };
        return Err(e);
    }
    // dup3 onto the device fd's number closes that fd and keeps the userfaultfd there
    // (close-on-exec as it was); the ioctl's fd is then closed.
    // SAFETY: both fds are ours (opened above).
    unsafe {
        if libc::dup3(fd, dev, libc::O_CLOEXEC) == dev {
            libc::close(fd);
            Ok(dev)
        } else {
            libc::close(dev);
            Ok(fd)
        }
    }
}

#[derive(Debug)]
pub struct Uffd {
    pub fd: i32,
    /// UFFDIO_MOVE answers found wrong by `moved_anyway` (pages moved under an error).
    pub misreported_moves: AtomicU64,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Op {
    Done,
    /// The destination already had a page (a stale fault message) — not an error for faults.
    Exists,
    /// Source had no page (MOVE) or the range has no VMA any more.
    NoEnt,
    /// The page cannot be moved (shared with a forked child, pinned).
    Busy,
    Err(i32),
}

fn op_result(r: i64) -> Op {
    if r == 0 {
        return Op::Done;
    }
    op_of_errno(crate::sys::errno())
}

fn op_of_errno(e: i32) -> Op {
    match e {
        libc::EEXIST => Op::Exists,
        libc::ENOENT => Op::NoEnt,
        libc::EBUSY => Op::Busy,
        _ => Op::Err(e),
    }
}

impl Uffd {
    /// Create a userfaultfd (kernel faults included: read(2) into an evicted page must work).
    /// From /dev/userfaultfd when this user may open it, else with the system call (which
    /// needs root, CAP_SYS_PTRACE or `vm.unprivileged_userfaultfd = 1`, and which container
    /// seccomp profiles refuse). Either error is the system call's: EPERM when neither way
    /// is open (`permission_hint` then names both fixes).
    pub fn open() -> io::Result<Uffd> {
        let fd = match open_dev() {
            Ok(fd) => fd,
            Err(_) => {
                // SAFETY: userfaultfd(2) only creates a descriptor.
                let fd = unsafe {
                    libc::syscall(libc::SYS_userfaultfd, libc::O_CLOEXEC | libc::O_NONBLOCK)
                } as i32;
                if fd < 0 {
                    return Err(io::Error::last_os_error());
                }
                fd
            }
        };
        let mut api = Api {
            api: UFFD_API,
            features: UFFD_FEATURE_MOVE,
            ioctls: 0,
        };
        // SAFETY: `api` is a local uffdio_api, as UFFDIO_API expects.
        let r = unsafe { libc::ioctl(fd, UFFDIO_API as _, &mut api) };
        if r != 0 {
            let e = io::Error::last_os_error();
            // SAFETY: closes the descriptor opened above, owned by no one else.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        Ok(Uffd {
            fd,
            misreported_moves: AtomicU64::new(0),
        })
    }

    pub fn register(&self, start: usize, len: usize) -> io::Result<()> {
        let mut reg = Register {
            range: Range {
                start: start as u64,
                len: len as u64,
            },
            mode: UFFDIO_REGISTER_MODE_MISSING,
            ioctls: 0,
        };
        // SAFETY: `reg` is a local uffdio_register, as UFFDIO_REGISTER expects.
        let r = unsafe { libc::ioctl(self.fd, UFFDIO_REGISTER as _, &mut reg) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn unregister(&self, start: usize, len: usize) -> Op {
        let mut rg = Range {
            start: start as u64,
            len: len as u64,
        };
        // SAFETY: `rg` is a local uffdio_range, as UFFDIO_UNREGISTER expects.
        op_result(unsafe { libc::ioctl(self.fd, UFFDIO_UNREGISTER as _, &mut rg) } as i64)
    }

    pub fn wake(&self, start: usize, len: usize) -> Op {
        let mut rg = Range {
            start: start as u64,
            len: len as u64,
        };
        // SAFETY: `rg` is a local uffdio_range, as UFFDIO_WAKE expects.
        op_result(unsafe { libc::ioctl(self.fd, UFFDIO_WAKE as _, &mut rg) } as i64)
    }

    /// Install a copy of `src` (len bytes) at `dst`, waking faulting threads. A short copy
    /// goes on from where the kernel stopped (`copy_run`): restarting at `dst` would find
    /// the pages just installed and answer EEXIST for a copy that was making progress.
    pub fn copy(&self, dst: usize, src: *const u8, len: usize) -> Op {
        self.copy_run(dst, src, len).1
    }

    /// Map the shared zero page over [start, start+len). The runtime never does (a zero
    /// page entry is what Linux 6.18 misreports moves of: `moved_anyway`); tests use it to
    /// recreate that entry.
    pub fn zeropage(&self, start: usize, len: usize) -> Op {
        let mut z = ZeroPage {
            range: Range {
                start: start as u64,
                len: len as u64,
            },
            mode: 0,
            zeropage: 0,
        };
        // SAFETY: `z` is a local uffdio_zeropage, as UFFDIO_ZEROPAGE expects.
        op_result(unsafe { libc::ioctl(self.fd, UFFDIO_ZEROPAGE as _, &mut z) } as i64)
    }

    /// Atomically move the page(s) at `src` to `dst` (dst must be registered and empty);
    /// `mv_run`'s answer, checked as it is.
    pub fn mv(&self, dst: usize, src: usize, len: usize, wake: bool) -> Op {
        self.mv_run(dst, src, len, wake).1
    }

    /// Move the run of pages at `src` to `dst` (`len` bytes) with as few UFFDIO_MOVE calls
    /// as the kernel allows: one, unless it stops partway. It then reports the bytes moved
    /// (EAGAIN, `move` > 0) and the next call starts after them; an error on a page ends the
    /// run there. Returns (bytes moved, how the run ended, ioctl calls made).
    ///
    /// An error is checked before it is believed (`moved_anyway`): Linux 6.18 can move a page
    /// and still answer EEXIST, or count fewer bytes than it moved. Taken at its word, the
    /// runtime dropped the slot that held the page's data as a stale one, then found the
    /// page's home empty (ENOENT) and served zeros for it: the data loss of
    /// `eight_python_threads_building_dicts_match_a_plain_run` and tests/c/alloc_race.c.
    pub fn mv_run(&self, dst: usize, src: usize, len: usize, wake: bool) -> (usize, Op, u64) {
        let mode = if wake { 0 } else { UFFDIO_MOVE_MODE_DONTWAKE };
        let (mut done, mut calls) = (0usize, 0u64);
        while calls < 10_000 {
            let mut m = Move {
                dst: (dst + done) as u64,
                src: (src + done) as u64,
                len: (len - done) as u64,
                mode,
                moved: 0,
            };
            calls += 1;
            // SAFETY: `m` is a local uffdio_move; the kernel checks both ranges (they must be
            // registered or ours).
            let r = unsafe { libc::ioctl(self.fd, UFFDIO_MOVE as _, &mut m) } as i64;
            if r == 0 {
                return (len, Op::Done, calls);
            }
            let e = crate::sys::errno();
            if m.moved > 0 {
                done = (done + m.moved as usize).min(len);
                if done == len {
                    return (len, Op::Done, calls);
                }
                continue;
            }
            if e == libc::EAGAIN {
                continue;
            }
            if matches!(e, libc::EEXIST | libc::ENOENT) {
                let more = moved_anyway(src + done, dst + done, (len - done) / crate::sys::PAGE);
                if more > 0 {
                    self.misreported_moves.fetch_add(1, Ordering::Relaxed);
                    let bytes = more * crate::sys::PAGE;
                    if wake {
                        // The failed call woke no one for the pages it did move.
                        self.wake(dst + done, bytes);
                    }
                    done += bytes;
                    if done == len {
                        return (len, Op::Done, calls);
                    }
                    continue;
                }
            }
            return (done, op_of_errno(e), calls);
        }
        (done, Op::Err(libc::EAGAIN), calls)
    }

    /// Install a copy of the `len` bytes at `src` over the empty run at `dst` with as few
    /// UFFDIO_COPY calls as the kernel allows (as `mv_run`), waking faulting threads.
    /// Returns (bytes installed, how the run ended, ioctl calls made).
    pub fn copy_run(&self, dst: usize, src: *const u8, len: usize) -> (usize, Op, u64) {
        let (mut done, mut calls) = (0usize, 0u64);
        while calls < 10_000 {
            let mut c = Copy {
                dst: (dst + done) as u64,
                src: src as u64 + done as u64,
                len: (len - done) as u64,
                mode: 0,
                copy: 0,
            };
            calls += 1;
            // SAFETY: `c` is a local uffdio_copy; the kernel reads `len - done` bytes at
            // `src + done`, within the `len` bytes the caller provides.
            let r = unsafe { libc::ioctl(self.fd, UFFDIO_COPY as _, &mut c) } as i64;
            if r == 0 {
                return (len, Op::Done, calls);
            }
            let e = crate::sys::errno();
            if c.copy > 0 {
                done = (done + c.copy as usize).min(len);
                if done == len {
                    return (len, Op::Done, calls);
                }
                continue;
            }
            if e != libc::EAGAIN {
                return (done, op_of_errno(e), calls);
            }
        }
        (done, Op::Err(libc::EAGAIN), calls)
    }

    /// Read pending messages without blocking; returns how many were read.
    pub fn read_msgs(&self, out: &mut [Msg]) -> usize {
        // SAFETY: `out` is a live slice of Msg, and at most its size in bytes is read into it.
        let r = unsafe {
            libc::read(
                self.fd,
                out.as_mut_ptr() as *mut libc::c_void,
                std::mem::size_of_val(out),
            )
        };
        if r <= 0 {
            0
        } else {
            r as usize / std::mem::size_of::<Msg>()
        }
    }
}

impl Drop for Uffd {
    fn drop(&mut self) {
        // SAFETY: closes our descriptor once, when the Uffd is dropped.
        unsafe { libc::close(self.fd) };
    }
}

/// How many of the `n` pages from `src` a failed UFFDIO_MOVE to `dst` moved anyway: the
/// leading pages whose source has no page table entry and whose destination has one
/// (mincore(2) on these private anonymous ranges reports exactly that).
///
/// Why: in Linux 6.18 `move_pages()` keeps the -EAGAIN of a step that had to retry (a source
/// entry that changed under it, e.g. a zero page replaced by a concurrent write) through the
/// next step, which succeeds; the loop then retries the destination it has just filled,
/// fails there with EEXIST and leaves that page out of the count. Measured here: 136 of
/// 30 000 single-page moves of a zero-page source with a writer on it answered EEXIST with
/// the page moved (none with an ordinary page). Both ranges are the caller's and stable:
/// every move of the runtime happens under its state lock.
fn moved_anyway(src: usize, dst: usize, n: usize) -> usize {
    let page = crate::sys::PAGE;
    let (mut s, mut d) = (vec![0u8; n], vec![0u8; n]);
    // SAFETY: both vectors hold one byte per page of the ranges queried, as mincore writes.
    let ok = unsafe {
        libc::mincore(src as *mut libc::c_void, n * page, s.as_mut_ptr()) == 0
            && libc::mincore(dst as *mut libc::c_void, n * page, d.as_mut_ptr()) == 0
    };
    if !ok {
        return 0;
    }
    s.iter()
        .zip(&d)
        .take_while(|&(&s, &d)| s & 1 == 0 && d & 1 == 1)
        .count()
}
