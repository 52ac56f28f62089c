package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(owner of this command): placeholder until the command lands.
func newPlanCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "plan",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("plan: not built yet") },
	}
}
