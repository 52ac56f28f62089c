package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kvcfg/kvcfg/gpu"
)

func newGPUsCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "gpus",
		Short: "List the GPUs kvcfg knows (names accepted by --gpu)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format, outTable, outJSON, outYAML, outMarkdown); err != nil {
				return &exitError{code: 2, err: err}
			}
			all := gpu.All()
			if ok, err := writeStructured(cmd.OutOrStdout(), format, all); ok {
				return err
			}
			w := cmd.OutOrStdout()
			if strings.EqualFold(format, outMarkdown) {
				fmt.Fprintln(w, "| GPU | Memory (MiB, nvidia-smi) | GiB | CUDA total (MiB) | GiB | CUDA total from | Vendor | Platform | Arch | SM | Aliases |")
				fmt.Fprintln(w, "|---|---:|---:|---:|---:|---|---|---|---|---:|---|")
				for _, g := range all {
					fmt.Fprintf(w, "| %s | %d | %.2f | %d | %.2f | %s | %s | %s | %s | %d | %s |\n", g.Name, g.MemoryMiB,
						float64(g.MemoryMiB)/1024, g.CUDATotalMiB, float64(g.CUDATotalMiB)/1024, g.CUDATotalSource,
						g.Vendor, g.Platform, g.Arch, g.SM, strings.Join(g.Aliases, ", "))
				}
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "GPU\tMEMORY (NVIDIA-SMI)\tCUDA TOTAL\tVENDOR\tPLATFORM\tARCH\tSM\tDESCRIPTION")
			for _, g := range all {
				sm := "-"
				if g.SM > 0 {
					sm = fmt.Sprint(g.SM)
				}
				desc := g.Description
				if g.Unified {
					desc += " (unified memory: plan it with --gpu-memory)"
				}
				fmt.Fprintf(tw, "%s\t%s MiB (%.2f GiB)\t%s MiB (%.2f GiB)\t%s\t%s\t%s\t%s\t%s\n", g.Name, group(g.MemoryMiB),
					float64(g.MemoryMiB)/1024, group(g.CUDATotalMiB), float64(g.CUDATotalMiB)/1024, g.Vendor, g.Platform, g.Arch, sm, desc)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", outTable, "output format: table, json, yaml or markdown")
	return cmd
}
