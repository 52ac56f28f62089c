package cli

import (
	"context"
	"io"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/hub"
)

// DefaultHubTimeout bounds all the Hub reads of one command.
const DefaultHubTimeout = 2 * time.Minute

// hubResolver resolves Hub ids for the CLI: the client is built from the
// environment (HF_ENDPOINT, HF_TOKEN, HF_HOME, HF_HUB_OFFLINE, ...) on
// first use, with the --timeout read then (flags are parsed after
// binding). Progress goes to standard error when it is a terminal.
type hubResolver struct {
	timeout time.Duration
	once    sync.Once
	c       *hub.Client
}

// Resolve implements catalog.Resolver.
func (h *hubResolver) Resolve(ctx context.Context, id, revision string) (*catalog.Model, error) {
	h.once.Do(func() {
		var progress io.Writer
		if isTerminal(os.Stderr) {
			progress = os.Stderr
		}
		h.c = newHubClient(h.timeout, progress)
	})
	return h.c.Resolve(ctx, id, revision)
}

// newHubClient returns the Hub client the environment configures, reading
// with the deadline timeout and showing progress on progress (nil for
// none).
func newHubClient(timeout time.Duration, progress io.Writer) *hub.Client {
	o := hub.FromEnv()
	o.Timeout = timeout
	o.Progress = progress
	return hub.New(o)
}

// bindHubFlags registers --revision (into rev; nil when the flag table
// binds it) and --timeout, and returns the resolver that reads Hub ids with
// them.
func bindHubFlags(fs *pflag.FlagSet, rev *string) *hubResolver {
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
