package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(owner of this command): placeholder until the command lands.
func newModelsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "models",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("models: not built yet") },
	}
}
