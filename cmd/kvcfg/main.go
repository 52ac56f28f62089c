// Command kvcfg plans and inspects the KV cache of LLM inference servers.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/kvcfg/kvcfg/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
