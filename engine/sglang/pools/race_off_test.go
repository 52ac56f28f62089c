//go:build !race

package pools_test

const raceOn = false
