#!/usr/bin/env bash
# Run every fuzz target (or those named) for SECONDS of wall time each, all at once, under
# `nice -n 19`, and print executions and crashes per target.
#
#   fuzz/run-all.sh SECONDS [TARGET...]
#
# Builds the targets first (release, with debug assertions and overflow checks), makes the seed
# corpora from the repository's files (fuzz/make_seeds.py), and runs each target's binary with
# its dictionary, a 1 GiB RSS and malloc limit and a 10 s timeout. A target that crashes is
# restarted on its corpus (the crash input is kept in fuzz/artifacts/TARGET/) until its time is
# up (at most 30 runs: a target that keeps crashing waits for a fix). A timeout on a machine
# shared with builds may be the CPU's share, not the input: rerun the input alone to tell. Logs: fuzz/artifacts/TARGET/run-N.log.
set -u
cd "$(dirname "$0")"
secs=${1:?usage: fuzz/run-all.sh SECONDS [TARGET...]}
shift
all=$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^metatf-fuzz$')
targets=${*:-$all}
if [ -z "${NO_BUILD:-}" ]; then
    cargo +nightly fuzz build -O -a || exit 1
fi
bin=target/x86_64-unknown-linux-gnu/release
[ -d corpus ] || python3 make_seeds.py >/dev/null || exit 1

dict_of() {
    case $1 in
    dtd | decode_pair) echo "-dict=dict/dtd.dict" ;;
    mapping) echo "-dict=dict/mapping.dict" ;;
    pack | encode | parquet | stats | replay | simulate) echo "-dict=dict/text.dict" ;;
    *) echo "" ;;
    esac
}

run_one() {
    local t=$1 end=$(($(date +%s) + secs)) n=0
    mkdir -p "corpus/$t" "artifacts/$t"
    rm -f "artifacts/$t"/run-*.log
    while [ "$(date +%s)" -lt "$end" ] && [ "$n" -lt 30 ]; do
        n=$((n + 1))
        nice -n 19 "$bin/$t" "corpus/$t" $(dict_of "$t") \
            -max_total_time=$((end - $(date +%s))) -rss_limit_mb=1024 -malloc_limit_mb=1024 \
            -timeout=10 -print_final_stats=1 -artifact_prefix="artifacts/$t/" \
            >"artifacts/$t/run-$n.log" 2>&1 && break
    done
}

start=$(date +%s)
for t in $targets; do
    run_one "$t" &
done
wait
echo "ran for $(($(date +%s) - start)) s"
printf '%-16s %14s %8s %s\n' target executions crashes artifacts
for t in $targets; do
    execs=$(cat "artifacts/$t"/run-*.log 2>/dev/null |
        sed -n 's/^stat::number_of_executed_units: *//p' | awk '{s += $1} END {print s + 0}')
    # One `SUMMARY:` line per crash, timeout or out-of-memory (libFuzzer or the sanitizer).
    crashes=$(cat "artifacts/$t"/run-*.log 2>/dev/null | grep -c '^SUMMARY: ')
    arts=$(ls "artifacts/$t" | grep -v '^run-' | tr '\n' ' ')
    printf '%-16s %14s %8s %s\n' "$t" "$execs" "$crashes" "$arts"
done
