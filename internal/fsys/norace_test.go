//go:build !race

package fsys_test

// raceEnabled: see race_test.go.
const raceEnabled = false
