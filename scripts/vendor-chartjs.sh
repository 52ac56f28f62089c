#!/bin/sh
# Refreshes the vendored Chart.js that the kvcfg web page embeds.
#
# It downloads the npm package with `npm pack` and copies two files into
# web/static/vendor/ exactly as npm ships them:
#   dist/chart.umd.min.js -> web/static/vendor/chart.umd.min.js
#   LICENSE.md            -> web/static/vendor/LICENSE.md
#
# Only this script needs npm and the network; `go build` and CI never do.
# To move to another version: change CHARTJS_VERSION here, run the script,
# then update ChartJSVersion in web/embed.go, the version comment in
# web/static/index.html and chartJSSHA256 in web/embed_test.go (the script
# prints the new checksum), and commit the result.
set -eu

CHARTJS_VERSION="${CHARTJS_VERSION:-4.6.1}"

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/web/static/vendor"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "chart.js@$CHARTJS_VERSION" >/dev/null)
tar -xzf "$tmp/chart.js-$CHARTJS_VERSION.tgz" -C "$tmp"

mkdir -p "$dest"
cp "$tmp/package/dist/chart.umd.min.js" "$dest/chart.umd.min.js"
cp "$tmp/package/LICENSE.md" "$dest/LICENSE.md"

echo "vendored chart.js $CHARTJS_VERSION into web/static/vendor/"
ls -l "$dest"
echo "sha256 of chart.umd.min.js (chartJSSHA256 in web/embed_test.go):"
sha256sum "$dest/chart.umd.min.js" | cut -d' ' -f1
