package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/weights"
)

func newInspectCmd() *cobra.Command {
	var (
		ref      string
		format   string
		revision string
		resolver *hubResolver
	)
	cmd := &cobra.Command{
		Use:   "inspect [--model PATH|NAME]",
		Short: "Print the KV-relevant shape of a model (config.json, model directory, catalog name or Hub id)",
		Long: `Print the model spec that KV sizing uses: layers and their kinds (full,
sliding-window, linear/Mamba), KV heads, head dims, MLA/DSA dims, context
length and dtype.

--model accepts a config.json path (./my-model/config.json), a model
directory holding one, the
HuggingFace id of a model in the built-in catalog (case-insensitive; see
` + "`kvcfg models`" + `), or a Hugging Face id ("org/name[@revision]"): from the
local HuggingFace cache ($HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub),
else from the Hub ($HF_ENDPOINT, token $HF_TOKEN), reading config.json and only
the headers of the safetensors shards (their tensor bytes by dtype and kind
are printed; no weight data is downloaded). HF_HUB_OFFLINE=1 uses the caches
only.`,
		Example: `  kvcfg inspect --model meta-llama/Llama-3.1-8B-Instruct
  kvcfg inspect Qwen/Qwen3-8B -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, outTable, outJSON, outYAML); err != nil {
				return &exitError{code: 2, err: err}
			}
			if len(args) == 1 {
				if cmd.Flags().Changed("model") {
					return &exitError{code: 2, err: fmt.Errorf("give the model either as an argument or with --model, not both")}
				}
				ref = args[0]
			}
			m, err := catalog.OpenContext(cmd.Context(), ref, catalog.Options{Revision: revision, Resolver: resolver})
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			out := inspectOutput{Summary: m.Spec.Summary(), ModelRevision: m.Revision}
			if m.Headers != nil {
				t := weights.Sum(m.Headers, m.Spec)
				out.Weights, out.WeightsSource = &t, string(weights.HubSafetensors)+":"+m.Name+"@"+m.Revision
			}
			w := cmd.OutOrStdout()
			if ok, err := writeStructured(w, format, out); ok {
				return err
			}
			return writeSummaryTable(w, out.Summary, weightRows(out)...)
		},
	}
	cmd.Flags().StringVarP(&ref, "model", "m", catalog.Default, "config.json path, model directory, catalog name or Hugging Face id org/name")
	resolver = bindHubFlags(cmd.Flags(), &revision)
	cmd.Flags().StringVarP(&format, "output", "o", outTable, "output format: table, json or yaml")
	return cmd
}

// inspectOutput is what inspect prints: the model summary and, for a
// model read from the Hub, its commit and checkpoint tensor bytes.
type inspectOutput struct {
	model.Summary
	ModelRevision string          `json:"model_revision,omitempty"`
	WeightsSource string          `json:"weights_source,omitempty"`
	Weights       *weights.Totals `json:"weights,omitempty"`
}

// weightRows are the table rows of the revision and the checkpoint's
// tensor bytes.
func weightRows(o inspectOutput) [][2]string {
	var rows [][2]string
	if o.ModelRevision != "" {
		rows = append(rows, [2]string{"revision", o.ModelRevision})
	}
	if t := o.Weights; t != nil {
		rows = append(rows,
			[2]string{"weights (checkpoint)", fmt.Sprintf("%s in %s tensors (%s)", gibs(t.Bytes), group(int64(t.Tensors)), o.WeightsSource)},
			[2]string{"  by dtype", byteMap(t.ByDType)},
			[2]string{"  by kind", byteMap(t.ByKind)})
	}
	return rows
}

// byteMap writes "BF16 15.26 GiB, F32 1.00 KiB", largest first.
func byteMap(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + gibs(m[k])
	}
	return strings.Join(parts, ", ")
}

// writeSummaryTable prints a model summary as aligned key/value lines,
// then the extra rows.
func writeSummaryTable(w io.Writer, s model.Summary, extra ...[2]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	opt := func(v *int) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprint(*v)
	}
	row("name", s.Name)
	row("architecture", s.Architecture)
	row("model type", s.ModelType)
	row("layers", layerBreakdown(s))
	row("attention", s.Attention)
	row("attention heads", opt(s.NumAttentionHeads))
	row("kv heads", opt(s.NumKVHeads))
	if s.KVBytesPerToken > 0 {
		row("kv bytes per token", group(s.KVBytesPerToken)+" (K+V of all attention layers on one GPU in the model dtype, before engine rules)")
	}
	row("head dim (k/v)", opt(s.HeadDim)+" / "+opt(s.VHeadDim))
	if s.KVLoraRank != nil {
		row("mla kv_lora_rank", opt(s.KVLoraRank))
		row("mla qk_rope_head_dim", opt(s.QKRopeHeadDim))
		row("mla qk_nope_head_dim", opt(s.QKNopeHeadDim))
	}
	if s.IndexHeadDim != nil {
		row("dsa index_head_dim", opt(s.IndexHeadDim))
		row("dsa index_topk", opt(s.IndexTopK))
	}
	if s.SlidingWindow != nil {
		row("sliding window", fmt.Sprintf("%s (engine %s)", opt(s.SlidingWindow), opt(s.EngineSlidingWindow)))
		row("sliding kv heads / dims", fmt.Sprintf("%s / %s / %s", opt(s.SWANumKVHeads), opt(s.SWAHeadDim), opt(s.SWAVHeadDim)))
		pool := "no (one full-size pool; the window applies in the kernel only)"
		if s.HybridSWAPool {
			pool = "yes (separate full and sliding pools)"
		}
		row("sglang hybrid swa pool", pool)
	}
	if l := s.LinearAttention; l != nil {
		row("state kind", l.Kind)
		row("state dims", fmt.Sprintf("heads %d, head_dim %d, state %d, groups %d, conv kernel %d, intermediate %d",
			l.NumHeads, l.HeadDim, l.StateSize, l.NGroups, l.ConvKernel, l.IntermediateSize))
		if l.ConfigSSMDType != "" {
			row("state ssm dtype", l.ConfigSSMDType)
		}
	}
	row("context length", group(int64(s.ContextLength)))
	cfg := "(not set)"
	if s.ConfigDType != nil {
		cfg = *s.ConfigDType
	}
	row("dtype (config / model)", cfg+" / "+s.ModelDType)
	if q := s.Quantization; q != nil {
		v := q.Method
		if q.WeightBits > 0 {
			v += fmt.Sprintf(", %d-bit weights", q.WeightBits)
		}
		if q.KVCacheQuantAlgo != "" {
			v += ", kv cache " + q.KVCacheQuantAlgo
		}
		row("quantization", v)
	}
	if s.NumNextNPredictLayers > 0 {
		row("mtp layers", fmt.Sprint(s.NumNextNPredictLayers))
	}
	row("multimodal", fmt.Sprint(s.Multimodal))
	p := s.Params
	params := fmt.Sprintf("%s total, %s active", humanCount(p.Total), humanCount(p.Active))
	if p.MTP > 0 {
		params += fmt.Sprintf(", +%s mtp", humanCount(p.MTP))
	}
	row("parameters (est.)", params)
	for _, warn := range s.Warnings {
		row("warning", warn)
	}
	for _, r := range extra {
		row(r[0], r[1])
	}
	return tw.Flush()
}

// layerBreakdown writes "48 (12 full, 36 linear)".
func layerBreakdown(s model.Summary) string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(s.NumFullAttentionLayers, "full")
	add(s.NumSWALayers, "sliding")
	add(s.NumLinearAttentionLayers, "linear")
	add(s.NumNoCacheLayers, "mlp-only")
	return fmt.Sprintf("%d (%s)", s.NumLayers, strings.Join(parts, ", "))
}

// humanCount writes a parameter count as 8.03B, 671B, 1.03T.
func humanCount(n int64) string {
	f := float64(n)
	switch {
	case f >= 0.9995e12:
		return fmt.Sprintf("%.2fT", f/1e12)
	case f >= 0.9995e11:
		return fmt.Sprintf("%.0fB", f/1e9)
	case f >= 0.9995e9:
		return fmt.Sprintf("%.2fB", f/1e9)
	case f >= 1e6:
		return fmt.Sprintf("%.0fM", f/1e6)
	}
	return fmt.Sprint(n)
}
