#!/usr/bin/env bash
# The peak live bytes per namespace and the allocation sites (by bytes allocated, by bytes live
# at the peak), computed by Apache Spark (pyspark, local mode) and by DuckDB over the
# partitioned Parquet export of each trace, and set against `mtf stats -f json`: exit status 1
# on any difference. Installs pyspark and duckdb from PyPI into a venv under /tmp when python3
# cannot import them (Spark needs Java 17 or later: Debian's openjdk-17-jre-headless). Not part
# of `cargo test`.
#
#   bash examples/spark/run.sh                      # every traces/*.mtf with heap events
#   bash examples/spark/run.sh T.mtf android:systemui.zip et3:trace_with_deaths …
#
# An argument that is not a trace (.mtf, .mtf.zst, …) is imported first: `FORMAT:PATH` with
# `mtf import --from FORMAT`, a bare PATH with the format detected. Environment: MTF (the mtf
# binary; default a release build of this repository), PARTS (the --partition-by, default
# records:100000), ENGINES (default "duckdb spark"), SPARK_MASTER (default local[*]), KEEP=1
# keeps the work folder.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
PARTS=${PARTS:-records:100000}
ENGINES=${ENGINES:-duckdb spark}
MTF=${MTF:-}
if [ -z "$MTF" ]; then
    cargo build --release --quiet -p metatf-cli
    MTF="${CARGO_TARGET_DIR:-target}/release/mtf"
fi
MTF=$(realpath "$MTF")

# The Python modules the engines asked for: pyspark, duckdb.
modules=$(echo "$ENGINES" | sed 's/spark/pyspark/; s/ \+/,/g')
PY=python3
if ! $PY -c "import $modules" 2>/dev/null; then
    VENV=/tmp/mtf-spark-venv
    if ! "$VENV/bin/python" -c "import $modules" 2>/dev/null; then
        echo "installing ${modules//,/ and } into $VENV"
        t0=$(date +%s)
        [ -x "$VENV/bin/pip" ] || $PY -m venv "$VENV"
        "$VENV/bin/pip" install --quiet ${modules//,/ }
        echo "installed in $(( $(date +%s) - t0 )) s"
    fi
    PY="$VENV/bin/python"
fi
if [[ " $ENGINES " == *" spark "* ]] && ! java -version >/dev/null 2>&1; then
    echo "Spark needs Java (17 or later): apt-get install openjdk-17-jre-headless" >&2
    exit 2
fi

WORK=$(mktemp -d /tmp/mtf-spark.XXXXXX)
if [ "${KEEP:-}" = 1 ]; then echo "work folder: $WORK"; else trap 'rm -rf "$WORK"' EXIT; fi

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

if [ $# -eq 0 ]; then
    set -- traces/*.mtf
fi
dirs=()
declare -A stats_s export_s records
n=0
for arg in "$@"; do
    n=$((n + 1))
    name=$(basename "${arg#*:}")
    name="${n}-${name%%.*}"
    case "$arg" in
        *.mtf | *.mtf.zst | *.mtf.xz | *.mtf.gz | *.mtf.bz2 | -) trace="$arg" ;;
        *:*)
            trace="$WORK/$name.mtf"
            "$MTF" import -q --from "${arg%%:*}" "${arg#*:}" -o "$trace" ;;
        *)
            trace="$WORK/$name.mtf"
            "$MTF" import -q "$arg" -o "$trace" ;;
    esac
    t=$(now)
    "$MTF" stats -f json --top 1000000000 "$trace" > "$WORK/$name.stats.json"
    stats_s[$name]=$(since "$t")
    # Traces without heap events (no namespace with allocations) have no blocks to query.
    if ! $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if any(n["allocations"] for n in d["namespaces"]) else 1)' "$WORK/$name.stats.json"; then
        echo "skipped $arg: no heap events"
        continue
    fi
    # A partition by time needs a clock (docs/stats.md, *Time, and traces without a clock*).
    if [[ $PARTS == time:* ]] && ! $PY -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["clock"] == "moving" else 1)' "$WORK/$name.stats.json"; then
        echo "skipped $arg: no clock to partition by time"
        continue
    fi
    records[$name]=$($PY -c 'import json,sys; print(sum(r["count"] for r in json.load(open(sys.argv[1]))["records"]))' "$WORK/$name.stats.json")
    t=$(now)
    # Its warnings (frees of ids not alive, …) in a file: shown if the export fails.
    if ! "$MTF" export -q --to parquet --table all --partition-by "$PARTS" "$trace" -o "$WORK/$name" 2> "$WORK/$name.export.err"; then
        cat "$WORK/$name.export.err" >&2
        exit 1
    fi
    export_s[$name]=$(since "$t")
    dirs+=("$WORK/$name")
done
if [ ${#dirs[@]} -eq 0 ]; then
    echo "no trace with heap events" >&2
    exit 2
fi

status=0
declare -A engine_s
for engine in $ENGINES; do
    t=$(now)
    # The engine's log (Spark's start-up warnings) in a file: shown if it fails.
    if ! SPARK_LOCAL_IP=${SPARK_LOCAL_IP:-127.0.0.1} "$PY" "$here/heap_sql.py" --engine "$engine" \
        --json "$WORK/$engine.json" "${dirs[@]}" > "$WORK/$engine.out" 2> "$WORK/$engine.err"; then
        cat "$WORK/$engine.out" "$WORK/$engine.err" >&2
        exit 1
    fi
    engine_s[$engine]=$(since "$t")
    head -1 "$WORK/$engine.out"
    for d in "${dirs[@]}"; do
        name=$(basename "$d")
        "$PY" "$here/compare.py" "$WORK/$name.stats.json" "$WORK/$engine.json" "$d" || status=1
    done
done
# The last engine's figures, as it printed them.
tail -n +2 "$WORK/$engine.out"

echo
printf '%-28s %10s %10s %10s' trace "data recs" "stats s" "export s"
for engine in $ENGINES; do printf ' %10s' "$engine s"; done
echo
for d in "${dirs[@]}"; do
    name=$(basename "$d")
    printf '%-28s %10s %10s %10s' "${name#*-}" "${records[$name]}" "${stats_s[$name]}" "${export_s[$name]}"
    for engine in $ENGINES; do
        printf ' %10s' "$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["exports"][sys.argv[2]]["seconds"])' "$WORK/$engine.json" "$d")"
    done
    echo
done
for engine in $ENGINES; do
    echo "$engine: $(${PY} -c 'import json,sys; print(json.load(open(sys.argv[1]))["engine"])' "$WORK/$engine.json"), ${engine_s[$engine]} s in all (start included)"
done
if [ $status -eq 0 ]; then
    echo "all equal: ${#dirs[@]} exports, partitioned by $PARTS, $ENGINES against mtf stats"
else
    echo "DIFFERENT: see above" >&2
fi
exit $status
