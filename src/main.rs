//! The `kernels` binary: a thin wrapper over [`kernels::cli::main`].

fn main() -> std::process::ExitCode {
    kernels::cli::main()
}
