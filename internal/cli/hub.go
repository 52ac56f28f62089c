package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/internal/cmdline"
)

// DefaultHubTimeout bounds all the Hub reads of one command.
const DefaultHubTimeout = 2 * time.Minute

// Network is the part of kvcfg that talks to the network: the Hugging Face
// Hub client and the HTTP server. cmd/kvcfg-net links it in (SetNetwork);
// cmd/kvcfg does not, so that it imports no net package and is a static
// binary that starts in half the time, and it runs a command that needs
// the network as kvcfg-net instead (forward.go).
type Network struct {
	// Resolver returns the resolver of Hub ids, reading with the deadline
	// timeout and showing progress on progress (nil for none).
	Resolver func(timeout time.Duration, progress io.Writer) catalog.Resolver
	// Serve builds the serve command (its name and summary are the
	// command table's: "serve" and ServeShort).
	Serve func() *cmdline.Command
}

// network is what SetNetwork linked in; zero in cmd/kvcfg.
var network Network

// SetNetwork links the network front ends into this program; call it
// before Main.
func SetNetwork(n Network) { network = n }

// ServeShort is the serve command's summary.
const ServeShort = "Serve the planning HTTP API, the web page with charts, and Prometheus metrics"

// newServeCmd is the linked serve command, or one that hands the command
// line to kvcfg-net.
func newServeCmd() *cmdline.Command {
	if network.Serve != nil {
		return network.Serve()
	}
	return &cmdline.Command{Use: "serve", Short: ServeShort, DisableFlagParsing: true,
		Long: ServeShort + ".\n\nkvcfg serve runs as kvcfg-net serve, which links the HTTP server: kvcfg serve --help shows its flags.",
		RunE: func(cmd *cmdline.Command, _ []string) error {
			return needNetwork(cmd.Context(), "serve")
		}}
}

// hubResolver resolves Hub ids for the CLI: the resolver is built on
// first use, with the --timeout read then (flags are parsed after
// binding). Progress goes to standard error when it is a terminal.
// Without the network linked in, it asks Main to run the command as
// kvcfg-net.
type hubResolver struct {
	timeout time.Duration
	once    sync.Once
	r       catalog.Resolver
}

// Resolve implements catalog.Resolver.
func (h *hubResolver) Resolve(ctx context.Context, id, revision string) (*catalog.Model, error) {
	if network.Resolver == nil {
		return nil, needNetwork(ctx, fmt.Sprintf("reading %s from the Hugging Face Hub", id))
	}
	h.once.Do(func() {
		var progress io.Writer
		if isTerminal(os.Stderr) {
			progress = os.Stderr
		}
		h.r = network.Resolver(h.timeout, progress)
	})
	return h.r.Resolve(ctx, id, revision)
}

// bindHubFlags registers --revision (into rev; nil when the flag table
// binds it) and --timeout, and returns the resolver that reads Hub ids with
// them.
func bindHubFlags(fs *cmdline.FlagSet, rev *string) *hubResolver {
	h := &hubResolver{}
	if rev != nil {
		fs.StringVar(rev, "revision", "", revisionHelp)
	}
	fs.DurationVar(&h.timeout, "timeout", DefaultHubTimeout, "deadline for reading the model from the Hugging Face Hub")
	return h
}

const revisionHelp = "Hugging Face Hub revision of --model: branch, tag or commit (default main)"

// isTerminal reports whether f is a character device (a TTY).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
