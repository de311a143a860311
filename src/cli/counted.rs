//! A count with its noun, singular for one ("1 evaluation", "3 steps"),
//! for every count the commands print.

/// `1 step`, `3 steps` (`noun` singular, its plural with an `s`).
pub(super) fn counted(n: u32, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
