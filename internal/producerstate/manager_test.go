package producerstate

import (
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// data returns a data batch of producer pid at epoch, sequences first..last, offsets
// firstOff..lastOff, max timestamp ts.
func data(pid int64, epoch int16, first, last int32, firstOff, lastOff, ts int64) Batch {
	return Batch{ProducerID: pid, Epoch: epoch, FirstSeq: first, LastSeq: last,
		FirstOffset: firstOff, LastOffset: lastOff, MaxTimestamp: ts}
}

// txn is data with Transactional set.
func txn(pid int64, epoch int16, first, last int32, firstOff, lastOff, ts int64) Batch {
	b := data(pid, epoch, first, last, firstOff, lastOff, ts)
	b.Transactional = true
	return b
}

// update applies every batch, dropping the undos.
func update(m *Manager, bs ...Batch) {
	for _, b := range bs {
		m.Update(b)
	}
}

var allErrors = []error{ErrOutOfOrderSequence, ErrProducerFenced, ErrInvalidTxnState, ErrCoordinatorFenced}

// requireErrIs requires err to wrap want and none of the package's other errors, or to be nil
// when want is nil.
func requireErrIs(t *testing.T, want, err error) {
	t.Helper()
	if want == nil {
		require.NoError(t, err)
		return
	}
	require.Error(t, err)
	for _, e := range allErrors {
		require.Equal(t, e == want, errors.Is(err, e), "errors.Is(%v, %v)", err, e)
	}
}

func TestFindDuplicate(t *testing.T) {
	m := NewManager(0)
	// Six batches of producer 7, epoch 3; other producers write between them.
	six := []Batch{
		data(7, 3, 0, 1, 0, 1, 100),
		data(7, 3, 2, 4, 5, 7, 101),
		data(7, 3, 5, 5, 10, 10, 102),
		data(7, 3, 6, 9, 20, 23, 103),
		data(7, 3, 10, 10, 30, 30, 104),
		data(7, 3, 11, 12, 40, 41, 105),
	}
	meta := func(b Batch) BatchMetadata {
		return BatchMetadata{FirstSeq: b.FirstSeq, LastSeq: b.LastSeq, FirstOffset: b.FirstOffset,
			LastOffset: b.LastOffset, Timestamp: b.MaxTimestamp}
	}
	for i, b := range six[:5] {
		m.Update(b)
		m.Update(data(8, 0, int32(i), int32(i), b.LastOffset+1, b.LastOffset+1, 0))
	}

	// A retry of each of the five remembered batches, at new offsets, is found with the offsets
	// it was first written at.
	for i, b := range six[:5] {
		retry := b
		retry.FirstOffset, retry.LastOffset = 1000, 1000+b.LastOffset-b.FirstOffset
		got, ok := m.FindDuplicate(retry)
		require.True(t, ok, "batch %d", i)
		require.Equal(t, meta(b), got, "batch %d", i)
	}

	m.Update(six[5])
	tests := []struct {
		name string
		b    Batch
		want BatchMetadata
		ok   bool
	}{
		{"oldest, pushed out by the sixth", six[0], BatchMetadata{}, false},
		{"second", six[1], meta(six[1]), true},
		{"third", six[2], meta(six[2]), true},
		{"fourth", six[3], meta(six[3]), true},
		{"fifth", six[4], meta(six[4]), true},
		{"sixth", six[5], meta(six[5]), true},
		{"same sequences, newer epoch", data(7, 4, 11, 12, 0, 1, 0), BatchMetadata{}, false},
		{"same sequences, older epoch", data(7, 2, 11, 12, 0, 1, 0), BatchMetadata{}, false},
		{"same first sequence, other last", data(7, 3, 11, 13, 0, 2, 0), BatchMetadata{}, false},
		{"same last sequence, other first", data(7, 3, 12, 12, 0, 0, 0), BatchMetadata{}, false},
		{"unknown producer", data(9, 3, 11, 12, 0, 1, 0), BatchMetadata{}, false},
		{"other producer's sequences", data(8, 3, 0, 0, 0, 0, 0), BatchMetadata{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := m.FindDuplicate(tt.b)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestCheck(t *testing.T) {
	m := NewManager(0)
	// Producer 1, epoch 5: last sequence 4.
	update(m, data(1, 5, 0, 4, 0, 4, 0))
	// Producer 2, epoch 0: six single-record batches, sequences 0..5; the window holds 1..5.
	for i := range int32(6) {
		update(m, data(2, 0, i, i, 10+int64(i), 10+int64(i), 0))
	}
	// Producer 3, epoch 0: its last batch ends at math.MaxInt32.
	update(m, data(3, 0, math.MaxInt32-2, math.MaxInt32, 20, 22, 0))
	// Producer 4, epoch 0: a transaction open from offset 23.
	update(m, txn(4, 0, 0, 0, 23, 23, 0))
	// Producer 5: known only from a marker of epoch 2, no batch remembered.
	m.CompleteTxn(Marker{ProducerID: 5, Epoch: 2, CoordinatorEpoch: 0, Offset: 24})
	// Producer 6: batches without a producer epoch.
	update(m, data(6, NoProducerEpoch, 3, 3, 25, 25, 0))

	tests := []struct {
		name string
		b    Batch
		want error
	}{
		{"next sequence", data(1, 5, 5, 7, 0, 2, 0), nil},
		{"gap: last 4, next 6", data(1, 5, 6, 6, 0, 0, 0), ErrOutOfOrderSequence},
		{"last sequence again", data(1, 5, 4, 4, 0, 0, 0), ErrOutOfOrderSequence},
		{"repeat within the window", data(2, 0, 3, 3, 0, 0, 0), ErrOutOfOrderSequence},
		{"repeat beyond the window", data(2, 0, 0, 0, 0, 0, 0), ErrOutOfOrderSequence},
		{"older epoch", data(1, 4, 5, 5, 0, 0, 0), ErrProducerFenced},
		{"older epoch at sequence 0", data(1, 4, 0, 0, 0, 0, 0), ErrProducerFenced},
		{"new epoch not at 0", data(1, 6, 5, 5, 0, 0, 0), ErrOutOfOrderSequence},
		{"new epoch at 0", data(1, 6, 0, 3, 0, 3, 0), nil},
		{"unknown producer, any sequence", data(99, 7, 1234, 1240, 0, 6, 0), nil},
		{"unknown producer, sequence 0", data(99, 0, 0, 0, 0, 0, 0), nil},
		{"wrap after MaxInt32 to 0", data(3, 0, 0, 2, 0, 2, 0), nil},
		{"after MaxInt32, not 0", data(3, 0, 1, 1, 0, 0, 0), ErrOutOfOrderSequence},
		{"non-transactional in an open transaction", data(4, 0, 1, 1, 0, 0, 0), ErrInvalidTxnState},
		{"transactional in an open transaction", txn(4, 0, 1, 1, 0, 0, 0), nil},
		{"transactional, no transaction open", txn(1, 5, 5, 5, 0, 0, 0), nil},
		{"epoch known from a marker, sequence 0", data(5, 2, 0, 0, 0, 0, 0), nil},
		{"epoch known from a marker, sequence not 0", data(5, 2, 7, 7, 0, 0, 0), ErrOutOfOrderSequence},
		{"no producer epoch, any sequence", data(6, NoProducerEpoch, 9, 9, 0, 0, 0), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := m.Entries()
			requireErrIs(t, tt.want, m.Check(tt.b))
			require.Equal(t, before, m.Entries(), "Check changed the state")
		})
	}
}

func TestLastSequence(t *testing.T) {
	tests := []struct {
		first, delta, want int32
	}{
		{0, 0, 0},
		{0, 4, 4},
		{10, 5, 15},
		{math.MaxInt32 - 1, 1, math.MaxInt32},
		{math.MaxInt32 - 1, 3, 1},
		{math.MaxInt32, 0, math.MaxInt32},
		{math.MaxInt32, 1, 0},
		{100, math.MaxInt32, 99},
		{NoSequence, 5, NoSequence},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, LastSequence(tt.first, tt.delta), "LastSequence(%d, %d)", tt.first, tt.delta)
	}
}

func TestUpdateUndo(t *testing.T) {
	tests := []struct {
		name  string
		setup []Batch
		b     Batch
	}{
		{"new producer", nil, data(1, 0, 0, 2, 0, 2, 10)},
		{"new producer, transactional", nil, txn(1, 0, 0, 2, 0, 2, 10)},
		{"existing producer", []Batch{data(1, 0, 0, 2, 0, 2, 10)}, data(1, 0, 3, 3, 3, 3, 11)},
		{"existing producer, full window", []Batch{
			data(1, 0, 0, 0, 0, 0, 1), data(1, 0, 1, 1, 1, 1, 2), data(1, 0, 2, 2, 2, 2, 3),
			data(1, 0, 3, 3, 3, 3, 4), data(1, 0, 4, 4, 4, 4, 5),
		}, data(1, 0, 5, 5, 5, 5, 6)},
		{"existing producer, new epoch", []Batch{data(1, 0, 0, 2, 0, 2, 10), data(1, 0, 3, 3, 3, 3, 11)}, data(1, 1, 0, 0, 4, 4, 12)},
		{"existing producer opens a transaction", []Batch{data(1, 0, 0, 2, 0, 2, 10)}, txn(1, 0, 3, 4, 3, 4, 11)},
		{"transaction already open", []Batch{txn(1, 0, 0, 2, 0, 2, 10)}, txn(1, 0, 3, 4, 3, 4, 11)},
		{"beside another producer's transaction", []Batch{txn(2, 0, 0, 0, 0, 0, 10), data(1, 0, 0, 0, 1, 1, 10)}, txn(1, 0, 1, 1, 2, 2, 11)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewManager(0)
			update(m, tt.setup...)
			entries, end, undecided := m.Entries(), m.MapEndOffset(), m.FirstUndecidedOffset()
			pids, firsts := m.OngoingTxns()

			undo := m.Update(tt.b)
			after := m.Entries()
			require.NotEqual(t, entries, after)
			require.Equal(t, tt.b.LastOffset+1, m.MapEndOffset())
			if tt.b.Transactional && undecided == NoOffset {
				require.Equal(t, tt.b.FirstOffset, m.FirstUndecidedOffset())
			}

			undo()
			require.Equal(t, entries, m.Entries())
			require.Equal(t, end, m.MapEndOffset())
			require.Equal(t, undecided, m.FirstUndecidedOffset())
			gotPids, gotFirsts := m.OngoingTxns()
			require.Equal(t, pids, gotPids)
			require.Equal(t, firsts, gotFirsts)

			// The batch, written again, gives the same state as the first time.
			m.Update(tt.b)
			require.Equal(t, after, m.Entries())
		})
	}

	t.Run("opened transaction: first undecided offset back to -1", func(t *testing.T) {
		m := NewManager(0)
		undo := m.Update(txn(1, 0, 0, 0, 7, 8, 0))
		require.Equal(t, int64(7), m.FirstUndecidedOffset())
		require.Equal(t, int64(7), m.FirstUnstableOffset(100))
		undo()
		require.Equal(t, NoOffset, m.FirstUndecidedOffset())
		require.Equal(t, NoOffset, m.FirstUnstableOffset(100))
		require.Equal(t, []Entry{}, m.Entries())
		require.Equal(t, int64(0), m.MapEndOffset())
	})
}

// Apply is Update without the undo: the same batches leave the same state after every step.
func TestApplyMatchesUpdate(t *testing.T) {
	batches := []Batch{
		data(1, 0, 0, 2, 0, 2, 10),
		data(1, 0, 3, 3, 3, 3, 11),
		txn(2, 0, 0, 0, 4, 4, 12), // opens producer 2's transaction at 4
		data(1, 0, 4, 4, 5, 5, 13),
		data(1, 0, 5, 5, 6, 6, 14),
		data(1, 0, 6, 6, 7, 7, 15),
		data(1, 0, 7, 7, 8, 8, 16), // producer 1's 6th batch: the window keeps 5
		txn(2, 0, 1, 2, 9, 10, 17),
		data(1, 1, 0, 0, 11, 11, 18), // producer 1's new epoch forgets its batches
	}
	updated, applied := NewManager(0), NewManager(0)
	for i, b := range batches {
		updated.Update(b)
		applied.Apply(b)
		require.Equal(t, updated.Entries(), applied.Entries(), "after batch %d", i)
		require.Equal(t, b.LastOffset+1, applied.MapEndOffset(), "after batch %d", i)
		require.Equal(t, updated.FirstUndecidedOffset(), applied.FirstUndecidedOffset(), "after batch %d", i)
	}
	pids, firsts := applied.OngoingTxns()
	require.Equal(t, []int64{2}, pids)
	require.Equal(t, []int64{4}, firsts)
	e, ok := applied.Entry(1)
	require.True(t, ok)
	require.Equal(t, int16(1), e.Epoch)
	require.Equal(t, []BatchMetadata{{FirstSeq: 0, LastSeq: 0, FirstOffset: 11, LastOffset: 11, Timestamp: 18}}, e.Batches)
}

func TestUpdateEntry(t *testing.T) {
	m := NewManager(5)
	require.Equal(t, int64(5), m.MapEndOffset())
	for i := range int64(7) {
		m.Update(data(1, 2, int32(2*i), int32(2*i+1), 10*i, 10*i+1, 100+i))
	}
	e, ok := m.Entry(1)
	require.True(t, ok)
	require.Equal(t, Entry{ProducerID: 1, Epoch: 2, CoordinatorEpoch: -1, LastTimestamp: 106, CurrentTxnFirstOffset: NoOffset,
		Batches: []BatchMetadata{
			{FirstSeq: 4, LastSeq: 5, FirstOffset: 20, LastOffset: 21, Timestamp: 102},
			{FirstSeq: 6, LastSeq: 7, FirstOffset: 30, LastOffset: 31, Timestamp: 103},
			{FirstSeq: 8, LastSeq: 9, FirstOffset: 40, LastOffset: 41, Timestamp: 104},
			{FirstSeq: 10, LastSeq: 11, FirstOffset: 50, LastOffset: 51, Timestamp: 105},
			{FirstSeq: 12, LastSeq: 13, FirstOffset: 60, LastOffset: 61, Timestamp: 106},
		}}, e)
	require.Equal(t, int32(13), e.LastSeq())
	require.Equal(t, int64(62), m.MapEndOffset())

	// The copy is the caller's.
	e.Batches[0].FirstSeq = 99
	again, _ := m.Entry(1)
	require.Equal(t, int32(4), again.Batches[0].FirstSeq)

	// A new epoch forgets the batches of the old one.
	m.Update(data(1, 3, 0, 0, 70, 70, 107))
	e, _ = m.Entry(1)
	require.Equal(t, []BatchMetadata{{FirstSeq: 0, LastSeq: 0, FirstOffset: 70, LastOffset: 70, Timestamp: 107}}, e.Batches)
	require.Equal(t, int16(3), e.Epoch)

	_, ok = m.Entry(2)
	require.False(t, ok)
	require.Equal(t, 1, m.Len())
	require.Equal(t, NoSequence, (&Entry{}).LastSeq())
}

func TestTransactions(t *testing.T) {
	m := NewManager(0)
	require.Equal(t, NoOffset, m.FirstUndecidedOffset())
	require.Equal(t, NoOffset, m.FirstUnstableOffset(0))

	// Producer 1 opens a transaction at 10; its next batch leaves it where it is.
	m.Update(txn(1, 0, 0, 2, 10, 12, 1000))
	require.Equal(t, int64(10), m.FirstUndecidedOffset())
	m.Update(txn(1, 0, 3, 3, 13, 13, 1001))
	require.Equal(t, int64(10), m.FirstUndecidedOffset())
	e, _ := m.Entry(1)
	require.Equal(t, int64(10), e.CurrentTxnFirstOffset)

	// Producer 2 opens one at 15: the smaller first offset stays first.
	m.Update(txn(2, 4, 0, 1, 15, 16, 1002))
	require.Equal(t, int64(10), m.FirstUndecidedOffset())
	require.Equal(t, int64(10), m.FirstUnstableOffset(0))
	pids, firsts := m.OngoingTxns()
	require.Equal(t, []int64{1, 2}, pids)
	require.Equal(t, []int64{10, 15}, firsts)

	// Producer 1 commits at 17: the LSO is producer 2's first offset.
	c, lso := m.CompleteTxn(Marker{ProducerID: 1, Epoch: 0, Commit: true, CoordinatorEpoch: 3, Offset: 17, Timestamp: 1003})
	require.Equal(t, CompletedTxn{ProducerID: 1, FirstOffset: 10, LastOffset: 17, Aborted: false}, c)
	require.Equal(t, int64(15), lso)
	require.Equal(t, int64(15), m.FirstUndecidedOffset())
	e, _ = m.Entry(1)
	require.Equal(t, Entry{ProducerID: 1, Epoch: 0, CoordinatorEpoch: 3, LastTimestamp: 1003, CurrentTxnFirstOffset: NoOffset,
		Batches: []BatchMetadata{
			{FirstSeq: 0, LastSeq: 2, FirstOffset: 10, LastOffset: 12, Timestamp: 1000},
			{FirstSeq: 3, LastSeq: 3, FirstOffset: 13, LastOffset: 13, Timestamp: 1001},
		}}, e)

	// Producer 2 aborts at 18: nothing is open, the LSO is the marker's offset plus one.
	c, lso = m.CompleteTxn(Marker{ProducerID: 2, Epoch: 4, Commit: false, CoordinatorEpoch: 3, Offset: 18, Timestamp: 1004})
	require.Equal(t, CompletedTxn{ProducerID: 2, FirstOffset: 15, LastOffset: 18, Aborted: true}, c)
	require.Equal(t, int64(19), lso)
	require.Equal(t, NoOffset, m.FirstUndecidedOffset())
	pids, firsts = m.OngoingTxns()
	require.Empty(t, pids)
	require.Empty(t, firsts)
	require.Equal(t, int64(19), m.MapEndOffset())

	// The completed transactions stay unstable until the high watermark passes their markers.
	require.Equal(t, int64(10), m.FirstUnstableOffset(10))
	require.Equal(t, int64(10), m.FirstUnstableOffset(17)) // marker 17 at the hw
	require.Equal(t, int64(15), m.FirstUnstableOffset(18)) // 17 passed, marker 18 at the hw
	require.Equal(t, NoOffset, m.FirstUnstableOffset(19))
	require.Equal(t, NoOffset, m.FirstUnstableOffset(0)) // forgotten for good

	// A marker with no open transaction completes an empty one starting at the marker.
	c, lso = m.CompleteTxn(Marker{ProducerID: 3, Epoch: 1, Commit: false, CoordinatorEpoch: 7, Offset: 20, Timestamp: 1005})
	require.Equal(t, CompletedTxn{ProducerID: 3, FirstOffset: 20, LastOffset: 20, Aborted: true}, c)
	require.Equal(t, int64(21), lso)
	e, ok := m.Entry(3)
	require.True(t, ok)
	require.Equal(t, Entry{ProducerID: 3, Epoch: 1, CoordinatorEpoch: 7, LastTimestamp: 1005, CurrentTxnFirstOffset: NoOffset}, e)
	require.Equal(t, int64(20), m.FirstUnstableOffset(20))
	require.Equal(t, NoOffset, m.FirstUnstableOffset(21))

	// A marker while another producer's transaction is open: the LSO is that transaction's
	// first offset, and an open transaction older than an unreplicated one comes first.
	m.Update(txn(4, 0, 0, 0, 22, 22, 1006))
	c, lso = m.CompleteTxn(Marker{ProducerID: 5, Epoch: 0, Commit: true, Offset: 25, Timestamp: 1007})
	require.Equal(t, CompletedTxn{ProducerID: 5, FirstOffset: 25, LastOffset: 25}, c)
	require.Equal(t, int64(22), lso)
	require.Equal(t, int64(22), m.FirstUnstableOffset(25))
	c, lso = m.CompleteTxn(Marker{ProducerID: 4, Epoch: 0, Commit: true, Offset: 26, Timestamp: 1008})
	require.Equal(t, CompletedTxn{ProducerID: 4, FirstOffset: 22, LastOffset: 26}, c)
	require.Equal(t, int64(27), lso)
	require.Equal(t, int64(22), m.FirstUnstableOffset(26))
	require.Equal(t, NoOffset, m.FirstUnstableOffset(27))

	// A marker of a newer epoch forgets the producer's batches and takes its epoch.
	m.Update(data(6, 0, 0, 4, 30, 34, 1009))
	m.CompleteTxn(Marker{ProducerID: 6, Epoch: 1, Offset: 35, Timestamp: 1010, CoordinatorEpoch: 2})
	e, _ = m.Entry(6)
	require.Equal(t, Entry{ProducerID: 6, Epoch: 1, CoordinatorEpoch: 2, LastTimestamp: 1010, CurrentTxnFirstOffset: NoOffset, Batches: []BatchMetadata{}}, e)
}

func TestCompleteTxnUndoable(t *testing.T) {
	t.Run("reopens the transaction", func(t *testing.T) {
		m := NewManager(0)
		update(m, txn(1, 0, 0, 1, 10, 11, 100), txn(2, 0, 0, 0, 12, 12, 101))
		entries, end := m.Entries(), m.MapEndOffset()

		c, lso, undo := m.CompleteTxnUndoable(Marker{ProducerID: 1, Epoch: 0, Commit: true, CoordinatorEpoch: 4, Offset: 14, Timestamp: 102})
		require.Equal(t, CompletedTxn{ProducerID: 1, FirstOffset: 10, LastOffset: 14}, c)
		require.Equal(t, int64(12), lso)
		require.Equal(t, int64(12), m.FirstUndecidedOffset())

		undo()
		require.Equal(t, entries, m.Entries())
		require.Equal(t, end, m.MapEndOffset())
		require.Equal(t, int64(10), m.FirstUndecidedOffset())
		pids, firsts := m.OngoingTxns()
		require.Equal(t, []int64{1, 2}, pids)
		require.Equal(t, []int64{10, 12}, firsts)
		require.Equal(t, int64(10), m.FirstUnstableOffset(15))

		// The marker written again completes the same transaction, once.
		c, lso = m.CompleteTxn(Marker{ProducerID: 1, Epoch: 0, Commit: true, CoordinatorEpoch: 4, Offset: 13, Timestamp: 102})
		require.Equal(t, CompletedTxn{ProducerID: 1, FirstOffset: 10, LastOffset: 13}, c)
		require.Equal(t, int64(12), lso)
		m.CompleteTxn(Marker{ProducerID: 2, Epoch: 0, Commit: true, CoordinatorEpoch: 4, Offset: 14, Timestamp: 103})
		require.Equal(t, int64(12), m.FirstUnstableOffset(14))
		require.Equal(t, NoOffset, m.FirstUnstableOffset(15))
	})

	t.Run("unknown producer", func(t *testing.T) {
		m := NewManager(0)
		update(m, data(1, 0, 0, 0, 0, 0, 0))
		entries := m.Entries()
		_, lso, undo := m.CompleteTxnUndoable(Marker{ProducerID: 2, Epoch: 3, Offset: 1})
		require.Equal(t, int64(2), lso)
		require.Equal(t, 2, m.Len())
		undo()
		require.Equal(t, entries, m.Entries())
		require.Equal(t, int64(1), m.MapEndOffset())
		require.Equal(t, NoOffset, m.FirstUnstableOffset(0))
	})

	// A reader moving the high watermark between the marker and its undo forgets an older
	// completed transaction; the undo must still take back the one the marker completed.
	t.Run("reader between the marker and the undo", func(t *testing.T) {
		m := NewManager(0)
		m.CompleteTxn(Marker{ProducerID: 9, Epoch: 0, Offset: 5})
		m.Update(data(1, 0, 0, 0, 6, 19, 0))
		_, _, undo := m.CompleteTxnUndoable(Marker{ProducerID: 3, Epoch: 0, Offset: 20})
		require.Equal(t, int64(20), m.FirstUnstableOffset(6)) // forgets producer 9's
		undo()
		require.Equal(t, NoOffset, m.FirstUnstableOffset(20))
		require.Equal(t, int64(20), m.MapEndOffset())
		_, ok := m.Entry(3)
		require.False(t, ok)
	})
}

func TestCheckMarker(t *testing.T) {
	m := NewManager(0)
	update(m, txn(1, 5, 0, 0, 0, 0, 0))
	m.CompleteTxn(Marker{ProducerID: 1, Epoch: 5, CoordinatorEpoch: 3, Offset: 1})

	tests := []struct {
		name string
		mk   Marker
		want error
	}{
		{"same epochs", Marker{ProducerID: 1, Epoch: 5, CoordinatorEpoch: 3}, nil},
		{"newer epochs", Marker{ProducerID: 1, Epoch: 6, CoordinatorEpoch: 4}, nil},
		{"older producer epoch", Marker{ProducerID: 1, Epoch: 4, CoordinatorEpoch: 3}, ErrProducerFenced},
		{"older producer epoch, newer coordinator epoch", Marker{ProducerID: 1, Epoch: 4, CoordinatorEpoch: 9}, ErrProducerFenced},
		{"older coordinator epoch", Marker{ProducerID: 1, Epoch: 5, CoordinatorEpoch: 2}, ErrCoordinatorFenced},
		{"older coordinator epoch, newer producer epoch", Marker{ProducerID: 1, Epoch: 6, CoordinatorEpoch: 2}, ErrCoordinatorFenced},
		{"both older: the producer epoch first", Marker{ProducerID: 1, Epoch: 4, CoordinatorEpoch: 2}, ErrProducerFenced},
		{"unknown producer", Marker{ProducerID: 2, Epoch: 0, CoordinatorEpoch: 0}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireErrIs(t, tt.want, m.CheckMarker(tt.mk))
		})
	}
}

func TestExpire(t *testing.T) {
	const now, expiration = 10_000, 1_000
	m := NewManager(0)
	update(m,
		data(1, 0, 0, 0, 0, 0, now-expiration),   // exactly expirationMs old
		data(2, 0, 0, 0, 1, 1, now-expiration+1), // 1 ms younger
		txn(3, 0, 0, 0, 2, 2, 0),                 // open transaction, very old
		data(4, 0, 0, 0, 3, 3, now),
	)
	m.CompleteTxn(Marker{ProducerID: 5, Offset: 4, Timestamp: now - expiration - 1}) // marker only, older

	require.Equal(t, 2, m.Expire(now, expiration))
	pids := func() []int64 {
		var out []int64
		for _, e := range m.Entries() {
			out = append(out, e.ProducerID)
		}
		return out
	}
	require.Equal(t, []int64{2, 3, 4}, pids())
	require.Equal(t, int64(2), m.FirstUndecidedOffset())

	require.Equal(t, 0, m.Expire(now, expiration))
	require.Equal(t, 1, m.Expire(now+1, expiration))
	require.Equal(t, []int64{3, 4}, pids())
	require.Equal(t, 1, m.Expire(math.MaxInt64/2, expiration))
	require.Equal(t, []int64{3}, pids())

	// Once its transaction ends, the producer expires from its marker's timestamp.
	m.CompleteTxn(Marker{ProducerID: 3, Offset: 5, Timestamp: now})
	require.Equal(t, 0, m.Expire(now+expiration-1, expiration))
	require.Equal(t, 1, m.Expire(now+expiration, expiration))
	require.Equal(t, 0, m.Len())
}

func TestTruncateHead(t *testing.T) {
	m := NewManager(0)
	update(m,
		data(1, 0, 0, 4, 0, 4, 0),
		txn(3, 0, 0, 1, 5, 6, 0),
		txn(5, 0, 0, 0, 7, 7, 0),
	)
	m.CompleteTxn(Marker{ProducerID: 5, Commit: true, Offset: 8})
	update(m, data(2, 0, 0, 3, 9, 12, 0))
	m.CompleteTxn(Marker{ProducerID: 4, Offset: 13}) // no batch: no data offset
	require.Equal(t, int64(14), m.MapEndOffset())

	m.TruncateHead(9)
	var pids []int64
	for _, e := range m.Entries() {
		pids = append(pids, e.ProducerID)
	}
	// 1 (last batch at 4) and 5 (at 7) go; 3 keeps its open transaction; 2 ends at 12; 4 has no batch.
	require.Equal(t, []int64{2, 3}, pids)
	require.Equal(t, int64(14), m.MapEndOffset())
	// Producer 5's transaction (marker 8) is forgotten, producer 4's (marker 13) is not.
	require.Equal(t, int64(5), m.FirstUndecidedOffset())
	m.CompleteTxn(Marker{ProducerID: 3, Commit: true, Offset: 14})
	require.Equal(t, int64(5), m.FirstUnstableOffset(14))
	require.Equal(t, NoOffset, m.FirstUnstableOffset(15))

	m.TruncateHead(20)
	require.Equal(t, 0, m.Len())
	require.Equal(t, int64(20), m.MapEndOffset())
}

func TestReset(t *testing.T) {
	m := NewManager(0)
	update(m, data(1, 0, 0, 0, 0, 0, 0), txn(2, 0, 0, 0, 1, 1, 0), txn(3, 0, 0, 0, 2, 2, 0))
	m.CompleteTxn(Marker{ProducerID: 3, Offset: 3})

	m.Reset(100)
	require.Equal(t, 0, m.Len())
	require.Equal(t, []Entry{}, m.Entries())
	require.Equal(t, int64(100), m.MapEndOffset())
	require.Equal(t, NoOffset, m.FirstUndecidedOffset())
	require.Equal(t, NoOffset, m.FirstUnstableOffset(0))
	pids, firsts := m.OngoingTxns()
	require.Nil(t, pids)
	require.Nil(t, firsts)

	// A producer known before is unknown now: any sequence.
	require.NoError(t, m.Check(data(1, 0, 50, 50, 100, 100, 0)))
	m.Update(txn(2, 0, 0, 0, 100, 100, 0))
	require.Equal(t, int64(100), m.FirstUndecidedOffset())
	require.Equal(t, int64(101), m.MapEndOffset())
}

func TestLoad(t *testing.T) {
	const now, expiration = 5000, 4000
	entries := []Entry{
		{ProducerID: 3, Epoch: 1, CoordinatorEpoch: 2, LastTimestamp: 0, CurrentTxnFirstOffset: 50,
			Batches: []BatchMetadata{{FirstSeq: 0, LastSeq: 3, FirstOffset: 50, LastOffset: 53, Timestamp: 0}}},
		{ProducerID: 1, Epoch: 0, CoordinatorEpoch: -1, LastTimestamp: now - expiration, CurrentTxnFirstOffset: NoOffset,
			Batches: []BatchMetadata{{FirstSeq: 0, LastSeq: 0, FirstOffset: 10, LastOffset: 10, Timestamp: now - expiration}}},
		{ProducerID: 2, Epoch: 7, CoordinatorEpoch: -1, LastTimestamp: now - expiration + 1, CurrentTxnFirstOffset: NoOffset,
			Batches: []BatchMetadata{{FirstSeq: 8, LastSeq: 9, FirstOffset: 60, LastOffset: 61, Timestamp: now - expiration + 1}}},
		{ProducerID: 4, Epoch: 0, CoordinatorEpoch: 5, LastTimestamp: 1, CurrentTxnFirstOffset: 30,
			Batches: []BatchMetadata{{FirstSeq: 4, LastSeq: 4, FirstOffset: 70, LastOffset: 70, Timestamp: 1}}},
	}

	m := NewManager(0)
	update(m, txn(9, 0, 0, 0, 0, 0, now), data(8, 0, 0, 0, 1, 1, now))
	m.CompleteTxn(Marker{ProducerID: 8, Offset: 2, Timestamp: now})
	m.Load(entries, 80, now, expiration)

	// Producer 1 is expired; the rest are the snapshot's, ordered by id; nothing from before.
	require.Equal(t, []Entry{entries[2], entries[0], entries[3]}, m.Entries())
	require.Equal(t, int64(80), m.MapEndOffset())
	require.Equal(t, int64(30), m.FirstUndecidedOffset())
	require.Equal(t, int64(30), m.FirstUnstableOffset(0))
	pids, firsts := m.OngoingTxns()
	require.Equal(t, []int64{4, 3}, pids)
	require.Equal(t, []int64{30, 50}, firsts)

	// The state does not share the caller's batches.
	entries[0].Batches[0].LastSeq = 99
	e, _ := m.Entry(3)
	require.Equal(t, int32(3), e.LastSeq())

	// The restored transactions end as any other.
	c, lso := m.CompleteTxn(Marker{ProducerID: 4, Epoch: 0, CoordinatorEpoch: 5, Offset: 81, Timestamp: now})
	require.Equal(t, CompletedTxn{ProducerID: 4, FirstOffset: 30, LastOffset: 81, Aborted: true}, c)
	require.Equal(t, int64(50), lso)
	require.NoError(t, m.Check(data(2, 7, 10, 10, 82, 82, now)))
	requireErrIs(t, ErrOutOfOrderSequence, m.Check(data(2, 7, 11, 11, 82, 82, now)))
}

func TestConcurrentReaders(t *testing.T) {
	m := NewManager(0)
	const rounds = 2000
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				end := m.MapEndOffset()
				if u := m.FirstUndecidedOffset(); u != NoOffset && (u < 0 || u%4 != 0) {
					t.Errorf("first undecided offset %d: not a transaction's first offset", u)
					return
				}
				if u := m.FirstUnstableOffset(end); u != NoOffset && u%4 != 0 {
					t.Errorf("first unstable offset %d: not a transaction's first offset", u)
					return
				}
				for _, e := range m.Entries() {
					if len(e.Batches) > NumBatchesToRetain {
						t.Errorf("producer %d: %d batches", e.ProducerID, len(e.Batches))
						return
					}
				}
				m.OngoingTxns()
			}
		}()
	}

	// Each round: producer r%3 writes a transaction of two batches at 4r..4r+2, then a marker at 4r+3;
	// every seventh round the second batch's write fails and is undone, every fifth the marker's,
	// then each is written again.
	off := int64(0)
	for r := range int64(rounds) {
		pid := r % 3
		seq := int32(r / 3 * 2)
		m.Update(txn(pid, 0, seq, seq, off, off, r))
		undo := m.Update(txn(pid, 0, seq+1, seq+1, off+1, off+2, r))
		if r%7 == 0 {
			undo()
			m.Update(txn(pid, 0, seq+1, seq+1, off+1, off+2, r))
		}
		mk := Marker{ProducerID: pid, Commit: true, Offset: off + 3, Timestamp: r}
		if r%5 == 0 {
			_, _, undoMk := m.CompleteTxnUndoable(mk)
			undoMk()
		}
		m.CompleteTxn(mk)
		off += 4
	}
	close(done)
	wg.Wait()

	require.Equal(t, int64(4*rounds), m.MapEndOffset())
	require.Equal(t, NoOffset, m.FirstUndecidedOffset())
	require.Equal(t, NoOffset, m.FirstUnstableOffset(4*rounds))
	require.Equal(t, 3, m.Len())
	last, _ := m.Entry((rounds - 1) % 3)
	require.Equal(t, int32((rounds-1)/3*2+1), last.LastSeq())
}
