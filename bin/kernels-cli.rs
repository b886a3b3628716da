//! The `kernels-cli` binary of the wheel (feature `cli-alias`): the same
//! program as `kernels`, under a name the Python `kernels` runtime does not
//! claim (README.md, "Usage"); outside `src/`, it is no module of the library.

fn main() -> std::process::ExitCode {
    kernels::cli::main()
}
