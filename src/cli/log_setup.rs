//! The logger of the `physfit` binary. Log lines are for debugging
//! (`RUST_LOG`, in env_logger's own format with timestamps); without it
//! only warnings and errors reach the user, as plain `warning: …` lines
//! among the commands' sentences, and `--quiet` keeps errors alone.

use std::io::Write;

/// The filter without `RUST_LOG`: warnings (errors only under `--quiet`);
/// wgpu's HAL logs driver chatter as warnings, so it is held to errors.
fn default_filter(quiet: bool) -> &'static str {
    if quiet {
        "error"
    } else {
        "warn,wgpu_hal=error"
    }
}

/// Installs the logger (module doc).
pub fn init_logger(quiet: bool) {
    if std::env::var_os("RUST_LOG").is_some() {
        env_logger::Builder::from_env(env_logger::Env::default()).init();
        return;
    }
    env_logger::Builder::new()
        .parse_filters(default_filter(quiet))
        .format(|buf, record| {
            let level = match record.level() {
                log::Level::Error => "error",
                log::Level::Warn => "warning",
                log::Level::Info => "info",
                log::Level::Debug => "debug",
                log::Level::Trace => "trace",
            };
            writeln!(buf, "{level}: {}", record.args())
        })
        .init();
}
