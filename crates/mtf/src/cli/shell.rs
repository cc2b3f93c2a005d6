//! Shell conventions: `mtf completions SHELL`, `mtf man`, and the colour choice of clap's own
//! messages.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use clap_complete::Shell;

use metatf::io::{escape_path, Output, StdoutSink};

use super::common::{io_failure, line_to_stderr, no_color_env, Failure};
use super::EXIT_OK;

/// Arguments of `mtf completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Arguments of `mtf man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write `mtf.1` and one `mtf-SUBCOMMAND.1` per subcommand into this folder instead of
    /// printing `mtf.1`.
    #[arg(short, long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Run `mtf completions`.
pub fn completions(args: &CompletionsArgs) -> Result<i32, Failure> {
    let mut cmd = super::command();
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "mtf", &mut buf);
    let mut out = StdoutSink::new();
    out.write_all(&buf)?;
    out.finish()?;
    Ok(EXIT_OK)
}

/// Run `mtf man`.
pub fn man(args: &ManArgs) -> Result<i32, Failure> {
    let cmd = super::command();
    let Some(dir) = &args.dir else {
        let mut buf = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut buf)?;
        let mut out = StdoutSink::new();
        out.write_all(&buf)?;
        out.finish()?;
        return Ok(EXIT_OK);
    };
    std::fs::create_dir_all(dir).map_err(|source| {
        io_failure(&metatf::io::IoError::Create {
            path: dir.clone(),
            source,
        })
    })?;
    let mut pages = vec![("mtf".to_string(), cmd.clone())];
    // Hidden subcommands (`replay-child`, run by `mtf replay` itself) get no page.
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("mtf-{}", sub.get_name());
        // A subcommand's page is titled by its full name, as `man mtf-dump` finds it.
        // (clap takes a static name; the process ends right after.)
        let title: &'static str = Box::leak(name.clone().into_boxed_str());
        pages.push((name, sub.clone().name(title)));
    }
    for (name, page) in pages {
        let path = dir.join(format!("{name}.1"));
        let mut buf = Vec::new();
        clap_mangen::Man::new(page).render(&mut buf)?;
        let mut out = Output::create(&path).map_err(|e| io_failure(&e))?;
        out.write_all(&buf).map_err(|e| io_failure(&out.error(e)))?;
        out.commit().map_err(|e| io_failure(&e))?;
        line_to_stderr(&format!("wrote {}", escape_path(&path)));
    }
    Ok(EXIT_OK)
}

/// clap's colours for help and usage errors: `--color` and `NO_COLOR` are looked at before the
/// arguments are parsed.
pub fn clap_color() -> clap::ColorChoice {
    let mut args = std::env::args_os().skip(1);
    let mut choice = None;
    while let Some(a) = args.next() {
        let a = a.to_string_lossy().into_owned();
        if a == "--" {
            break;
        }
        let value = if a == "--color" {
            args.next().map(|v| v.to_string_lossy().into_owned())
        } else {
            a.strip_prefix("--color=").map(str::to_string)
        };
        match value.as_deref() {
            Some("always") => choice = Some(clap::ColorChoice::Always),
            Some("never") => choice = Some(clap::ColorChoice::Never),
            Some("auto") => choice = Some(clap::ColorChoice::Auto),
            _ => {}
        }
    }
    match choice {
        Some(c) => c,
        None if no_color_env() => clap::ColorChoice::Never,
        None => clap::ColorChoice::Auto,
    }
}
