//! Deterministic fuzzing of `tiermem` argument vectors (issue 10, item 4): random mixes of
//! real and hostile arguments for `sim`, `trace` and `run` are parsed with clap's
//! `try_parse_from`, and what parses goes through the same checks the commands make before
//! doing any work (`--out`, the config's validation, `--page-size`, `run`'s config with
//! `--dram-budget`/`--codec`/`--allocator`). Nothing runs and no program is launched. No
//! input may panic; every error is one line of an exit-2 kind.

use crate::{runtime_cmd, sim_cmd, trace_cmd, workbench_cmd, Cli, Command};
use clap::{CommandFactory, Parser};
use std::panic::{catch_unwind, AssertUnwindSafe};
use tiermem_core::Error;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}

fn repo_file(p: &str) -> String {
    format!("{}/../../{p}", env!("CARGO_MANIFEST_DIR"))
}

fn check_err(e: &Error, argv: &[String]) {
    let msg = e.to_string();
    assert_eq!(e.kind.exit_code(), 2, "{argv:?}: {:?}: {msg}", e.kind);
    assert!(
        !msg.contains('\n') && !msg.is_empty(),
        "{argv:?}: not one line: {msg}"
    );
}

/// What the command would check before doing any work.
fn pre_flight(cli: Cli, argv: &[String]) {
    let r: Result<(), Error> = match cli.command {
        Command::Run(a) => runtime_cmd::run_config(&a).map(|_| ()),
        Command::Sim(a) => sim_cmd::check_out_dir(&a.out).and_then(|()| {
            let text = std::fs::read_to_string(&a.config)
                .map_err(|e| Error::config(format!("cannot read config: {e}")))?;
            tiermem_sim::config::SimConfig::from_toml(&text, "fuzz.toml").map(|_| ())
        }),
        Command::Trace(
            trace_cmd::TraceCommand::Info { page_size, .. }
            | trace_cmd::TraceCommand::Convert { page_size, .. }
            | trace_cmd::TraceCommand::Record { page_size, .. },
        ) => trace_cmd::page_bytes(&page_size).map(|_| ()),
        Command::Reproduce(a) => sim_cmd::check_out_dir(&a.out),
        Command::Qos(a) => tiermem_linux::qos::Mode::parse(&a.mode)
            .map_err(Error::usage)
            .and_then(|_| tiermem_linux::qos::QosFile::load(&a.config).map(|_| ())),
        // Attach checks a live process first: nothing to fuzz before that.
        Command::Attach(_) | Command::Stat(_) | Command::Budget(_) | Command::Policies(_) => Ok(()),
        Command::Sweep(a) => workbench_cmd::check_sweep_args(&a),
        Command::Memstrata(crate::memstrata_cmd::MemstrataCommand::Train(a)) => {
            sim_cmd::check_out_dir(&a.out)
        }
        Command::Tiers(crate::tiers_cmd::TiersCommand::Characterize(a)) => {
            crate::tiers_cmd::check_args(&a).map(|_| ())
        }
    };
    if let Err(e) = r {
        check_err(&e, argv);
    }
}

#[test]
fn clap_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn random_argument_vectors_parse_or_fail_cleanly() {
    let sim_cfg = repo_file("examples/sim.toml");
    let exp_cfg = repo_file("experiments/colloid/gups-base.toml");
    let out_file = repo_file("Cargo.toml");
    let tokens: Vec<&str> = vec![
        "--out",
        "--out",
        "/tmp/tiermem-cli-fuzz-never-written",
        &out_file,
        "--no-plots",
        "--page-size",
        "4K",
        "3K",
        "0",
        "-1",
        "99999999999999999999G",
        "1e30",
        "nan",
        "",
        "--dram-budget",
        "50%",
        "0%",
        "101%",
        "unlimited",
        "9999T",
        "512M",
        "-5%",
        "--codec",
        "zstd:99",
        "zstd:3",
        "zstd:",
        "lz4:1",
        "lz4",
        "deflate:10",
        "lzo",
        "brotli",
        "--allocator",
        "zbud",
        "zsmalloc",
        "z3fold",
        "bogus",
        "--config",
        &sim_cfg,
        &exp_cfg,
        "/nonexistent.toml",
        "/tmp",
        "--keep-text",
        "--",
        "/bin/true",
        "info",
        "convert",
        "--quick",
        "colloid-fig1",
        "--json",
        "-x",
        "--frob",
        "\u{1b}[2J",
        "\u{0}",
    ];
    let subcommands = ["sim", "trace", "run", "reproduce"];
    let mut rng = Rng(0x636c_695f_6675_7a7a);
    let (mut parsed, mut refused) = (0, 0);
    for _ in 0..3000 {
        let mut argv = vec!["tiermem".to_string(), rng.pick(&subcommands).to_string()];
        if argv[1] == "trace" && !rng.next().is_multiple_of(4) {
            argv.push(rng.pick(&["info", "convert", "record"]).to_string());
        }
        for _ in 0..rng.next() % 8 {
            argv.push(rng.pick(&tokens).to_string());
        }
        let r = catch_unwind(|| Cli::try_parse_from(&argv));
        match r {
            Err(_) => panic!("clap panicked on {argv:?}"),
            Ok(Err(e)) => {
                refused += 1;
                assert!(e.use_stderr(), "{argv:?}: {e}");
                assert_eq!(e.exit_code(), 2, "{argv:?}: {e}");
            }
            Ok(Ok(cli)) => {
                parsed += 1;
                if catch_unwind(AssertUnwindSafe(|| pre_flight(cli, &argv))).is_err() {
                    panic!("pre-flight checks panicked on {argv:?}");
                }
            }
        }
    }
    assert!(
        parsed > 200 && refused > 200,
        "parsed {parsed}, refused {refused}"
    );
    assert!(
        !std::path::Path::new("/tmp/tiermem-cli-fuzz-never-written").exists(),
        "a pre-flight check wrote output"
    );
}

/// Issue 48, item 7: `run` no longer takes an unknown option as its program, yet everything
/// after the program's name still goes to the program, options of its own included.
#[test]
fn run_passes_dashed_arguments_after_the_program_to_it() {
    let program = |argv: &[&str]| match Cli::try_parse_from(argv) {
        Ok(Cli {
            command: Command::Run(a),
        }) => (a.program, a.verbose, a.dram_budget),
        Ok(_) => panic!("{argv:?}: not run"),
        Err(e) => panic!("{argv:?}: {e}"),
    };
    let (p, _, _) = program(&["tiermem", "run", "--", "ls", "-la"]);
    assert_eq!(p, ["ls", "-la"]);
    let (p, _, _) = program(&["tiermem", "run", "python3", "-c", "print(1)"]);
    assert_eq!(p, ["python3", "-c", "print(1)"]);
    // tiermem's own options before the program are tiermem's; the same after it, the program's.
    let (p, v, b) = program(&[
        "tiermem",
        "run",
        "-v",
        "--dram-budget",
        "50%",
        "prog",
        "--dram-budget",
        "1G",
        "-v",
    ]);
    assert_eq!(p, ["prog", "--dram-budget", "1G", "-v"]);
    assert!(v);
    assert_eq!(b.as_ref().map(|b| b.text()), Some("50%"));
    // A program whose name starts with `-` needs `--`; without it, that is an unknown option.
    let (p, _, _) = program(&["tiermem", "run", "--", "--prog", "-x"]);
    assert_eq!(p, ["--prog", "-x"]);
    let e = Cli::try_parse_from(["tiermem", "run", "--dram-budjet", "50%", "--", "prog"])
        .err()
        .expect("an unknown option parsed");
    assert_eq!(e.kind(), clap::error::ErrorKind::UnknownArgument);
}
