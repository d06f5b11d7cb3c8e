//go:build !race

package commitlog

// churnRecords is how many records TestGroupChurn appends.
const churnRecords = 1_000_000
