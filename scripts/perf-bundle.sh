#!/bin/sh
# Builds what docs/PERFORMANCE.md measures into one directory, for a
# machine without a Go toolchain (such as the project's GPU host), with
# run.sh, which runs the measurements there. Only the binaries of the
# sections named are built (default: all of them):
#
#   codecs   quant.test
#   pools    pool.test
#   plan     plan.test
#   http     server.test, kvcfg-loadgen
#   startup  kvcfg.test and kvcfg, testdata/hello, testdata/floor in the
#            default build (bin/) and with CGO_ENABLED=0 (bin-static/)
#
#   scripts/perf-bundle.sh DIR [SECTION ...]
#   DIR/run.sh [SECTION ...]          # on the other machine
#
# The test binaries and the load generator are stripped (-s -w: no symbol
# table or DWARF, which the benchmarks do not need); the start-up binaries
# are built exactly as `go build` builds them for users. Everything at
# once is about 90 MB; a copy limited to 64 MiB takes a few sections.
set -eu

[ $# -ge 1 ] || { echo "usage: scripts/perf-bundle.sh DIR [codecs|pools|plan|http|startup ...]" >&2; exit 2; }
root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$1"
out="$(cd "$1" && pwd)"
shift
sections="${*:-codecs pools plan http startup}"
cd "$root"

testbin() { go test -c -ldflags='-s -w' -o "$out/$1.test" "./$2"; }
for s in $sections; do
	case "$s" in
	codecs) testbin quant quant ;;
	pools) testbin pool pool ;;
	plan) testbin plan plan ;;
	http)
		testbin server server
		go build -ldflags='-s -w' -o "$out/kvcfg-loadgen" ./cmd/kvcfg-loadgen
		;;
	startup)
		testbin kvcfg cmd/kvcfg
		mkdir -p "$out/bin" "$out/bin-static"
		for b in . testdata/hello testdata/floor; do
			name="$(basename "$b")"
			[ "$b" = . ] && name=kvcfg
			go build -o "$out/bin/$name" "./cmd/kvcfg/$b"
			CGO_ENABLED=0 go build -o "$out/bin-static/$name" "./cmd/kvcfg/$b"
		done
		;;
	*)
		echo "perf-bundle: unknown section $s (codecs, pools, plan, http, startup)" >&2
		exit 2
		;;
	esac
done
cp scripts/perf/run.sh "$out/run.sh"
chmod +x "$out/run.sh"
echo "$sections" >"$out/SECTIONS"
git rev-parse HEAD >"$out/COMMIT" 2>/dev/null || echo unknown >"$out/COMMIT"
du -sh "$out"
