package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(owner of this command): placeholder until the command lands.
func newExplainCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "explain",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("explain: not built yet") },
	}
}
