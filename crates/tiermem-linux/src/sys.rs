//! Raw system calls. The runtime lives inside a program whose `mmap`, `munmap`, `madvise`
//! and malloc family are interposed by the preload shim, so everything the runtime does to
//! memory goes straight to the kernel through `syscall(2)`, never through those symbols.

use std::io;

pub const PAGE: usize = 4096;

pub fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Set this thread's errno (a libc function's failure, answered without a system call).
pub fn set_errno(e: i32) {
    // SAFETY: __errno_location returns this thread's errno slot, valid for writes.
    unsafe { *libc::__errno_location() = e };
}

/// # Safety
/// Same contract as mmap(2).
pub unsafe fn mmap(addr: usize, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> isize {
    // SAFETY: the caller upholds mmap(2)'s contract (this fn's # Safety).
    unsafe {
        libc::syscall(
            libc::SYS_mmap,
            addr,
            len,
            prot as i64,
            flags as i64,
            fd as i64,
            off,
        ) as isize
    }
}

/// Anonymous private read/write memory straight from the kernel.
pub fn map_anon(len: usize) -> io::Result<usize> {
    // SAFETY: a new anonymous mapping at an address the kernel picks; no existing memory is
    // touched.
    let r = unsafe {
        mmap(
            0,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// # Safety
/// Same contract as munmap(2).
pub unsafe fn munmap(addr: usize, len: usize) -> i32 {
    // SAFETY: the caller upholds munmap(2)'s contract (this fn's # Safety).
    unsafe { libc::syscall(libc::SYS_munmap, addr, len) as i32 }
}

/// # Safety
/// Same contract as madvise(2).
pub unsafe fn madvise(addr: usize, len: usize, advice: i32) -> i32 {
    // SAFETY: the caller upholds madvise(2)'s contract (this fn's # Safety).
    unsafe { libc::syscall(libc::SYS_madvise, addr, len, advice as i64) as i32 }
}

/// # Safety
/// Same contract as mremap(2).
pub unsafe fn mremap(
    old: usize,
    old_len: usize,
    new_len: usize,
    flags: i32,
    new_addr: usize,
) -> isize {
    // SAFETY: the caller upholds mremap(2)'s contract (this fn's # Safety).
    unsafe {
        libc::syscall(
            libc::SYS_mremap,
            old,
            old_len,
            new_len,
            flags as i64,
            new_addr,
        ) as isize
    }
}

/// # Safety
/// Same contract as mprotect(2).
pub unsafe fn mprotect(addr: usize, len: usize, prot: i32) -> i32 {
    // SAFETY: the caller upholds mprotect(2)'s contract (this fn's # Safety).
    unsafe { libc::syscall(libc::SYS_mprotect, addr, len, prot as i64) as i32 }
}

pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a local timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Wait while `*word == expected`, at most `timeout_ns` (spurious returns are fine).
pub fn futex_wait(word: &std::sync::atomic::AtomicU32, expected: u32, timeout_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `word` is a live, aligned u32; FUTEX_WAIT only reads it.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &ts as *const libc::timespec,
        )
    };
}

/// Wake every waiter on `word`.
pub fn futex_wake(word: &std::sync::atomic::AtomicU32) {
    // SAFETY: `word` is a live, aligned u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        )
    };
}

pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and no memory effects.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// The CPUs this thread may run on (sched_getaffinity), in order; empty if unknown.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `set` is a zeroed local cpu_set_t of the size passed.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Pin the calling thread to CPU `cpu`; false if the kernel refused (the CPU left the
/// allowed set meanwhile): the thread then stays where it may run.
pub fn pin_to_cpu(cpu: usize) -> bool {
    // `cpu` < CPU_SETSIZE: it came from `allowed_cpus`.
    // SAFETY: `set` is a zeroed local cpu_set_t of the size passed, `cpu` within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// CPU time (ns) a thread of this process has used, from /proc/self/task/TID/schedstat.
pub fn thread_cpu_ns(tid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

pub fn page_down(a: usize) -> usize {
    a & !(PAGE - 1)
}
/// `a` rounded up to a page; saturates at the last page boundary instead of wrapping
/// (callers clamp it to the arena).
pub fn page_up(a: usize) -> usize {
    a.saturating_add(PAGE - 1) & !(PAGE - 1)
}

/// [`page_up`], or None where rounding up would overflow.
pub fn checked_page_up(a: usize) -> Option<usize> {
    a.checked_add(PAGE - 1).map(|b| b & !(PAGE - 1))
}

/// For each of the `n` pages from `a`, whether it holds data: its /proc/self/pagemap entry
/// is present (bit 63) or swapped (bit 62). A page read but never written maps the shared
/// zero page, which is present: it counts as data (zeros), as the kernel would keep it.
/// Where the pagemap cannot be read, every page counts as holding data (never dropped).
pub fn pagemap_has_data(a: usize, n: usize) -> Vec<bool> {
    const PRESENT: u64 = 1 << 63;
    const SWAPPED: u64 = 1 << 62;
    let mut out = vec![true; n];
    let path = c"/proc/self/pagemap";
    // SAFETY: a NUL-terminated path; the fd is closed below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return out;
    }
    let mut buf = vec![0u64; n.min(4096)];
    let mut done = 0;
    while done < n {
        let k = (n - done).min(buf.len());
        let off = ((a / PAGE + done) * 8) as libc::off_t;
        // SAFETY: `buf` holds at least `k` u64s, i.e. `k * 8` writable bytes.
        let r = unsafe { libc::pread(fd, buf.as_mut_ptr() as *mut libc::c_void, k * 8, off) };
        if r <= 0 {
            break;
        }
        let got = r as usize / 8;
        for (o, e) in out[done..done + got].iter_mut().zip(&buf[..got]) {
            *o = e & (PRESENT | SWAPPED) != 0;
        }
        done += got;
    }
    // SAFETY: `fd` was opened above and is closed once.
    unsafe { libc::close(fd) };
    out
}
