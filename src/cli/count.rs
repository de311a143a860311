//! A number with its noun in the right number, for printed sentences:
//! "1 driver", "29 drivers", never "1 drivers".

/// `n` followed by `one` when `n` is 1, else by `many`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(count(1, "driver", "drivers"), "1 driver");
        assert_eq!(count(0, "driver", "drivers"), "0 drivers");
        assert_eq!(count(29, "view", "views"), "29 views");
    }
}
