package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kvcfg/kvcfg/catalog"
)

// modelRow is one line of `kvcfg models -o json`.
type modelRow struct {
	Name          string `json:"name"`
	Architecture  string `json:"architecture"`
	NumLayers     int    `json:"num_layers"`
	AttentionKind string `json:"attention_kind"`
	Layout        string `json:"layout"`
	ContextLength int    `json:"context_length"`
	ParamsTotal   int64  `json:"params_total"`
	HybridSWAPool bool   `json:"hybrid_swa_pool"`
	QuantMethod   string `json:"quant_method,omitempty"`
}

func newModelsCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "models",
		Short: "List the models of the built-in catalog (usable as --model NAME)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format, outTable, outJSON, outYAML); err != nil {
				return &exitError{code: 2, err: err}
			}
			rows := make([]modelRow, 0, len(catalog.Names()))
			for _, name := range catalog.Names() {
				s, err := catalog.Load(name)
				if err != nil {
					return err
				}
				sum := s.Summary()
				kind := "none"
				if sum.AttentionKind != nil {
					kind = string(*sum.AttentionKind)
				}
				r := modelRow{
					Name: s.Name, Architecture: s.Architecture, NumLayers: s.NumLayers,
					AttentionKind: kind, Layout: layerBreakdown(sum), ContextLength: s.ContextLength,
					ParamsTotal: s.Params.Total, HybridSWAPool: s.HybridSWAPool,
				}
				if s.Quant != nil {
					r.QuantMethod = s.Quant.Method
				}
				rows = append(rows, r)
			}
			w := cmd.OutOrStdout()
			if ok, err := writeStructured(w, format, rows); ok {
				return err
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tARCHITECTURE\tLAYERS\tATTENTION\tCONTEXT\tPARAMS")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", r.Name, r.Architecture, r.Layout, r.AttentionKind, r.ContextLength, humanCount(r.ParamsTotal))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", outTable, "output format: table, json or yaml")
	return cmd
}
