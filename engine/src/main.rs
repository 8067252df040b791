use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    // A panic is a bug; still report it as one line on stderr.
    std::panic::set_hook(Box::new(|info| {
        let msg = info.to_string().replace('\n', " ");
        eprintln!("fsbench-engine: internal error: {msg}");
    }));
    let args: Vec<String> = std::env::args().skip(1).collect();
    match fsbench_engine::cli::main(&args) {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            if let Err(e) = stdout
                .write_all(out.as_bytes())
                .and_then(|()| stdout.flush())
            {
                eprintln!("fsbench-engine: error: write to stdout: {e}");
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fsbench-engine: error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}
