//! `netperf-driver` binary: all logic lives in the library.

fn main() {
    std::process::exit(netperf_driver::main_with_args(std::env::args_os()));
}
