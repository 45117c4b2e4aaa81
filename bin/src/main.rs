//! The `voiceplane` binary: see [`voiceplane_bin`].

/// mimalloc rather than glibc's malloc: allocation and freeing were 7 % of an agent read's
/// CPU under glibc (benches/README.md, "The allocator"). A library user picks their own.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    voiceplane_bin::main_with(std::env::args_os())
}
