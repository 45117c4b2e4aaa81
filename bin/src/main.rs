//! The `voiceplane` binary: see [`voiceplane_bin`].

fn main() -> std::process::ExitCode {
    voiceplane_bin::main_with(std::env::args_os())
}
