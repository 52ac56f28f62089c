// Command hello is BenchmarkProcessStartup's baseline: the hello-world Go
// binary whose start-up every other one is compared with.
package main

import "fmt"

func main() { fmt.Println("hello") }
