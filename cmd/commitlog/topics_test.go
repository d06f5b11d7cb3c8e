package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTopicsShowsTransactions: topics shows the last stable offset (STABLE) beside the end when a
// transaction is open, "-" when every transaction is decided, and the number of open
// transactions (OPEN TXNS). The store of transactionalStore holds a committed and an aborted
// transaction (offsets 0 to 4, markers included, 305 bytes) and, when one is left open, another
// producer's record at 5 (72 bytes more): the end is 6 and the last stable offset 5, the first
// offset of the open transaction.
func TestTopicsShowsTransactions(t *testing.T) {
	for _, tc := range []struct {
		name string
		open bool
		want []string
	}{
		{"every transaction decided", false, []string{"out", "0", "0", "5", "-", "0", "305", "1", "delete", "-", "-", "-"}},
		{"a transaction open", true, []string{"out", "0", "0", "6", "5", "1", "377", "1", "delete", "-", "-", "-"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := transactionalStore(t, tc.open)
			r := mustCLI(t, nil, "--dir", dir, "topics")
			require.Empty(t, r.stderr)
			// The coordinator's internal logs are no topics.
			require.Equal(t, [][]string{tc.want}, tableRows(t, r.stdout, topicsHeader))
		})
	}
}
