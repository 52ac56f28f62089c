package plan

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/kvcfg/kvcfg/units"
)

// WriteText prints r as `kvcfg plan` does: a two-column summary (settings,
// pool sizes, concurrency), the memory budget per GPU, then the engine's
// log lines, the warnings and the error with its fix when there are any.
// It returns the first error writing to w.
func (r *Report) WriteText(w io.Writer) error {
	sw := &stickyWriter{w: w}
	if r.Verdict != "" {
		fmt.Fprintln(sw, r.Answer) // the answer names the verdict
		if bound, lift := r.limitsText(); bound != "" {
			fmt.Fprintln(sw, bound)
			if lift != "" {
				fmt.Fprintln(sw, lift)
			}
		}
		if r.Verdict != VerdictServes && r.FixHint != "" {
			fmt.Fprintln(sw, "fix: "+r.FixHint)
			if len(r.FixArgs) > 0 {
				fmt.Fprintln(sw, "  flags: "+strings.Join(r.FixArgs, " "))
			}
		}
		fmt.Fprintln(sw)
	}
	tw := tabwriter.NewWriter(sw, 0, 0, 2, ' ', 0)
	for _, row := range r.summaryRows() {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	tw.Flush()
	if !r.refusedBeforeSizing() {
		fmt.Fprintln(sw, "\nMEMORY PER GPU")
		tw = tabwriter.NewWriter(sw, 0, 0, 2, ' ', 0)
		for _, row := range r.memoryRows() {
			fmt.Fprintf(tw, "  %s\t%s\n", row[0], row[1])
		}
		tw.Flush()
	}
	if rows := r.budgetRows(); len(rows) > 0 {
		fmt.Fprintln(sw, "\nKV BUDGET PER GPU (each term and where it came from)")
		tw = tabwriter.NewWriter(sw, 0, 0, 2, ' ', 0)
		for _, row := range rows {
			fmt.Fprintf(tw, "  %s\t%s\n", row[0], row[1])
		}
		tw.Flush()
	}
	if len(r.LogLines) > 0 {
		fmt.Fprintln(sw, "\nENGINE LOG")
		for _, l := range r.LogLines {
			fmt.Fprintln(sw, "  "+l)
		}
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintln(sw, "\nWARNINGS")
		for _, l := range r.Warnings {
			fmt.Fprintln(sw, "  - "+l)
		}
	}
	if r.Error != "" && r.Verdict == "" { // else the answer quotes it
		fmt.Fprintln(sw, "\nENGINE ERROR\n  "+r.Error)
		if r.FixHint != "" && r.Verdict == "" { // else the fix heads the page
			fmt.Fprintln(sw, "  fix: "+r.FixHint)
		}
	}
	return sw.err
}

// WriteMarkdown prints r as `kvcfg plan -o markdown` does: the rows of
// WriteText as Markdown tables, the log lines in a code block, then the
// warnings and the error with its fix. It returns the first error writing
// to w.
func (r *Report) WriteMarkdown(w io.Writer) error {
	sw := &stickyWriter{w: w}
	fmt.Fprintf(sw, "## KV cache plan: %s on %s\n\n", r.Model, r.GPU)
	if r.Verdict != "" {
		fmt.Fprintf(sw, "**%s**\n\n", mdEscape(r.Answer))
		if bound, lift := r.limitsText(); bound != "" {
			fmt.Fprintf(sw, "%s\n\n", mdEscape(bound))
			if lift != "" {
				fmt.Fprintf(sw, "%s\n\n", mdEscape(lift))
			}
		}
		if r.Verdict != VerdictServes && r.FixHint != "" {
			fmt.Fprintf(sw, "**Fix:** %s\n\n", mdEscape(r.FixHint))
		}
	}
	fmt.Fprint(sw, "| | |\n|---|---|\n")
	for _, row := range r.summaryRows() {
		fmt.Fprintf(sw, "| %s | %s |\n", row[0], mdEscape(row[1]))
	}
	if !r.refusedBeforeSizing() {
		fmt.Fprint(sw, "\n### Memory per GPU\n\n| | |\n|---|---:|\n")
		for _, row := range r.memoryRows() {
			fmt.Fprintf(sw, "| %s | %s |\n", row[0], mdEscape(row[1]))
		}
	}
	if rows := r.budgetRows(); len(rows) > 0 {
		fmt.Fprint(sw, "\n### KV budget per GPU\n\n| term | bytes, origin |\n|---|---|\n")
		for _, row := range rows {
			fmt.Fprintf(sw, "| %s | %s |\n", row[0], mdEscape(row[1]))
		}
	}
	if len(r.LogLines) > 0 {
		fmt.Fprint(sw, "\n### Engine log\n\n```\n")
		for _, l := range r.LogLines {
			fmt.Fprintln(sw, l)
		}
		fmt.Fprintln(sw, "```")
	}
	if len(r.Warnings) > 0 {
		fmt.Fprint(sw, "\n### Warnings\n\n")
		for _, l := range r.Warnings {
			fmt.Fprintln(sw, "- "+mdEscape(l))
		}
	}
	if r.Error != "" && r.Verdict == "" {
		fmt.Fprintf(sw, "\n### Engine error\n\n%s\n", mdEscape(r.Error))
		if r.FixHint != "" && r.Verdict == "" {
			fmt.Fprintf(sw, "\n**Fix:** %s\n", mdEscape(r.FixHint))
		}
	}
	return sw.err
}

// stickyWriter remembers the first write error and writes nothing after
// it, so a printer can write freely and report the error once.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.err = err
	return n, err
}

// summaryRows returns the summary rows shared by the text and markdown
// views: the engine's settings, pool sizes and concurrency.
func (r *Report) summaryRows() [][2]string {
	rows := [][2]string{
		{"engine", r.Engine},
		{"model", fmt.Sprintf("%s%s (%s, %s attention)", r.Model, shortRevision(r.ModelRevision), r.Architecture, r.AttentionKind)},
		{"gpu", fmt.Sprintf("%d × %s (%s), tp %d, pp %d, dp %d", r.NumGPUs, r.GPU, units.FormatBytes(r.GPUMemory), r.TPSize, r.PPSize, r.DPSize)},
		{"kv_cache_dtype", fmt.Sprintf("%s → %s (%s)", r.KVCacheDType, r.ResolvedKVCacheDType, r.KVCacheTorchDType)},
	}
	if r.refusedBeforeSizing() {
		// Refused before any pool was sized: the sizing rows would be zeros.
		rows[3][1] = r.KVCacheDType
		return rows
	}
	cell := [2]string{"cell_size", cellSize(r.CellSizeBytes) + " bytes per token per GPU"}
	if r.Engine == EngineVLLM {
		util := "— (KV budget given)"
		if r.GPUMemoryUtilization > 0 {
			util = strconv.FormatFloat(r.GPUMemoryUtilization, 'f', -1, 64)
		}
		rows = append(rows,
			[2]string{"vllm_version", r.VLLMVersion},
			[2]string{"gpu_memory_utilization", util},
			[2]string{"block_size", fmt.Sprint(r.BlockSize)},
			[2]string{"max_model_len", group3(int64(r.MaxModelLen))},
			[2]string{"kv cache", fmt.Sprintf("%s, %d KV layers per GPU", r.Configurator, r.KVLayers)},
			cell,
			[2]string{"num_gpu_blocks", group3(r.NumGPUBlocks)},
			[2]string{"kv_cache_size_tokens", group3(r.KVCacheSizeTokens)},
			[2]string{"max_concurrency", strconv.FormatFloat(r.MaxConcurrency, 'f', 2, 64) + "x at max_model_len"},
			[2]string{"max_num_seqs", group3(int64(r.MaxRunningRequests))},
			r.kvSizeRow(),
		)
		return append(rows, r.hostTierRows()...)
	}
	if r.Engine == EngineTRTLLM {
		rows = append(rows,
			[2]string{"trtllm_version", r.TRTLLMVersion},
			[2]string{"free_gpu_memory_fraction", strconv.FormatFloat(r.FreeGPUMemoryFraction, 'f', -1, 64)},
			[2]string{"tokens_per_block", fmt.Sprint(r.TokensPerBlock)},
			[2]string{"max_seq_len", group3(int64(r.MaxSeqLen))},
			[2]string{"kv cache", fmt.Sprintf("%s, %d KV layers per GPU", r.Configurator, r.KVLayers)},
			cell,
			[2]string{"estimate bytes per token", group3(r.EstimateBytesPerToken)},
			[2]string{"num_blocks", group3(r.NumBlocks)},
			[2]string{"max_tokens", group3(r.MaxTokens)},
			[2]string{"max_batch_size", group3(int64(r.MaxRunningRequests))},
			[2]string{"max concurrency at max_seq_len", group3(r.MaxConcurrencyAtContextLength)},
			r.kvSizeRow(),
		)
		return append(rows, r.hostTierRows()...)
	}
	if r.SGLangProfile != "" {
		rows = append(rows, [2]string{"sglang_profile", r.SGLangProfile})
	}
	if r.NSAPrefillBackend != "" || r.NSADecodeBackend != "" {
		rows = append(rows, [2]string{"nsa backends", fmt.Sprintf("prefill %s, decode %s", r.NSAPrefillBackend, r.NSADecodeBackend)})
	}
	rows = append(rows,
		[2]string{"mem_fraction_static", fmt.Sprintf("%.3f", r.MemFractionStatic)},
		[2]string{"page_size", fmt.Sprint(r.PageSize)},
		[2]string{"context_length", group3(int64(r.ContextLength))},
		[2]string{"configurator", fmt.Sprintf("%s, %d KV layers per GPU", r.Configurator, r.KVLayers)},
		cell,
		[2]string{"max_total_num_tokens", group3(r.MaxTotalNumTokens)},
	)
	if r.FullMaxTotalNumTokens > 0 || r.SWAMaxTotalNumTokens > 0 {
		rows = append(rows, [2]string{"full / swa tokens", group3(r.FullMaxTotalNumTokens) + " / " + group3(r.SWAMaxTotalNumTokens)})
	}
	rows = append(rows, [2]string{"max_running_requests", group3(int64(r.MaxRunningRequests))})
	if r.MaxMambaCacheSize > 0 {
		rows = append(rows, [2]string{"max_mamba_cache_size", fmt.Sprintf("%s (%s per request)", group3(r.MaxMambaCacheSize), units.FormatBytes(r.MambaStateBytesPerRequest))})
	}
	rows = append(rows,
		[2]string{"max concurrency at context length", group3(r.MaxConcurrencyAtContextLength)},
		r.kvSizeRow(),
	)
	if r.IndexerBytes > 0 && r.DSV4 == nil {
		rows = append(rows, [2]string{"indexer cache", units.FormatBytes(r.IndexerBytes)})
	}
	rows = append(rows, r.dsv4Rows()...)
	rows = append(rows, r.unifiedRows()...)
	return append(rows, r.hostTierRows()...)
}

// dsv4Rows are DeepSeek-V4's sub-pools: tokens as SGLang logs them, and
// their bytes on one rank.
func (r *Report) dsv4Rows() [][2]string {
	d := r.DSV4
	if d == nil {
		return nil
	}
	b := units.FormatBytes
	t, y := d.Tokens, d.Bytes
	rows := [][2]string{
		{"dsv4 pools (tokens)", fmt.Sprintf("full %s, swa %s, c4 %s, c128 %s, c4_state %s, c128_state %s",
			group3(t.Full), group3(t.SWA), group3(t.C4), group3(t.C128), group3(t.C4State), group3(t.C128State))},
		{"dsv4 pools (bytes)", fmt.Sprintf("swa %s, c4 %s, c128 %s, indexer %s, c4_state %s, c128_state %s",
			b(y.SWA), b(y.C4), b(y.C128), b(y.Indexer), b(y.C4State), b(y.C128State))},
		{"c128_state fixed term", fmt.Sprintf("%s (taken off the budget before dividing; compress state %s, rings c4 %d / c128 %d)",
			b(d.C128StateFixedBytes), d.CompressStateDType, d.C4Ring, d.C128Ring)},
	}
	if y.Draft > 0 {
		rows = append(rows, [2]string{"mtp draft pools", b(y.Draft)})
	}
	return rows
}

// kvSizeRow shows the pool size as the engine logs it: one latent buffer
// ("KV size") for MLA/DSA pools, else separate K and V sizes.
func (r *Report) kvSizeRow() [2]string {
	if r.DSV4 != nil {
		return [2]string{"KV size (all dsv4 pools)", units.FormatBytes(r.KSizeBytes)}
	}
	if r.UnifiedMemoryPool != nil {
		return [2]string{"KV size (unified buffer)", units.FormatBytes(r.KSizeBytes)}
	}
	if r.VSizeBytes == 0 && (r.AttentionKind == "mla" || r.AttentionKind == "dsa") {
		return [2]string{"KV size", units.FormatBytes(r.KSizeBytes)}
	}
	return [2]string{"K / V size", units.FormatBytes(r.KSizeBytes) + " / " + units.FormatBytes(r.VSizeBytes)}
}

// memoryRows is the per-GPU budget, top down (see Breakdown).
func (r *Report) memoryRows() [][2]string {
	b := r.Breakdown
	gib := units.FormatBytes
	rows := [][2]string{
		{"total", gib(b.TotalBytes)},
		{"runtime overhead", gib(b.RuntimeOverheadBytes)},
		{"free before weights", gib(b.PreLoadFreeBytes)},
		{"weights", gib(b.WeightsBytes) + " (" + r.WeightsSource + ")"},
	}
	if b.FirstKernelBytes > 0 {
		rows = append(rows, [2]string{"first CUDA kernel (in load_model)", gib(b.FirstKernelBytes)})
	}
	rows = append(rows,
		[2]string{"free after weights", gib(b.PostLoadFreeBytes)},
		[2]string{"reserved (activations, CUDA graphs)", gib(b.ReservedBytes)})
	if b.MultimodalCacheBytes > 0 {
		rows = append(rows, [2]string{"multimodal cache", gib(b.MultimodalCacheBytes)})
	}
	if b.StateBytes > 0 {
		rows = append(rows, [2]string{"mamba state", gib(b.StateBytes)})
	}
	rows = append(rows,
		[2]string{"KV budget", gib(b.KVBudgetBytes)},
		[2]string{"KV pool", gib(b.KVPoolBytes)},
	)
	if b.OverBudgetBytes > 0 {
		return append(rows, [2]string{"over budget", gib(b.OverBudgetBytes) + " (taken from the reserve: see the warnings)"})
	}
	return append(rows, [2]string{"unused", gib(b.UnusedBytes)})
}

// mdEscape keeps a table cell's pipes from ending the cell.
func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// refusedBeforeSizing reports whether the engine refused before it sized
// anything: the sizing and memory rows would all be zeros.
func (r *Report) refusedBeforeSizing() bool {
	return r.Error != "" && r.CellSizeBytes == 0 && r.Breakdown.WeightsBytes == 0
}

// shortRevision writes a Hub commit as "@" and its first 12 hex digits ("" for none).
func shortRevision(commit string) string {
	if commit == "" {
		return ""
	}
	return "@" + commit[:min(12, len(commit))]
}

// cellSize writes bytes per token as every other count prints: thousands
// grouped, a fraction (a page's bytes over its tokens) to one decimal.
func cellSize(b float64) string {
	whole := int64(b)
	frac := strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", b-float64(whole)), "0"), ".")
	if frac == "1" { // rounds up to the next whole byte
		return group3(whole + 1)
	}
	return group3(whole) + strings.TrimPrefix(frac, "0")
}
