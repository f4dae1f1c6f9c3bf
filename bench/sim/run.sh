#!/usr/bin/env bash
# Simulator access-path benchmark: simulated accesses per second on one core, and the
# cost of one epoch's load/latency fixed point (crates/tiermem-sim/benches/access_path.rs).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo bench --quiet -p tiermem-sim --bench access_path
