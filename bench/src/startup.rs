//! `startup`: spawn a server, time spawn → first accepted TCP connection, then its idle RSS.

use std::fs::File;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::{json, Value};

use crate::stats::{mib, Memory};
use crate::BenchError;

#[derive(Debug, Clone, Args)]
pub struct StartupArgs {
    /// Give up if nothing accepts within this time.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "60s")]
    pub ready_timeout: Duration,
    /// Connect attempts this often.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "1ms")]
    pub poll: Duration,
    /// Idle RSS is read this long after the server is ready.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "2s")]
    pub idle: Duration,
    /// The server's stdout and stderr go here (default: discarded).
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// The server command and its arguments (after `--`).
    #[arg(required = true, last = true)]
    pub command: Vec<String>,
}

/// Kills the child (by its PID) whatever path leaves the function.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

pub fn run(addr: SocketAddr, args: &StartupArgs) -> Result<Value, BenchError> {
    let (program, rest) = args
        .command
        .split_first()
        .ok_or_else(|| BenchError::Usage("no server command after --".into()))?;
    let (out, err) = match &args.log {
        Some(path) => {
            let file = File::create(path)?;
            (Stdio::from(file.try_clone()?), Stdio::from(file))
        }
        None => (Stdio::null(), Stdio::null()),
    };
    // Nothing may listen there yet, or the measurement is of the wrong process.
    if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
        return Err(BenchError::Usage(format!(
            "{addr} already accepts connections before the server is started"
        )));
    }
    let poll = args.poll.max(Duration::from_micros(100));
    let attempts = (args.ready_timeout.as_secs_f64() / poll.as_secs_f64()).ceil() as u64 + 1;
    let spawned = Instant::now();
    let mut child = Guard(
        Command::new(program)
            .args(rest)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()?,
    );
    let pid = child.0.id();
    let mut ready = None;
    // Bounded in count and time.
    for _ in 0..attempts {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
            ready = Some(spawned.elapsed());
            break;
        }
        if let Some(status) = child.0.try_wait()? {
            return Err(BenchError::Protocol(format!(
                "the server exited with {status} before accepting"
            )));
        }
        if spawned.elapsed() >= args.ready_timeout {
            break;
        }
        std::thread::sleep(poll);
    }
    let ready = ready.ok_or_else(|| {
        BenchError::Timeout(format!(
            "{addr} did not accept within {}",
            humantime::format_duration(args.ready_timeout)
        ))
    })?;
    let at_ready = Memory::of(pid);
    std::thread::sleep(args.idle);
    let idle = Memory::of(pid);
    drop(child);
    println!(
        "startup: {} accepted after {:.1} ms; RSS at ready {}, after {} idle {} (peak {})",
        addr,
        ready.as_secs_f64() * 1000.0,
        at_ready.map_or("?".into(), |m| mib(m.rss_kib)),
        humantime::format_duration(args.idle),
        idle.map_or("?".into(), |m| mib(m.rss_kib)),
        idle.map_or("?".into(), |m| mib(m.hwm_kib)),
    );
    Ok(json!({
        "workload": "startup",
        "pid": pid,
        "ready_ms": (ready.as_secs_f64() * 1e4).round() / 10.0,
        "poll_ms": poll.as_secs_f64() * 1000.0,
        "rss_at_ready_kib": at_ready.map(|m| m.rss_kib),
        "idle_s": args.idle.as_secs_f64(),
        "idle_rss_kib": idle.map(|m| m.rss_kib),
        "idle_hwm_kib": idle.map(|m| m.hwm_kib),
    }))
}
