//go:build !race

package sglang_test

const raceOn = false
