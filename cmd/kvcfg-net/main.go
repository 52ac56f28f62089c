// Command kvcfg-net is kvcfg with its network front ends linked in: the
// HTTP API and web page (kvcfg-net serve) and models read from the Hugging
// Face Hub (--model org/name). It takes every kvcfg command line.
//
// kvcfg itself links neither, so that it imports no net package and stays a
// static binary that starts in half the time; it runs a command line that
// needs the network as kvcfg-net, found next to it or on PATH ($KVCFG_NET
// overrides). Install both with
//
//	go install github.com/kvcfg/kvcfg/cmd/...@latest
package main

import (
	"context"
	"os"

	"github.com/kvcfg/kvcfg/internal/cli"
	"github.com/kvcfg/kvcfg/internal/netcli"
)

func main() {
	cli.SetNetwork(netcli.Network())
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
