//! `trusthub-agent`: the host agent's binary (its command line is [`trusthub_agent::cli`]).

fn main() -> std::process::ExitCode {
    trusthub_agent::cli::main()
}
