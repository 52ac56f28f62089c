//go:build race

package server_test

// raceEnabled scales the load test down under the race detector, which
// makes every request several times slower.
const raceEnabled = true
