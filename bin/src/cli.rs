//! The command line: `voiceplane [--config PATH] [serve | migrate | bootstrap … | openapi]`, where
//! `serve` is the default and `--config` may be given before or after the subcommand.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// voiceplane: the control-plane API for AI voice agents.
#[derive(Debug, Clone, Parser)]
#[command(name = "voiceplane", version, about)]
pub struct Cli {
    /// TOML configuration file [default: $VOICEPLANE_CONFIG, else ./voiceplane.toml when present]
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// What to do; `serve` when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The subcommands.
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum Command {
    /// Run the API (the default). Stops gracefully on SIGINT or SIGTERM.
    Serve,
    /// Apply pending database migrations and exit.
    Migrate,
    /// Create an organization, its first admin and an admin API key; print them as JSON.
    Bootstrap(BootstrapArgs),
    /// Print the OpenAPI 3.1 document (what `GET /api/openapi.json` serves) and exit; needs
    /// no database, storage or configuration.
    Openapi,
}

/// Arguments of `voiceplane bootstrap`.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct BootstrapArgs {
    /// Name of the new organization.
    #[arg(long, value_name = "NAME")]
    pub org_name: String,
    /// E-mail of its first admin (an existing user with that e-mail is reused).
    #[arg(long, value_name = "EMAIL")]
    pub admin_email: String,
    /// Display name of the first admin.
    #[arg(long, value_name = "NAME")]
    pub admin_name: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_is_the_default_and_config_is_global() {
        let cli = Cli::try_parse_from(["voiceplane"]).unwrap();
        assert_eq!(cli.command, None);
        let cli = Cli::try_parse_from(["voiceplane", "migrate", "--config", "x.toml"]).unwrap();
        assert_eq!(cli.command, Some(Command::Migrate));
        assert_eq!(cli.config, Some(PathBuf::from("x.toml")));
        let cli = Cli::try_parse_from([
            "voiceplane",
            "--config",
            "y.toml",
            "bootstrap",
            "--org-name",
            "Acme",
            "--admin-email",
            "a@b.co",
        ])
        .unwrap();
        assert_eq!(
            cli.command,
            Some(Command::Bootstrap(BootstrapArgs {
                org_name: "Acme".into(),
                admin_email: "a@b.co".into(),
                admin_name: None,
            }))
        );
        assert!(Cli::try_parse_from(["voiceplane", "bootstrap", "--org-name", "A"]).is_err());
        let cli = Cli::try_parse_from(["voiceplane", "openapi"]).unwrap();
        assert_eq!(cli.command, Some(Command::Openapi));
    }
}
