package cleaner

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// segment returns n batches back to back, each with a value of size bytes, and their positions.
func segment(t testing.TB, n, size int) ([]byte, [][]byte, []int64) {
	t.Helper()
	rnd := rand.New(rand.NewPCG(uint64(n), uint64(size)))
	var seg []byte
	var batches [][]byte
	var pos []int64
	for i := range n {
		v := make([]byte, size+rnd.IntN(size+1))
		for j := range v {
			v[j] = byte(rnd.UintN(256))
		}
		p := build(t, header(int64(i)), rec{0, int64(1000 + i), []byte(fmt.Sprint("k", i)), v})
		pos = append(pos, int64(len(seg)))
		batches = append(batches, p)
		seg = append(seg, p...)
	}
	return seg, batches, pos
}

func TestBatchReaderConsecutive(t *testing.T) {
	for _, c := range []struct {
		name    string
		n, size int
	}{{"small", 20, 10}, {"across refills", 40, 40 << 10}} {
		t.Run(c.name, func(t *testing.T) {
			seg, batches, pos := segment(t, c.n, c.size)
			br := NewBatchReader(bytes.NewReader(seg), 0, int64(len(seg)), recordbatch.DefaultMaxMessageBytes, nil)
			for i := range batches {
				got, at, err := br.Next()
				require.NoError(t, err)
				require.Equal(t, pos[i], at)
				require.Equal(t, batches[i], got)
			}
			got, at, err := br.Next()
			require.ErrorIs(t, err, io.EOF)
			require.Nil(t, got)
			require.Equal(t, int64(len(seg)), at)
			_, _, err = br.Next()
			require.ErrorIs(t, err, io.EOF)
			require.Equal(t, ReadChunk, len(br.Buffer()), "batches within ReadChunk do not grow the buffer")
		})
	}
}

func TestBatchReaderRange(t *testing.T) {
	seg, batches, pos := segment(t, 5, 10)
	br := NewBatchReader(bytes.NewReader(seg), pos[1], pos[4], 0, nil)
	for i := 1; i < 4; i++ {
		got, at, err := br.Next()
		require.NoError(t, err)
		require.Equal(t, pos[i], at)
		require.Equal(t, batches[i], got)
	}
	_, at, err := br.Next()
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, pos[4], at)
}

func TestBatchReaderTornTail(t *testing.T) {
	seg, batches, pos := segment(t, 3, 10)
	end := int64(len(seg))
	cases := []struct {
		name    string
		data    []byte
		limit   int64
		errText string
	}{
		{
			name: "fewer bytes than a header", data: append(append([]byte(nil), seg...), batches[0][:30]...), limit: end + 30,
			errText: fmt.Sprintf("30 bytes at position %d, less than a batch header", end),
		},
		{
			name: "a batch running past limit", data: append(append([]byte(nil), seg...), batches[0][:recordbatch.HeaderSize+2]...),
			limit:   end + recordbatch.HeaderSize + 2,
			errText: fmt.Sprintf("batch at position %d of %d bytes runs past %d", end, len(batches[0]), end+recordbatch.HeaderSize+2),
		},
		{
			name: "limit cutting the last batch", data: seg, limit: end - 1,
			errText: fmt.Sprintf("batch at position %d of %d bytes runs past %d", pos[2], len(batches[2]), end-1),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			br := NewBatchReader(bytes.NewReader(c.data), 0, c.limit, 0, nil)
			n := 0
			for {
				_, at, err := br.Next()
				if err != nil {
					require.ErrorIs(t, err, recordbatch.ErrCorrupt)
					require.Contains(t, err.Error(), c.errText)
					if c.limit >= end {
						require.Equal(t, end, at)
						require.Equal(t, 3, n)
					} else {
						require.Equal(t, pos[2], at)
						require.Equal(t, 2, n)
					}
					break
				}
				n++
			}
		})
	}
}

func TestBatchReaderBadHeader(t *testing.T) {
	seg, _, pos := segment(t, 2, 10)
	bad := append([]byte(nil), seg...)
	bad[pos[1]+16] = 1 // magic 1
	br := NewBatchReader(bytes.NewReader(bad), 0, int64(len(bad)), 0, nil)
	_, _, err := br.Next()
	require.NoError(t, err)
	_, at, err := br.Next()
	require.ErrorIs(t, err, recordbatch.ErrCorrupt)
	require.Equal(t, pos[1], at)
	require.Contains(t, err.Error(), fmt.Sprintf("batch at position %d", pos[1]))
}

func TestBatchReaderShortFile(t *testing.T) {
	seg, _, pos := segment(t, 2, 10)
	// The limit promises more than the file holds: the reader's short read is an error.
	br := NewBatchReader(bytes.NewReader(seg[:pos[1]+20]), 0, int64(len(seg)), 0, nil)
	_, _, err := br.Next()
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

// TestBatchReaderHugeLength gives a header whose length says 2 GiB: the reader refuses it
// from the header, without growing its buffer to it.
func TestBatchReaderHugeLength(t *testing.T) {
	seg, _, _ := segment(t, 1, 10)
	huge := append([]byte(nil), seg...)
	binary.BigEndian.PutUint32(huge[8:], 0x7ffffff0)
	for _, c := range []struct {
		name     string
		maxBatch int
		limit    int64
		errIs    error
	}{
		{"past maxBatch", recordbatch.DefaultMaxMessageBytes, int64(len(huge)), recordbatch.ErrTooLarge},
		{"past limit", 0, int64(len(huge)), recordbatch.ErrCorrupt},
	} {
		t.Run(c.name, func(t *testing.T) {
			buf := make([]byte, ReadChunk)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			br := NewBatchReader(bytes.NewReader(huge), 0, c.limit, c.maxBatch, buf)
			_, _, err := br.Next()
			runtime.ReadMemStats(&after)
			require.ErrorIs(t, err, c.errIs)
			require.ErrorIs(t, err, recordbatch.ErrCorrupt)
			require.Equal(t, ReadChunk, cap(br.Buffer()))
			require.Same(t, &buf[0], &br.Buffer()[0], "the buffer given is the one kept")
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10), "bytes allocated: the reader and its error, not 2 GiB")
		})
	}
}

func TestBatchReaderGrowsBuffer(t *testing.T) {
	seg, batches, pos := segment(t, 3, 300<<10) // values of 300-600 KiB: some past ReadChunk
	var big int
	for _, p := range batches {
		big = max(big, len(p))
	}
	require.Greater(t, big, ReadChunk)
	br := NewBatchReader(bytes.NewReader(seg), 0, int64(len(seg)), 2<<20, nil)
	for i := range batches {
		got, at, err := br.Next()
		require.NoError(t, err)
		require.Equal(t, pos[i], at)
		require.Equal(t, batches[i], got)
	}
	_, _, err := br.Next()
	require.ErrorIs(t, err, io.EOF)
	require.GreaterOrEqual(t, len(br.Buffer()), big)

	// The grown buffer is reused by the next reader.
	buf := br.Buffer()
	br2 := NewBatchReader(bytes.NewReader(seg), 0, int64(len(seg)), 2<<20, buf)
	got, at, err := br2.Next()
	require.NoError(t, err)
	require.Equal(t, int64(0), at)
	require.Equal(t, batches[0], got)
	require.Same(t, &buf[0], &br2.Buffer()[0])
}
