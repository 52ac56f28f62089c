package cli

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// `kvcfg plan` with comma lists plans every combination. Known answers:
// docs/sglang.md#ex1 (pre 78.50 GiB, post 63.54 GiB) gives bf16 414,412 and
// fp8 828,825 tokens at mem_fraction_static 0.835, 456,212 and 912,424 at
// 0.9 (plan's sweep tests derive them).
func TestPlanCommaLists(t *testing.T) {
	measured := []string{"plan", "--pre-load-free-memory", "78.50GiB", "--post-load-free-memory", "63.54GiB",
		"--mem-fraction-static", "0.835,0.9", "--kv-cache-dtype", "bf16,fp8_e4m3"}
	want := [][]string{
		{"0.835", "bf16", "414412"}, {"0.835", "fp8_e4m3", "828825"},
		{"0.9", "bf16", "456212"}, {"0.9", "fp8_e4m3", "912424"},
	}
	tests := []struct {
		format string
		rows   func(t *testing.T, out string) [][]string
	}{
		{"csv", func(t *testing.T, out string) [][]string {
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if diff := cmp.Diff("mem_fraction_static,kv_cache_dtype,engine,gpu,num_gpus,resolved_kv_cache_dtype", strings.Join(strings.Split(lines[0], ",")[:6], ",")); diff != "" {
				t.Errorf("header (-want +got):\n%s", diff)
			}
			var rows [][]string
			for _, l := range lines[1:] {
				f := strings.Split(l, ",")
				rows = append(rows, []string{f[0], f[1], f[7]})
			}
			return rows
		}},
		{"table", func(t *testing.T, out string) [][]string {
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if !strings.HasPrefix(lines[0], "MEM_FRACTION_STATIC  KV_CACHE_DTYPE  ENGINE") {
				t.Errorf("header %q", lines[0])
			}
			var rows [][]string
			for _, l := range lines[1:] {
				f := strings.Fields(l)
				rows = append(rows, []string{f[0], f[1], strings.ReplaceAll(f[7], ",", "")}) // the table groups thousands
			}
			return rows
		}},
		{"json", func(t *testing.T, out string) [][]string {
			var recs []struct {
				Values map[string]string `json:"values"`
				Report struct {
					MaxTotalNumTokens int64 `json:"max_total_num_tokens"`
				} `json:"report"`
			}
			if err := json.Unmarshal([]byte(out), &recs); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var rows [][]string
			for _, r := range recs {
				rows = append(rows, []string{r.Values["mem_fraction_static"], r.Values["kv_cache_dtype"], strconv.FormatInt(r.Report.MaxTotalNumTokens, 10)})
			}
			return rows
		}},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			out, errOut, code := run(t, append(measured, "-o", tt.format)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if diff := cmp.Diff(want, tt.rows(t, out)); diff != "" {
				t.Errorf("rows (-want +got):\n%s\n%s", diff, out)
			}
		})
	}
}

// Exit statuses of a list plan: 2 for a bad element or a format the sweep
// does not print, 1 when no combination plans; a single value still plans
// once and prints the one report.
func TestPlanCommaListErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"bad element", []string{"plan", "--tp-size", "1,x"}, 2},
		{"bad single value", []string{"plan", "--tp-size", "x"}, 2},
		{"bad format", []string{"plan", "--tp-size", "1,2", "-o", "xml"}, 2},
		{"two lists for one field", []string{"plan", "--tp", "1,2", "--tp-size", "4,8"}, 2},
		{"none plans", []string{"plan", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "L4,T4"}, 1},
		{"model twice", []string{"plan", "Qwen/Qwen3-8B", "--model", "Qwen/Qwen3-8B", "--tp-size", "1,2"}, 2},
		{"one value", []string{"plan", "--tp-size", "2", "-o", "json"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s%s", code, tt.code, out, errOut)
			}
			if tt.code == 0 && !strings.HasPrefix(strings.TrimSpace(out), "{") {
				t.Errorf("one value: want one JSON report, got %.80q", out)
			}
		})
	}
}

// The vLLM table shows vLLM's own figures, not SGLang's; --kv-cache-memory,
// --max-model-len -1 and --num-gpu-blocks-override reach the planner
// (known answers: docs/vllm.md#known-answers, 2.89 GiB → 1478 blocks; latest keeps one
// null block out of the auto-fit: 1477 × 16 = 23,632 tokens).
func TestPlanVLLMTable(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    map[string]string
		missing []string
	}{
		{"defaults", []string{"--engine", "vllm"},
			map[string]string{"vllm_version": "latest", "gpu_memory_utilization": "0.92", "block_size": "16"},
			[]string{"mem_fraction_static", "page_size", "max_total_num_tokens"}},
		{"0.11 default utilization", []string{"--engine", "vllm", "--vllm-version", "0.11", "--max-model-len", "8192"},
			map[string]string{"vllm_version": "0.11", "gpu_memory_utilization": "0.9", "max_model_len": "8,192"}, nil},
		{"measured KV memory, auto-fit", []string{"--engine", "vllm", "--kv-cache-memory", "3100639232", "--max-model-len", "-1"},
			map[string]string{"num_gpu_blocks": "1,478", "kv_cache_size_tokens": "23,648", "max_model_len": "23,632", "gpu_memory_utilization": "— (KV budget given)"}, nil},
		{"block override", []string{"--engine", "vllm", "--kv-cache-memory", "3100639232", "--max-model-len", "8192", "--num-gpu-blocks-override", "1000", "--enforce-eager"},
			map[string]string{"num_gpu_blocks": "1,000", "kv_cache_size_tokens": "16,000", "max_concurrency": "1.95x at max_model_len"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, append([]string{"plan"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			rows := map[string]string{}
			for _, l := range strings.Split(out, "\n") {
				if l == "" || strings.HasPrefix(l, " ") {
					continue
				}
				k, v, _ := strings.Cut(l, "  ")
				rows[k] = strings.TrimSpace(v)
			}
			got := map[string]string{}
			for k := range tt.want {
				got[k] = rows[k]
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rows (-want +got):\n%s\n%s", diff, out)
			}
			for _, k := range tt.missing {
				if _, ok := rows[k]; ok {
					t.Errorf("row %s shown for vllm", k)
				}
			}
		})
	}
	// The SGLang table keeps its rows.
	out, _, code := run(t, "plan")
	if code != 0 || !strings.Contains(out, "mem_fraction_static") || strings.Contains(out, "num_gpu_blocks") {
		t.Errorf("sglang table:\n%s", out)
	}
}
