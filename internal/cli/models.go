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
	// NumKVHeads is the total KV head count (0 without attention layers).
	NumKVHeads int `json:"num_kv_heads"`
	// KVBytesPerToken is the raw K+V bytes of one token on one GPU in the
	// model dtype, all attention layers (model.Spec.KVBytesPerToken).
	KVBytesPerToken int64  `json:"kv_bytes_per_token"`
	Layout          string `json:"layout"`
	ContextLength   int    `json:"context_length"`
	ParamsTotal     int64  `json:"params_total"`
	HybridSWAPool   bool   `json:"hybrid_swa_pool"`
	QuantMethod     string `json:"quant_method,omitempty"`
}

func newModelsCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "models",
		Short: "List the models of the built-in catalog (usable as --model NAME)",
		Long: `models lists the built-in catalog. ATTENTION is mha, gqa, mqa, mla, dsa or
none; KV B/TOKEN is the K+V bytes of one token on one GPU in the model dtype,
all attention layers, before any engine's page, scale or window rules (for
the engine's own figure, run kvcfg plan).`,
		Args: cobra.NoArgs,
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
				kind := s.AttentionLabel()
				r := modelRow{
					Name: s.Name, Architecture: s.Architecture, NumLayers: s.NumLayers,
					AttentionKind: kind, Layout: layerBreakdown(sum), ContextLength: s.ContextLength,
					KVBytesPerToken: s.KVBytesPerToken(s.ModelDType.Size()),
					ParamsTotal:     s.Params.Total, HybridSWAPool: s.HybridSWAPool,
				}
				if s.Quant != nil {
					r.QuantMethod = s.Quant.Method
				}
				if sum.NumKVHeads != nil {
					r.NumKVHeads = *sum.NumKVHeads
				}
				rows = append(rows, r)
			}
			w := cmd.OutOrStdout()
			if ok, err := writeStructured(w, format, rows); ok {
				return err
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tARCHITECTURE\tLAYERS\tATTENTION\tKV HEADS\tKV B/TOKEN\tCONTEXT\tPARAMS")
			for _, r := range rows {
				heads, perTok := "-", "-"
				if r.NumKVHeads > 0 {
					heads = fmt.Sprint(r.NumKVHeads)
				}
				if r.KVBytesPerToken > 0 {
					perTok = group(r.KVBytesPerToken)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Architecture, r.Layout, r.AttentionKind, heads, perTok, group(int64(r.ContextLength)), humanCount(r.ParamsTotal))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", outTable, "output format: table, json or yaml")
	return cmd
}
