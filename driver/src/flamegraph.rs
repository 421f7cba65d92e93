//! `netperf-driver flamegraph`: a differential flame graph of two folded-stack files, drawn by
//! the `inferno` crate (Brendan Gregg's FlameGraph in Rust).
//!
//! The widths are HEAD's stacks; each frame is coloured by the change of its own count
//! against BASE (red: grew, blue: shrank, white: unchanged). A stack only BASE has is not
//! drawn (it has no width in HEAD). Counts are whole numbers: a caller with fractional ones
//! scales them up and names the unit (`--count-name "instructions per 1,000 requests"`);
//! inferno's own `factor` is not used, since it leaves the change percentages unscaled.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use inferno::differential;
use inferno::flamegraph::{self, Options};

use crate::cli::FlamegraphOpts;
use crate::exit::Failure;

/// What the picture says besides the stacks.
#[derive(Debug, Clone)]
pub struct Labels {
    /// Title line.
    pub title: String,
    /// Line under the title.
    pub subtitle: Option<String>,
    /// What a count is.
    pub count_name: String,
    /// Width in pixels.
    pub width: usize,
}

/// Run the subcommand: read both files, write the SVG to stdout.
pub fn run(opts: &FlamegraphOpts) -> Result<(), Failure> {
    let base = read(&opts.base)?;
    let head = read(&opts.head)?;
    let labels = Labels {
        title: opts.title.clone(),
        subtitle: opts.subtitle.clone(),
        count_name: opts.count_name.clone(),
        width: opts.width as usize,
    };
    let svg = differential_svg(&base, &head, &labels)
        .map_err(|e| Failure::other(format!("flamegraph: {e}")))?;
    let mut out = io::stdout().lock();
    out.write_all(&svg)
        .and_then(|()| out.flush())
        .map_err(|e| Failure::other(format!("flamegraph: cannot write the SVG: {e}")))
}

fn read(path: &Path) -> Result<Vec<u8>, Failure> {
    fs::read(path).map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))
}

/// The SVG of HEAD's folded stacks coloured by their change against BASE's.
///
/// An error when HEAD has no stack with a positive count (nothing to draw).
pub fn differential_svg(base: &[u8], head: &[u8], labels: &Labels) -> io::Result<Vec<u8>> {
    let mut merged = Vec::new();
    differential::from_readers(differential::Options::default(), base, head, &mut merged)?;
    let text = String::from_utf8_lossy(&merged);
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines.sort_unstable(); // `from_lines` wants them sorted; the differential's order is a hash map's
    let mut options = Options::default();
    options.title = labels.title.clone();
    options.subtitle = labels.subtitle.clone();
    options.count_name = labels.count_name.clone();
    options.image_width = Some(labels.width);
    options.deterministic = true;
    options.hash = true;
    let mut svg = Vec::new();
    flamegraph::from_lines(&mut options, lines, &mut svg).map_err(|e| {
        if e.kind() == io::ErrorKind::InvalidData {
            io::Error::new(
                e.kind(),
                format!("no stack with a positive count in the head file ({e})"),
            )
        } else {
            e
        }
    })?;
    Ok(svg)
}
