package cli

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/hub"
)

// defaultHubTimeout bounds all the Hub reads of one command.
const defaultHubTimeout = 2 * time.Minute

// hubResolver resolves Hub ids for the CLI: the hub client is built from
// the environment on first use, with the --timeout read then (flags are
// parsed after binding). Progress goes to standard error when it is a
// terminal.
type hubResolver struct {
	timeout time.Duration
	once    sync.Once
	c       *hub.Client
}

// Resolve implements catalog.Resolver.
func (h *hubResolver) Resolve(ctx context.Context, id, revision string) (*catalog.Model, error) {
	h.once.Do(func() {
		o := hub.FromEnv()
		o.Timeout = h.timeout
		if isTerminal(os.Stderr) {
			o.Progress = os.Stderr
		}
		h.c = hub.New(o)
	})
	return h.c.Resolve(ctx, id, revision)
}

// bindHubFlags registers --revision (into rev; nil when the flag table
// binds it) and --timeout, and returns the resolver that reads Hub ids with
// them.
func bindHubFlags(fs *pflag.FlagSet, rev *string) *hubResolver {
	h := &hubResolver{}
	if rev != nil {
		fs.StringVar(rev, "revision", "", revisionHelp)
	}
	fs.DurationVar(&h.timeout, "timeout", defaultHubTimeout, "deadline for reading the model from the Hugging Face Hub")
	return h
}

const revisionHelp = "Hugging Face Hub revision of --model: branch, tag or commit (default main)"

// isTerminal reports whether f is a character device (a TTY).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
