package main

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// txnClockMs is the time of every write of transactionalStore's store, ms.
const txnClockMs = 1700000000000

// foreignProducerID is the producer of the transaction transactionalStore leaves open: a
// producer the store's coordinator does not know (as one of another coordinator's), so that
// opening the store does not abort its transaction.
const foreignProducerID = 4242

// transactionalStore writes a store whose topic "out" (one partition) holds, at a clock fixed at
// txnClockMs, a committed transaction of the transactional producer "etl" (id 0, epoch 0): c1
// and c2 at offsets 0 and 1, its COMMIT marker at 2; an aborted one: a1 at 3, its ABORT marker at
// 4; and, when open is set, the transaction of foreignProducerID left open: "open" at 5. It closes
// the store (which writes the producer snapshot named by the log end offset) and returns the
// store's directory.
func transactionalStore(t *testing.T, open bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	ctx := context.Background()
	s, err := commitlog.Open(dir, commitlog.WithClock(func() time.Time { return time.UnixMilli(txnClockMs) }))
	require.NoError(t, err)
	_, err = s.CreateTopic("out", commitlog.TopicConfig{Partitions: 1})
	require.NoError(t, err)
	p, err := s.NewProducer(ctx, commitlog.ProducerConfig{TransactionalID: "etl"})
	require.NoError(t, err)
	id, epoch := p.ID()
	require.Equal(t, int64(0), id)
	require.Equal(t, int16(0), epoch)

	require.NoError(t, p.Begin())
	require.NoError(t, p.Append(ctx, "out", &commitlog.Record{Value: []byte("c1")}, &commitlog.Record{Value: []byte("c2")}))
	require.NoError(t, p.Commit(ctx))
	require.NoError(t, p.Begin())
	require.NoError(t, p.Append(ctx, "out", &commitlog.Record{Value: []byte("a1")}))
	require.NoError(t, p.Abort(ctx))
	require.NoError(t, p.Close())

	if open {
		var b recordbatch.Builder
		b.Reset(recordbatch.Header{PartitionLeaderEpoch: -1, Attributes: recordbatch.AttrTransactional,
			ProducerID: foreignProducerID, ProducerEpoch: 0, BaseSequence: 0})
		b.Add(txnClockMs, nil, []byte("open"), nil)
		batch, err := b.Finish()
		require.NoError(t, err)
		tp, err := s.Topic("out")
		require.NoError(t, err)
		part, err := tp.Partition(0)
		require.NoError(t, err)
		first, last, err := part.AppendAsLeader(ctx, commitlog.AcksAll, batch)
		require.NoError(t, err)
		require.Equal(t, [2]int64{5, 5}, [2]int64{first, last})
		require.Equal(t, int64(5), part.LastStableOffset())
	}
	require.NoError(t, s.Close())
	return dir
}

// patchFile rewrites the file at path with what change returns for its bytes.
func patchFile(t *testing.T, path string, change func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, change(b), 0o644))
}

// snapshotCRCs returns the CRC a snapshot's header holds and the one computed over what follows
// it, as DecodeSnapshot's error names them.
func snapshotCRCs(b []byte) (stored, computed uint32) {
	return binary.BigEndian.Uint32(b[2:]), crc32.Checksum(b[6:], crc32.MakeTable(crc32.Castagnoli))
}
