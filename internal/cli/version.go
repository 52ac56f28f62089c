package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the kvcfg module version, commit and Go version",
		Long: `version prints the module version the binary was built from (a tag such as
v0.4.0 with go install ...@version, a pseudo-version from a checkout, or
"(devel)" when Go recorded none), the commit when known, and the Go version.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine(debug.ReadBuildInfo()))
			return err
		},
	}
}

// versionLine words the build info: "kvcfg VERSION (MODULE, commit C,
// GOVERSION)".
func versionLine(bi *debug.BuildInfo, ok bool) string {
	v, mod, goVersion := "(devel)", "github.com/kvcfg/kvcfg", runtime.Version()
	var extra []string
	if ok && bi != nil {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		if bi.Main.Path != "" {
			mod = bi.Main.Path
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			if modified == "true" {
				rev += "+dirty"
			}
			extra = append(extra, "commit "+rev)
		}
	}
	return fmt.Sprintf("kvcfg %s (%s)", v, strings.Join(append(append([]string{mod}, extra...), goVersion), ", "))
}
