//! The host's available memory: on Linux `MemAvailable` of
//! `/proc/meminfo` (what can be allocated without swapping); elsewhere
//! [`ASSUMED_HOST_BYTES`], said in every figure printed (`source`);
//! `PHYSFIT_HOST_MEMORY_MIB` overrides both (docs/design.md, memory budget).

/// Host memory assumed where the platform's available memory is not read.
pub const ASSUMED_HOST_BYTES: u64 = 8 << 30;

/// Bytes an environment variable gives in MiB (`PHYSFIT_*_MEMORY_MIB`).
pub fn env_mib(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(|m| m << 20)
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
pub fn parse_meminfo(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The host's available memory and where the figure comes from.
pub fn host_available() -> (u64, String) {
    if let Some(bytes) = env_mib("PHYSFIT_HOST_MEMORY_MIB") {
        return (bytes, "PHYSFIT_HOST_MEMORY_MIB".into());
    }
    match std::fs::read_to_string("/proc/meminfo")
        .ok()
        .as_deref()
        .and_then(parse_meminfo)
    {
        Some(bytes) => (bytes, "MemAvailable of /proc/meminfo".into()),
        None => (
            ASSUMED_HOST_BYTES,
            "assumed: this platform's available memory is not read".into(),
        ),
    }
}
