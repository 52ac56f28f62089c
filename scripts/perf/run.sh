#!/bin/sh
# Runs docs/PERFORMANCE.md's measurements from a bundle that
# scripts/perf-bundle.sh built, on a machine without a Go toolchain.
# Results go to $OUT (default: ./results), one file per section, each
# with the machine's CPU model and load at its top.
#
#   ./run.sh                 # every section the bundle was built for
#   ./run.sh pools startup   # some of them
#
# Sections: codecs (bf16 codecs at 64 MiB, 1 and 2 workers, default level
# and AVX2), pools (SetKV/GetKey, three rounds per level), plan (in-process
# plans, pinned versions, the catalog sweep), http (PlanHandler, then kvcfg-loadgen on all cores and, where
# taskset exists, on two), startup (ProcessStartup, default and static).
set -eu

here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-$here/results}"
mkdir -p "$out"
sections="${*:-$(cat "$here/SECTIONS")}"

header() {
	{
		echo "# $1: $(date -u +%FT%TZ), commit $(cat "$here/COMMIT" 2>/dev/null || echo unknown)"
		grep -m1 'model name' /proc/cpuinfo 2>/dev/null || true
		echo "# cores: $(nproc), load: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
	} >"$out/$1.txt"
}

for s in $sections; do
	echo "== $s"
	case "$s" in
	codecs)
		header codecs
		for level in "" avx2; do
			echo "## KVCFG_QUANT_ASM=${level:-default}" >>"$out/codecs.txt"
			KVCFG_QUANT_ASM="$level" KVCFG_BENCH_MIB=64 "$here/quant.test" -test.run '^$' \
				-test.bench 'KV/.*/.*/(copy|go)/w[12]' -test.benchtime 3x -test.count 2 >>"$out/codecs.txt" 2>&1
		done
		;;
	pools)
		header pools
		for round in 1 2 3; do
			for level in "" avx2; do
				echo "## round $round, KVCFG_QUANT_ASM=${level:-default}" >>"$out/pools.txt"
				KVCFG_QUANT_ASM="$level" "$here/pool.test" -test.run '^$' \
					-test.bench 'SetKV|GetKey' -test.benchtime 2000x >>"$out/pools.txt" 2>&1
			done
		done
		;;
	plan)
		header plan
		"$here/plan.test" -test.run '^$' -test.bench 'RunDefault$|RunFile|RunPinned|RunVLLM|RunTRTLLM|ReportJSON' -test.benchmem -test.count 5 >>"$out/plan.txt" 2>&1
		# The catalog sweep against a default plan, in the same process.
		for _ in 1 2 3 4 5; do
			"$here/plan.test" -test.run '^$' -test.bench 'RunDefault$|SweepCatalog' -test.benchtime 1x >>"$out/plan.txt" 2>&1
			"$here/plan.test" -test.run '^$' -test.bench 'RunDefault$' -test.benchtime 20000x >>"$out/plan.txt" 2>&1
		done
		;;
	http)
		header http
		"$here/server.test" -test.run '^$' -test.bench 'PlanHandler' -test.benchmem -test.count 3 >>"$out/http.txt" 2>&1
		for i in 1 2 3; do
			echo "## loadgen, all cores, run $i" >>"$out/http.txt"
			"$here/kvcfg-loadgen" -d 3s >>"$out/http.txt" 2>&1
		done
		if command -v taskset >/dev/null; then
			for i in 1 2 3; do
				echo "## loadgen, taskset -c 0,1, run $i" >>"$out/http.txt"
				taskset -c 0,1 "$here/kvcfg-loadgen" -d 3s >>"$out/http.txt" 2>&1
			done
		fi
		;;
	startup)
		header startup
		for bins in bin bin-static; do
			echo "## $bins" >>"$out/startup.txt"
			KVCFG_STARTUP_BINS="$here/$bins" "$here/kvcfg.test" -test.run '^$' \
				-test.bench ProcessStartup -test.benchtime 1x -test.count 3 >>"$out/startup.txt" 2>&1
		done
		;;
	*)
		echo "run.sh: unknown section $s (codecs, pools, plan, http, startup)" >&2
		exit 2
		;;
	esac
done
echo "results in $out"
