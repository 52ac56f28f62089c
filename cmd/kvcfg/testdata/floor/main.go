// Command floor is BenchmarkProcessStartup's second baseline: a hello world
// that links the libraries every kvcfg process links and no kvcfg code
// (encoding/json, and the YAML encoder of -o yaml), so that the benchmark
// shows how much of a start-up is kvcfg's own. kvcfg links no net package
// (serve and the Hub client are in kvcfg-net), so both are static binaries.
package main

import (
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
)

// Referenced, so the linker keeps each package and its init.
var (
	_ = json.Marshal
	_ = yaml.Marshal
)

func main() { fmt.Println("hello") }
