//! The `ethlink` binary: parses the command line and hands it to [`ethlink_cli::run()`].

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = ethlink_cli::Cli::parse();
    let (stdin, stdout, stderr) = (std::io::stdin(), std::io::stdout(), std::io::stderr());
    let mut io = ethlink_cli::Io {
        stdin: &mut stdin.lock(),
        stdout: &mut stdout.lock(),
        stderr: &mut stderr.lock(),
    };
    ExitCode::from(ethlink_cli::run(cli, &mut io))
}
