//! File descriptor limits: the generator's raised to its hard limit, the server's read.

/// Raises this process's RLIMIT_NOFILE soft limit to its hard limit; returns (soft, hard) as
/// they are afterwards, `None` if they cannot be read.
fn raise_fd_limit() -> Option<(u64, u64)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct passed, which lives on this stack frame.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    if limit.rlim_cur < limit.rlim_max {
        // An infinite hard limit is not a valid soft limit for files: fs.nr_open is the ceiling.
        let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse::<libc::rlim_t>().ok())
            .unwrap_or(1 << 20);
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max.min(nr_open),
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit only reads the struct passed.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    // rlim_t is u64 on Linux, the only system with the /proc this generator reads.
    Some((limit.rlim_cur, limit.rlim_max))
}

/// The soft and hard "Max open files" of a process, from `/proc/<pid>/limits`.
fn fd_limit_of(pid: u32) -> Option<(String, String)> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let rest = limits
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))?;
    let mut fields = rest.split_whitespace();
    Some((fields.next()?.to_owned(), fields.next()?.to_owned()))
}

/// The generator's and the server's descriptor limits (soft, hard), as `fd_limits` found them.
pub(super) struct FdLimits {
    pub(super) own: Option<(u64, u64)>,
    pub(super) server: Option<(String, String)>,
}

/// The fd limits: ours raised (soft to hard), the server's as it is; both printed, with a
/// warning where one is too low for `connections`.
pub(super) fn fd_limits(connections: usize, pid: Option<u32>) -> FdLimits {
    let own_limit = raise_fd_limit();
    let server_limit = pid.and_then(fd_limit_of);
    let needed = connections as u64 + 64;
    if let Some((soft, hard)) = own_limit {
        println!("generator RLIMIT_NOFILE: soft {soft}, hard {hard}");
        if soft < needed {
            println!(
                "  WARNING: {connections} connections need ~{needed} descriptors; the generator \
                 can open about {soft}: the rest will fail (counted)"
            );
        }
    }
    if let Some((soft, hard)) = &server_limit {
        println!("server max open files: soft {soft}, hard {hard}");
        if soft.parse::<u64>().is_ok_and(|s| s < needed) {
            println!(
                "  WARNING: the server's soft limit {soft} is below {needed}: it cannot hold \
                 {connections} connections"
            );
        }
    }
    FdLimits {
        own: own_limit,
        server: server_limit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_limits_are_readable() {
        let (soft, hard) = raise_fd_limit().unwrap();
        assert!(soft > 0 && soft <= hard);
        let (soft, hard) = fd_limit_of(std::process::id()).unwrap();
        assert!(soft.parse::<u64>().is_ok() && !hard.is_empty());
    }
}
