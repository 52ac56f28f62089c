package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(owner of this command): placeholder until the command lands.
func newServeCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "serve",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("serve: not built yet") },
	}
}
