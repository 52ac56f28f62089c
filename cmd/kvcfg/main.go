// Command kvcfg plans and inspects the KV cache of LLM inference servers.
package main

import (
	"context"
	"os"

	"github.com/kvcfg/kvcfg/internal/cli"
)

func main() {
	// cli.Main installs SIGINT/SIGTERM handling for the commands that run
	// long (serve, simulate, fit, quant-error); the others keep the
	// default action.
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
