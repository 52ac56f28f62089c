package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/kvcfg/kvcfg/server"
)

// ExampleServer_Handler plans over HTTP: the body is `kvcfg plan`'s flags in
// snake_case, the answer `kvcfg plan -o json`.
func ExampleServer_Handler() {
	srv, err := server.New(server.Config{})
	if err != nil {
		panic(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	res, err := http.Post(ts.URL+"/api/v1/plan", "application/json",
		strings.NewReader(`{"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "kv_cache_dtype": "fp8_e4m3", "tp_size": 2}`))
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	var report struct {
		Model    string `json:"model"`
		GPU      string `json:"gpu"`
		TPSize   int    `json:"tp_size"`
		KVDType  string `json:"resolved_kv_cache_dtype"`
		MaxTotal int64  `json:"max_total_num_tokens"`
	}
	if err := json.NewDecoder(res.Body).Decode(&report); err != nil {
		panic(err)
	}
	fmt.Println(res.StatusCode, report.Model, report.GPU, report.TPSize, report.KVDType, report.MaxTotal > 0)

	res, err = http.Post(ts.URL+"/api/v1/plan", "application/json", strings.NewReader(`{"gpu_memory": "80 GiBs"}`))
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	var e server.ErrorBody
	if err := json.NewDecoder(res.Body).Decode(&e); err != nil {
		panic(err)
	}
	fmt.Println(res.StatusCode, e.Field)
	// Output:
	// 200 meta-llama/Llama-3.1-8B-Instruct H100-80GB 2 fp8_e4m3 true
	// 400 gpu_memory
}
