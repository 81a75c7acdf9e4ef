//! The daemon's allocator settings (docs/limits.md#large-tables-and-large-answers): glibc's
//! malloc with fixed thresholds instead of adaptive ones.
//!
//! Left adaptive, glibc raises its mapping threshold to the size of the largest mapped block
//! freed so far (up to 32 MiB), and its trim threshold to twice that. A KV file of megabytes
//! read at start-up, or a table grown past a few MiB, is enough: from then on each thread's
//! heap keeps up to twice that size free at its top, and `malloc_trim` gives back the top of
//! the main thread's heap only. How much stays resident then depends on which threads decoded
//! what: at 10,000 topic-broker entries, after a start with a 100,000-entry KV, 188-402 B per
//! entry where the tables take 44 (bench/SCALE.md).
//!
//! Fixed: blocks of [`MMAP_THRESHOLD`] and more are mapped and given back when freed; smaller
//! ones (registration bodies and their decoded tables) stay on the heaps, and a heap keeps at
//! most [`TRIM_THRESHOLD`] free at its top. The cost is the pages a decode touches again after
//! its heap was trimmed: registration CPU about 7-12% higher at a million entries.
//!
//! What the operator set (`MALLOC_*_` variables or `glibc.malloc.*` in `GLIBC_TUNABLES`) is
//! left alone. Embedded in another application, the server changes nothing: the allocator is
//! the host's.

/// Blocks of this size or more are mapped of their own (bytes): larger than any registration
/// body but the largest, so that bodies are not mapped and unmapped at every registration.
const MMAP_THRESHOLD: i32 = 4 * 1024 * 1024;

/// Free memory a heap keeps at its top (bytes): glibc's initial value.
const TRIM_THRESHOLD: i32 = 128 * 1024;

/// The environment variables by which glibc takes thresholds (and anything else that turns
/// their adaptation off) from the operator.
const OPERATOR_VARIABLES: [&str; 4] = [
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_MAX_",
];

/// The same settings as glibc tunables.
const OPERATOR_TUNABLES: [&str; 4] = [
    "glibc.malloc.mmap_threshold",
    "glibc.malloc.trim_threshold",
    "glibc.malloc.top_pad",
    "glibc.malloc.mmap_max",
];

/// What [`fix_thresholds`] did, for the start-up log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thresholds {
    /// Fixed at [`MMAP_THRESHOLD`] and [`TRIM_THRESHOLD`].
    Fixed,
    /// The operator's own settings are in the environment and were kept.
    Operator,
    /// Not glibc: nothing to do.
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    NotGlibc,
}

impl Thresholds {
    /// One line for the log.
    pub fn describe(self) -> String {
        match self {
            Self::Fixed => format!(
                "glibc malloc thresholds fixed: blocks of {} MiB and more mapped, at most {} KiB \
                 kept free at the top of a heap",
                MMAP_THRESHOLD >> 20,
                TRIM_THRESHOLD >> 10
            ),
            Self::Operator => "glibc malloc thresholds as the environment sets them".to_owned(),
            #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
            Self::NotGlibc => "allocator left as it is (not glibc)".to_owned(),
        }
    }
}

/// Fixes glibc's mapping and trim thresholds, unless the operator set malloc's thresholds.
/// Called first thing in `main`, before any other thread runs.
pub fn fix_thresholds() -> Thresholds {
    if operator_set(|name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())) {
        return Thresholds::Operator;
    }
    apply()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn apply() -> Thresholds {
    // SAFETY: mallopt takes two integers and changes glibc's own parameters under its lock.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
    Thresholds::Fixed
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn apply() -> Thresholds {
    Thresholds::NotGlibc
}

/// Whether the environment (read through `var`) sets any of malloc's thresholds.
fn operator_set(var: impl Fn(&str) -> Option<String>) -> bool {
    OPERATOR_VARIABLES.iter().any(|name| var(name).is_some())
        || var("GLIBC_TUNABLES").is_some_and(|tunables| {
            tunables.split(':').any(|pair| {
                let name = pair.split_once('=').map_or(pair, |(name, _)| name);
                OPERATOR_TUNABLES.contains(&name.trim())
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn an_environment_without_malloc_settings_gets_the_fixed_thresholds() {
        assert!(!operator_set(env(&[])));
        assert!(!operator_set(env(&[("MALLOC_ARENA_MAX", "2")])));
        assert!(!operator_set(env(&[(
            "GLIBC_TUNABLES",
            "glibc.malloc.arena_max=2:glibc.pthread.rseq=0"
        )])));
    }

    #[test]
    fn the_operators_thresholds_are_kept() {
        assert!(operator_set(env(&[("MALLOC_TRIM_THRESHOLD_", "1048576")])));
        assert!(operator_set(env(&[("MALLOC_MMAP_THRESHOLD_", "")])));
        assert!(operator_set(env(&[(
            "GLIBC_TUNABLES",
            "glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=4194304"
        )])));
        assert!(operator_set(env(&[(
            "GLIBC_TUNABLES",
            "glibc.malloc.top_pad=0"
        )])));
    }
}
