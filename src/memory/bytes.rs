//! Byte counts as people read them, for every memory message (the
//! refusals here, the GPU errors, `physfit check`).

/// Formats a byte count the way people read it (KiB, MiB, GiB).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    #[test]
    fn human_bytes_picks_unit() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(128 << 20), "128.0 MiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }
}
