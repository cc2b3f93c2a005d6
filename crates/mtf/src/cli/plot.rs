//! `mtf plot TRACE -o FILE.svg|FILE.png`: live bytes and blocks over the trace (the peak
//! marked), the size and lifetime histograms and the top sites of one namespace.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use metatf::analysis::plot;
use metatf::picture::PictureFormat;

use super::common::{input_name, stats_of, Failure, Flat, SliceArgs};
use super::write::write_file;
use super::{EXIT_OK, EXIT_USAGE};

/// Picture format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImageFormat {
    /// Scalable vector graphics (text rendered by the viewer).
    Svg,
    /// PNG (text drawn with the bundled font).
    Png,
}

/// Arguments of `mtf plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// The trace (`-` for standard input; pipes and compressed traces too).
    pub trace: PathBuf,
    /// The picture to write: `.svg` or `.png` (`-`: SVG on standard output).
    #[arg(short, long)]
    pub output: PathBuf,
    /// The format, instead of the output's extension.
    #[arg(short, long, value_enum)]
    pub format: Option<ImageFormat>,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// The namespace to draw (default: the first one with bytes allocated).
    #[arg(long, value_name = "NAME")]
    pub namespace: Option<String>,
    /// Width in pixels.
    #[arg(long, default_value_t = 1200, value_parser = clap::value_parser!(u32).range(400..=8000))]
    pub width: u32,
    /// The slice.
    #[command(flatten)]
    pub slice: SliceArgs,
}

/// Run `mtf plot`.
pub fn run(args: &PlotArgs) -> Result<i32, Failure> {
    let format = match args.format {
        Some(ImageFormat::Png) => PictureFormat::Png,
        Some(ImageFormat::Svg) => PictureFormat::Svg,
        None if args.output.as_os_str() == "-" => PictureFormat::Svg,
        None => PictureFormat::of(&args.output).ok_or_else(|| {
            super::common::error(
                EXIT_USAGE,
                "mtf::usage::output",
                format!(
                    "{}: name the picture FILE.svg or FILE.png, or give --format svg|png",
                    input_name(&args.output)
                ),
            )
        })?,
    };
    let stats = stats_of(&args.trace, args.dtd.as_deref(), args.slice.window()?)?;
    let space = plot::pick_space(&stats, args.namespace.as_deref())
        .map_err(|e| Failure::diagnostic(EXIT_USAGE, &Flat::of(&e)))?;
    if !space.has_content() {
        eprintln!(
            "mtf plot: namespace {} has no allocations in the slice: the charts are empty",
            metatf::escape::escape_for_terminal(&space.name)
        );
    }
    let title = plot::title(&input_name(&args.trace), &stats, space);
    let data = plot::picture(&title, space, args.width, format)
        .map_err(|e| Failure::diagnostic(EXIT_USAGE, &e))?;
    write_file(&args.output, &data)?;
    Ok(EXIT_OK)
}
