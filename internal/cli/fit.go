package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(owner of this command): placeholder until the command lands.
func newFitCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "fit",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("fit: not built yet") },
	}
}
