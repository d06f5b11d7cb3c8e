package segment

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// TestEachBatch: every batch in order with its position, the buffer kept for the next call, a
// stop and an error from fn, and bytes that do not frame (a torn tail, a huge length) as
// ErrCorrupt naming the file, with nothing allocated for the length.
func TestEachBatch(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		s, err := Create(fsy, dir, 0, testConfig(), Caches{}, false)
		require.NoError(t, err)
		defer s.Close()
		bs := [][]byte{batch(t, 0, 3, 1000), batch(t, 3, 1, 1001), batch(t, 4, 5, 1002)}
		for _, b := range bs {
			appendBatch(t, s, b)
		}
		var buf []byte
		var got [][]byte
		var pos []int64
		require.NoError(t, s.EachBatch(&buf, func(p int64, b []byte) (bool, error) {
			got, pos = append(got, append([]byte(nil), b...)), append(pos, p)
			return true, nil
		}))
		require.Equal(t, bs, got)
		require.Equal(t, []int64{0, int64(len(bs[0])), int64(len(bs[0]) + len(bs[1]))}, pos)
		require.GreaterOrEqual(t, cap(buf), len(bs[0])+len(bs[1])+len(bs[2]), "the read-ahead buffer (the whole small segment) is left for the next call")
		kept := &buf[:1][0]
		require.NoError(t, s.EachBatch(&buf, func(int64, []byte) (bool, error) { return true, nil }))
		require.Same(t, kept, &buf[:1][0], "and reused by it")

		n := 0
		require.NoError(t, s.EachBatch(&buf, func(int64, []byte) (bool, error) { n++; return n < 2, nil }))
		require.Equal(t, 2, n, "false stops")
		stop := errors.New("stop")
		require.ErrorIs(t, s.EachBatch(&buf, func(int64, []byte) (bool, error) { return true, stop }), stop)

		// A header claiming 2 GiB past the end: ErrCorrupt at its position, no 2 GiB buffer.
		huge := append([]byte(nil), bs[0][:recordbatch.HeaderSize]...)
		binary.BigEndian.PutUint32(huge[8:], 1<<31-1)
		end := s.Size()
		require.NoError(t, s.WriteAt(huge, end))
		s.SetSize(end + int64(len(huge)))
		buf = nil
		err = s.EachBatch(&buf, func(int64, []byte) (bool, error) { return true, nil })
		require.ErrorIs(t, err, ErrCorrupt)
		require.Contains(t, err.Error(), s.Path(LogSuffix))
		require.Less(t, cap(buf), 1<<21, "nothing allocated from the length")

		// A torn tail shorter than a header.
		s.SetSize(end + 30)
		err = s.EachBatch(&buf, func(int64, []byte) (bool, error) { return true, nil })
		require.ErrorIs(t, err, ErrCorrupt)
	})
}
