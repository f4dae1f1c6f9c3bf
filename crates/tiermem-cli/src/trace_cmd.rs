//! `tiermem trace ...`: address-trace tools (valgrind lackey text ↔ tiermem binary).
//! The formats are documented in `tiermem_sim::workload::trace`.

use clap::Subcommand;
use std::path::{Path, PathBuf};
use tiermem_core::{format_bytes, parse_size, Error, Result};
use tiermem_sim::workload::trace::{self, TraceFormat, TraceInfo};

#[derive(Subcommand)]
pub enum TraceCommand {
    /// Convert a valgrind lackey trace (`--tool=lackey --trace-mem=yes`) to tiermem's
    /// binary trace format.
    Convert {
        input: PathBuf,
        output: PathBuf,
        /// Page size the addresses are compacted to (replay needs a machine page size that
        /// is a multiple of it).
        #[arg(long, default_value = "4K")]
        page_size: String,
    },
    /// Show a trace's format, record counts and footprint (either format).
    Info {
        file: PathBuf,
        /// Page size for counting a lackey trace's distinct pages.
        #[arg(long, default_value = "4K")]
        page_size: String,
    },
    /// Run PROGRAM under valgrind lackey and write its memory trace in the binary format.
    Record {
        /// Binary trace to write.
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value = "4K")]
        page_size: String,
        /// Keep valgrind's text trace at this path (default: deleted after conversion).
        #[arg(long)]
        keep_text: Option<PathBuf>,
        /// The program and its arguments, after `--`.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

pub(crate) fn page_bytes(text: &str) -> Result<u64> {
    let b = parse_size(text).map_err(|e| Error::usage(format!("--page-size: {e}")))?;
    if b < 64 || !b.is_power_of_two() {
        return Err(Error::usage(format!(
            "--page-size: {b} is not a power of two ≥ 64; use e.g. 4K or 2M"
        )));
    }
    Ok(b)
}

fn print_convert(input: &Path, output: &Path, st: &trace::ConvertStats) {
    println!(
        "{} -> {}: {} records ({} loads, {} stores, {} modifies; {} instruction fetches skipped), {} distinct pages of {} ({}), {} written ({:.2} B/record)",
        input.display(),
        output.display(),
        st.header.records,
        st.counts.loads,
        st.counts.stores,
        st.counts.modifies,
        st.counts.instructions,
        st.header.distinct_pages,
        format_bytes(st.header.page_bytes),
        format_bytes(st.header.distinct_pages * st.header.page_bytes),
        format_bytes(st.bytes_out),
        st.bytes_out as f64 / st.header.records.max(1) as f64,
    );
}

fn print_info(file: &Path, i: &TraceInfo) {
    let fmt = match i.format {
        TraceFormat::Lackey => "valgrind lackey text",
        TraceFormat::Binary => "tiermem binary (TMTRACE1)",
    };
    let c = &i.counts;
    let writes = c.stores + c.modifies;
    println!("{}: {fmt}", file.display());
    println!(
        "  records         {} ({} loads, {} stores, {} modifies; {:.1}% write)",
        c.records(),
        c.loads,
        c.stores,
        c.modifies,
        100.0 * writes as f64 / c.records().max(1) as f64
    );
    if i.format == TraceFormat::Lackey {
        println!(
            "  instructions    {} fetches (skipped on replay)",
            c.instructions
        );
    }
    println!(
        "  pages           {} distinct of {} = {} footprint",
        i.distinct_pages,
        format_bytes(i.page_bytes),
        format_bytes(i.distinct_pages * i.page_bytes)
    );
}

pub fn trace(c: TraceCommand) -> Result<()> {
    match c {
        TraceCommand::Convert {
            input,
            output,
            page_size,
        } => {
            let st = trace::convert_lackey(&input, &output, page_bytes(&page_size)?)?;
            print_convert(&input, &output, &st);
            Ok(())
        }
        TraceCommand::Info { file, page_size } => {
            let i = trace::info(&file, page_bytes(&page_size)?)?;
            print_info(&file, &i);
            Ok(())
        }
        TraceCommand::Record {
            out,
            page_size,
            keep_text,
            command,
        } => {
            let pb = page_bytes(&page_size)?;
            let text = keep_text.clone().unwrap_or_else(|| {
                let mut s = out.clone().into_os_string();
                s.push(".lackey.txt");
                PathBuf::from(s)
            });
            let status = trace::record_lackey(&command, &text)?;
            if !status.success() {
                eprintln!(
                    "tiermem: note: {} exited with {status}; converting the trace it left",
                    command[0]
                );
            }
            if !text.exists() {
                return Err(Error::trace(format!(
                    "valgrind wrote no trace to {}",
                    text.display()
                )));
            }
            let st = trace::convert_lackey(&text, &out, pb);
            if keep_text.is_none() {
                let _ = std::fs::remove_file(&text);
            }
            let st = st?;
            if st.header.records == 0 {
                let _ = std::fs::remove_file(&out);
                return Err(Error::trace(format!("valgrind recorded no data accesses of {} (did it start? rerun with --keep-text FILE to see valgrind's log)", command[0])));
            }
            print_convert(&text, &out, &st);
            Ok(())
        }
    }
}
