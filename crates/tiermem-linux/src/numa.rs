//! NUMA nodes as Linux exposes them: the system calls that place pages on a node
//! (move_pages(2), mbind(2), getcpu(2): the libc crate has their numbers, not wrappers) and
//! what sysfs says about each node (online, memory, CPUs, HMAT latency/bandwidth).
//!
//! Node tiers (`kind = "node"`, docs/running-on-cxl.md) hold their pages on a node with
//! move_pages; new managed memory is bound to the DRAM node with mbind.

use std::io;

/// move_pages(2) flag: move only pages mapped by this process alone (a page shared with a
/// fork child answers -EACCES and stays where it is).
pub const MPOL_MF_MOVE: i32 = 1 << 1;
/// mbind(2) mode: allocate on the given node, fall back to others when it is full.
pub const MPOL_PREFERRED: i32 = 1;
/// Longest address list handed to one move_pages call (the kernel batches internally;
/// this bounds our buffers, one 2 MiB range move is 512).
pub const MOVE_BATCH: usize = 512;

const NODE_SYSFS: &str = "/sys/devices/system/node";

/// move_pages(2) on process `pid` (0: this one): for each address, move its page to
/// `nodes[k]` (or, with `nodes` empty, only report its node) and write the page's node or
/// a negative errno to `status[k]`. Returns the call's result (0, or -errno for the call).
pub fn move_pages(pid: i32, addrs: &[usize], nodes: &[i32], status: &mut [i32], flags: i32) -> i64 {
    assert!(status.len() >= addrs.len() && (nodes.is_empty() || nodes.len() >= addrs.len()));
    let nodes_ptr = if nodes.is_empty() {
        std::ptr::null()
    } else {
        nodes.as_ptr()
    };
    // SAFETY: `addrs`, `nodes` and `status` are live slices of at least `addrs.len()`
    // elements (asserted); the kernel reads the first two and writes `status` only. The
    // addresses are not dereferenced by us: the kernel checks them against `pid`'s mappings.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid as libc::c_long,
            addrs.len() as libc::c_ulong,
            addrs.as_ptr(),
            nodes_ptr,
            status.as_mut_ptr(),
            flags as libc::c_long,
        )
    };
    if r < 0 {
        -(crate::sys::errno() as i64)
    } else {
        r
    }
}

/// mbind(2) of [addr, addr+len) with `mode` over the single node `node`.
///
/// # Safety
/// [addr, addr+len) must be memory of this process whose placement the caller owns (a
/// policy change never moves or frees data, but later allocations there follow it).
pub unsafe fn mbind_node(addr: usize, len: usize, mode: i32, node: u32) -> io::Result<()> {
    let mut mask = [0u64; 16]; // 1024 nodes
    let n = node as usize;
    if n >= mask.len() * 64 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    mask[n / 64] |= 1 << (n % 64);
    // SAFETY: `mask` is a live array of mask.len()*64 bits; the caller upholds the range.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr,
            len,
            mode as libc::c_long,
            mask.as_ptr(),
            (mask.len() * 64) as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The node of the CPU this thread runs on.
pub fn current_node() -> u32 {
    let (mut cpu, mut node) = (0u32, 0u32);
    // SAFETY: getcpu writes the two u32s we pass; the cache argument may be null.
    let r = unsafe {
        libc::syscall(
            libc::SYS_getcpu,
            &mut cpu as *mut u32,
            &mut node as *mut u32,
            std::ptr::null_mut::<libc::c_void>(),
        )
    };
    if r < 0 {
        0
    } else {
        node
    }
}

/// The node the program's DRAM is on: the current CPU's node when it has memory, else the
/// memory node nearest to it (sysfs `distance`; a CPU on a memory-less node).
pub fn dram_node() -> u32 {
    let here = current_node();
    let mem = memory_nodes();
    if mem.contains(&here) {
        return here;
    }
    let dist = distances(here);
    mem.iter()
        .copied()
        .min_by_key(|&m| (dist.get(m as usize).copied().unwrap_or(u32::MAX), m))
        .unwrap_or(0)
}

/// sysfs `distance` of node `from` to each node, indexed by node number (u32::MAX for a
/// node sysfs does not list; empty without NUMA).
pub fn distances(from: u32) -> Vec<u32> {
    let row: Vec<u32> = read(&format!("{NODE_SYSFS}/node{from}/distance"))
        .map(|t| {
            t.split_whitespace()
                .filter_map(|d| d.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let online = online_nodes();
    let mut out = vec![u32::MAX; online.iter().max().map_or(0, |&m| m as usize + 1)];
    for (k, &n) in online.iter().enumerate() {
        if let Some(&d) = row.get(k) {
            out[n as usize] = d;
        }
    }
    out
}

/// Parse a sysfs node/CPU list ("0-2,4").
pub fn parse_list(text: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
                    v.extend(a..=b);
                }
            }
            None => v.extend(part.trim().parse::<u32>().ok()),
        }
    }
    v
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Online nodes (one node, 0, where sysfs has no node directory: a kernel without NUMA).
pub fn online_nodes() -> Vec<u32> {
    read(&format!("{NODE_SYSFS}/online"))
        .map(|t| parse_list(&t))
        .unwrap_or_else(|| vec![0])
}

/// Nodes with memory.
pub fn memory_nodes() -> Vec<u32> {
    read(&format!("{NODE_SYSFS}/has_memory"))
        .map(|t| parse_list(&t))
        .unwrap_or_else(|| vec![0])
}

/// CPUs of node `n` (empty: a CPU-less node, e.g. a CXL expander).
pub fn node_cpus(n: u32) -> Vec<u32> {
    read(&format!("{NODE_SYSFS}/node{n}/cpulist"))
        .map(|t| parse_list(&t))
        .unwrap_or_default()
}

/// MemTotal of node `n`, bytes.
pub fn node_memory_bytes(n: u32) -> Option<u64> {
    let t = read(&format!("{NODE_SYSFS}/node{n}/meminfo"))?;
    let line = t.lines().find(|l| l.contains("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().rev().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// HMAT's view of node `n` from its nearest initiators (ACPI HMAT, Linux 5.2+
/// `access0/initiators`): (read latency ns, read bandwidth MB/s; 0 where the firmware
/// gives none), or None without a latency.
pub fn hmat(n: u32) -> Option<(f64, f64)> {
    let base = format!("{NODE_SYSFS}/node{n}/access0/initiators");
    let num = |f: &str| -> Option<f64> { read(&format!("{base}/{f}"))?.trim().parse().ok() };
    let lat = num("read_latency").filter(|&l| l > 0.0)?;
    Some((lat, num("read_bandwidth").unwrap_or(0.0)))
}

/// Why node `n` cannot hold a tier, if it cannot: not online, or no memory.
pub fn check_node(n: u32) -> Result<(), String> {
    let mem: Vec<u32> = memory_nodes()
        .into_iter()
        .filter(|&m| node_memory_bytes(m) != Some(0))
        .collect();
    check_node_in(n, &online_nodes(), &mem)
}

/// `check_node` over given lists of online nodes and nodes with memory.
pub fn check_node_in(n: u32, online: &[u32], mem: &[u32]) -> Result<(), String> {
    if !online.contains(&n) {
        return Err(format!(
            "node {n} does not exist here (online nodes: {}); see `numactl -H`",
            join(online)
        ));
    }
    if !mem.contains(&n) {
        return Err(format!(
            "node {n} has no memory (nodes with memory: {}); a node tier needs a memory node",
            join(mem)
        ));
    }
    Ok(())
}

fn join(v: &[u32]) -> String {
    v.iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse() {
        assert_eq!(parse_list("0-2,4\n"), vec![0, 1, 2, 4]);
        assert_eq!(parse_list("\n"), Vec::<u32>::new());
        assert_eq!(parse_list("3"), vec![3]);
    }

    #[test]
    fn this_process_pages_report_a_memory_node() {
        // Query mode (no target nodes): the node of a page we just wrote.
        let mut v = vec![1u8; 4096 * 4];
        v[0] = 2;
        let a = (v.as_ptr() as usize).next_multiple_of(4096);
        let mut st = [i32::MIN; 1];
        assert_eq!(move_pages(0, &[a], &[], &mut st, 0), 0);
        assert!(memory_nodes().contains(&(st[0] as u32)), "{st:?}");
        // Moving it to the node it is on succeeds and reports that node.
        let mut st2 = [i32::MIN; 1];
        assert_eq!(move_pages(0, &[a], &[st[0]], &mut st2, MPOL_MF_MOVE), 0);
        assert_eq!(st2[0], st[0]);
    }

    #[test]
    fn memoryless_node_is_refused_by_name() {
        // A CPU node without memory (as QEMU's `-numa node,cpus=1` without memdev).
        let e = check_node_in(1, &[0, 1, 2], &[0, 2]).unwrap_err();
        assert!(
            e.contains("node 1 has no memory") && e.contains("0,2"),
            "{e}"
        );
        assert!(check_node_in(2, &[0, 1, 2], &[0, 2]).is_ok());
    }

    #[test]
    fn missing_node_is_refused_by_name() {
        let e = check_node(4000).unwrap_err();
        assert!(e.contains("node 4000 does not exist"), "{e}");
    }
}
