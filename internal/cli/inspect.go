package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(owner of this command): placeholder until the command lands.
func newInspectCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "inspect",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("inspect: not built yet") },
	}
}
