// Command floor is BenchmarkProcessStartup's second baseline: a hello world
// that links the libraries every kvcfg process links and no kvcfg code
// (cobra and pflag, net/http for serve and the Hub client, encoding/json,
// and the YAML encoder of -o yaml), so that the benchmark shows how much of
// a start-up is kvcfg's own.
package main

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Referenced, so the linker keeps each package and its init.
var (
	_ = json.Marshal
	_ = yaml.Marshal
	_ = http.NewServeMux
)

func main() {
	root := &cobra.Command{Use: "floor", Run: func(*cobra.Command, []string) { fmt.Println("hello") }}
	_ = root.Execute()
}
