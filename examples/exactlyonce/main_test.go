package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog"
)

// TestExactlyOnce runs the example in a folder it keeps and checks its report line by line: the
// offsets of each transaction (the aborted attempt's invoices and marker take offsets 3-5), the
// invoices a ReadCommitted reader sees (each order once, none of the aborted attempt), the
// ReadUncommitted count, the reader's committed position; then the files exactly once adds.
func TestExactlyOnce(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), dir, &out))
	require.Equal(t, []string{
		"orders: 6 orders at offsets 0-5",
		"txn 1: orders 0-1 -> invoices 0-1, reader position 2, committed",
		"txn 2: orders 2-3 -> invoices 3-4, aborted (simulated failure before commit); reader back to 2",
		"txn 3: orders 2-3 -> invoices 6-7, reader position 4, committed",
		"txn 4: orders 4-5 -> invoices 9-10, reader position 6, committed",
		"invoices, read_committed: 6 records below the last stable offset 12",
		"   0  order-1: 3 x widget = 7.50",
		"   1  order-2: 1 x gadget = 19.99",
		"   6  order-3: 12 x sprocket = 9.00",
		"   7  order-4: 2 x widget = 5.00",
		"   9  order-5: 5 x gizmo = 21.00",
		"  10  order-6: 2 x gadget = 39.98",
		"invoices, read_uncommitted: 8 records (the aborted attempt's 2 too)",
		`reader "invoicer" committed position: orders partition 0 at 6 (of 6 orders)`,
	}, strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"))

	for _, name := range []string{
		"__transaction_state-0/00000000000000000000.log",
		"__consumer_offsets-0/00000000000000000000.log",
		"commitlog-producer-ids",
		"commitlog-reader-invoicer",
		"invoices-0/00000000000000000000.txnindex", // the aborted transaction
		"invoices-0/00000000000000000012.snapshot", // the producer state at Close
	} {
		_, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err, name)
	}
	// One aborted transaction: one 34-byte entry.
	fi, err := os.Stat(filepath.Join(dir, "invoices-0", "00000000000000000000.txnindex"))
	require.NoError(t, err)
	require.Equal(t, int64(34), fi.Size())

	// The folder holds a run: a second one is refused, changing nothing.
	err = run(context.Background(), dir, &bytes.Buffer{})
	require.True(t, errors.Is(err, commitlog.ErrTopicExists), "%v", err)
}

// Without a folder the example works in a temporary one and removes it.
func TestExactlyOnceTempDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // os.MkdirTemp's folder on Unix
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), "", &out))
	require.Contains(t, out.String(), "invoices, read_committed: 6 records below the last stable offset 12\n")
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, left)
}
