// Command hello is BenchmarkProcessStartup's baseline: the hello-world Go
// binary the start-up target (kvcfg plan at most twice its time)
// is measured against.
package main

import "fmt"

func main() { fmt.Println("hello") }
