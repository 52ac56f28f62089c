package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/internal/cli"
	"github.com/kvcfg/kvcfg/server"
)

var update = flag.Bool("update", false, "update golden files")

// goldenCases are plan requests as API bodies. Each runs through the API
// and, with the keys turned into flags (tp_size -> --tp-size), through
// `kvcfg plan -o json`: both must print the golden file.
var goldenCases = []struct {
	name string
	body string
	cmd  string // "plan" (default) or "compare"
}{
	{"default", `{}`, ""},
	{"llama8b_h100_fp8", `{"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "kv_cache_dtype": "fp8_e4m3"}`, ""},
	{"llama70b_tp4_gpu_memory_string", `{"model": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "A100-80GB", "tp_size": 4, "gpu_memory": "80GiB", "context_length": 32768}`, ""},
	{"llama8b_gpu_memory_bytes", `{"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu_memory": 51539607552, "mem_fraction_static": 0.8}`, ""},
	{"deepseek_v3_mla_tp8", `{"model": "deepseek-ai/DeepSeek-V3", "gpu": "H200", "tp_size": 8}`, ""},
	{"gpt_oss_swa", `{"model": "openai/gpt-oss-120b", "gpu": "H100", "tp_size": 2}`, ""},
	{"qwen3_next_mamba", `{"model": "Qwen/Qwen3-Next-80B-A3B-Instruct", "gpu": "H200", "tp_size": 2}`, ""},
	// Errors: an impossible plan (CLI exit 1) and invalid input (exit 2).
	{"infeasible_70b_on_l4", `{"model": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "L4"}`, ""},
	{"invalid_mem_fraction", `{"model": "meta-llama/Llama-3.1-8B-Instruct", "mem_fraction_static": 1.5}`, ""},
	{"invalid_context_length", `{"model": "meta-llama/Llama-3.1-8B-Instruct", "context_length": 10000000}`, ""},
	// POST /api/v1/compare against `kvcfg compare -o json`.
	{"compare_engines", `{"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100"}`, "compare"},
	{"compare_dtypes_tp", `{"model": "Qwen/Qwen3-8B", "gpu": "L40S", "engines": ["sglang"], "kv_cache_dtypes": ["auto", "fp8_e4m3", "nvfp4"], "tp_sizes": [1, 2]}`, "compare"},
	{"compare_all_refused", `{"model": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "T4"}`, "compare"},
	{"compare_bad_engine", `{"engines": ["sglang", "tgi"]}`, "compare"},
}

// listFlags maps the list keys of a compare body to their CLI flags.
var listFlags = map[string]string{"engines": "--engine", "kv_cache_dtypes": "--kv-cache-dtype", "tp_sizes": "--tp"}

// flagsFor turns an API body into `kvcfg plan` flags.
func flagsFor(t *testing.T, body string) []string {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var args []string
	for _, k := range keys {
		name := "--" + strings.ReplaceAll(k, "_", "-")
		if f, ok := listFlags[k]; ok {
			name = f
		}
		switch v := m[k].(type) {
		case []any:
			var items []string
			for _, it := range v {
				items = append(items, fmt.Sprint(it))
			}
			args = append(args, name, strings.Join(items, ","))
		case string:
			args = append(args, name, v)
		case json.Number:
			args = append(args, name, v.String())
		case bool:
			args = append(args, name+"="+strconv.FormatBool(v))
		default:
			t.Fatalf("key %s: no flag form for %T", k, v)
		}
	}
	return args
}

// TestAPIMatchesCLI is the golden check that API and CLI agree: a 200 body
// is byte for byte the CLI's stdout; an error body's message is the CLI's
// stderr and its report the CLI's stdout.
func TestAPIMatchesCLI(t *testing.T) {
	ts := newTestServer(t, server.Config{})
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := tc.cmd
			if cmd == "" {
				cmd = "plan"
			}
			api := do(t, ts, "POST", "/api/v1/"+cmd, tc.body)

			args := append([]string{cmd, "-o", "json"}, flagsFor(t, tc.body)...)
			var stdout, stderr bytes.Buffer
			code := cli.Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)

			golden := filepath.Join("testdata", "golden", tc.name+".json")
			var got string
			switch api.status {
			case 200:
				if code != 0 {
					t.Fatalf("API 200 but `kvcfg %s` exited %d: %s", strings.Join(args, " "), code, stderr.String())
				}
				if diff := cmp.Diff(stdout.String(), api.body); diff != "" {
					t.Errorf("API body differs from `kvcfg %s` (-cli +api):\n%s", strings.Join(args, " "), diff)
				}
				got = api.body
			case 400, 422:
				var eb struct {
					Error  string          `json:"error"`
					Field  string          `json:"field"`
					Report json.RawMessage `json:"report"`
				}
				if err := json.Unmarshal([]byte(api.body), &eb); err != nil {
					t.Fatal(err)
				}
				// 400 is bad input (CLI exit 2), 422 a plan the engine refuses
				// or that misses its target (exit 1 or 3).
				if (api.status == 400) != (code == 2) || code == 0 {
					t.Fatalf("API %d but `kvcfg %s` exited %d", api.status, strings.Join(args, " "), code)
				}
				if want := "kvcfg: " + eb.Error + "\n"; stderr.String() != want {
					t.Errorf("API error differs from the CLI's stderr:\ncli: %q\napi: %q", stderr.String(), want)
				}
				if len(eb.Report) > 0 {
					var report bytes.Buffer
					if err := json.Indent(&report, eb.Report, "", "  "); err != nil {
						t.Fatal(err)
					}
					report.WriteByte('\n')
					if diff := cmp.Diff(stdout.String(), report.String()); diff != "" {
						t.Errorf("API error report differs from the CLI's stdout (-cli +api):\n%s", diff)
					}
				} else if stdout.Len() > 0 {
					t.Errorf("CLI printed a report but the API error has none")
				}
				got = fmt.Sprintf("status %d, CLI exit %d\n%s", api.status, code, api.body)
			default:
				t.Fatalf("API status %d: %s", api.status, api.body)
			}

			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./server -run TestAPIMatchesCLI -update)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s mismatch (-golden +got); API and CLI agree, so if the planner changed on purpose run\n\tgo test ./server -run TestAPIMatchesCLI -update\n%s", golden, diff)
			}
		})
	}
}
