//go:build race

package commitlog

// churnRecords is how many records TestGroupChurn appends. Under the race detector 1,000,000
// records took the test 55 s to 110 s on a 2-core machine (four runs: two protocols, two
// backends), and the package's whole race run about 7.5 min, near go test's 10 min default
// timeout; a quarter of them exercises the same joins, closes and kills in about a quarter of
// the time.
const churnRecords = 250_000
