use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(maverick::commands::main(std::env::args_os().collect()))
}
