//! The standalone server, assembled from the `voiceplane` binary's library: the same
//! configuration, the same service, served on its own listener until Ctrl-C.
//!
//! ```sh
//! cargo run --example standalone                     # ./voiceplane.toml if present, else defaults
//! cargo run --example standalone -- my-config.toml   # or a file of your own
//! VOICEPLANE_LISTEN=127.0.0.1:9000 cargo run --example standalone
//! ```
//!
//! Configuration is read exactly as `voiceplane serve` reads it (defaults, then the TOML file,
//! then `VOICEPLANE_*` variables; see the README). The steps are spelled out so that you can
//! change one: wrap the service (`Service::with_clock`, …), add your own routes in front of
//! the [`voiceplane_http::Api`], or serve on a listener you already have.

use std::path::PathBuf;
use std::process::ExitCode;

use voiceplane_bin::Error;
use voiceplane_bin::config::Config;

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}", e.report_line());
            ExitCode::from(e.exit_code())
        }
    }
}

async fn run() -> Result<(), Error> {
    // 1. Configuration: the optional first argument names the TOML file.
    let file = std::env::args_os().nth(1).map(PathBuf::from);
    let loaded = Config::load(file.as_deref())?;
    for warning in loaded.warnings.iter().chain(&loaded.config.warnings()) {
        eprintln!("warning: {warning}");
    }
    let config = loaded.config;
    // Only a program installs a log subscriber; the libraries just emit through `tracing`.
    // Held to the end of `run`: dropping it writes out the last lines.
    let _log = voiceplane_bin::init_tracing_as(config.log.format);

    // 2. The service: opens and migrates the database, sets up JWT verification.
    let service = voiceplane_bin::build_service(&config).await?;

    // 3. The HTTP adapter with the configured limits, inside the binary's layers (CORS,
    //    compression, security headers), served until Ctrl-C. On Ctrl-C the listener closes
    //    and requests in flight finish before `serve_service` returns.
    let api = voiceplane_bin::api(service, &config);
    let stack = voiceplane_bin::stack::layered(api, &config.http)?;
    let addr = config.listen_addr()?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Error::Runtime(format!("cannot listen on {addr}: {e}")))?;
    eprintln!("voiceplane listening on http://{addr} (Ctrl-C to stop)");
    voiceplane_http::serve_service(listener, stack, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
    .map_err(|e| Error::Runtime(format!("server failed: {e}")))?;
    eprintln!("stopped");
    Ok(())
}
