package cli

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// `kvcfg plan` with comma lists plans every combination. Known answers:
// spec §c.11 Ex.1 (pre 78.50 GiB, post 63.54 GiB) gives bf16 414,412 and
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
				rows = append(rows, []string{f[0], f[1], f[7]})
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
