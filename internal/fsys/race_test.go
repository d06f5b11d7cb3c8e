//go:build race

package fsys_test

// raceEnabled: the random model tests run fewer seeds under the race detector, which makes their
// byte-by-byte checks many times slower.
const raceEnabled = true
