package cleaner

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

var genCorpus = flag.Bool("gencorpus", false, "rewrite the seed corpora under testdata/fuzz from valid batches")

// FuzzFilterBatch filters arbitrary bytes as a batch against a map of two keys: it never panics,
// and a batch it writes decodes, each of its records one of the input's at the same offset with
// the same key, value and timestamp.
func FuzzFilterBatch(f *testing.F) {
	f.Fuzz(func(t *testing.T, batch, key1 []byte, off1 int64, key2 []byte, off2, now, retention int64, keepEmpty bool) {
		m := NewOffsetMap(4 << 10)
		m.Put(key1, off1)
		m.Put(key2, off2)
		rules := Rules{Map: m, Now: now, DeleteRetention: retention, Limits: recordbatch.Limits{MaxBatchSize: 1 << 20, MaxDecompressedSize: 1 << 20}}
		if keepEmpty {
			rules.KeepEmpty = keepAll
		}
		var fl Filter
		dst := []byte("dst")
		out, res, err := fl.Batch(dst, batch, &rules)
		if err != nil {
			require.Equal(t, "dst", string(out))
			return
		}
		if !res.Kept {
			require.Equal(t, "dst", string(out))
			return
		}
		out = out[3:]
		in, err := recordbatch.Decode(batch, rules.Limits)
		require.NoError(t, err)
		inRecs := map[int64]decoded{}
		for r := range in.Records() {
			inRecs[in.RecordOffset(&r)] = decoded{in.RecordOffset(&r), in.RecordTimestamp(&r), r.Key, r.Value}
		}
		ob, err := recordbatch.Decode(out, recordbatch.Limits{MaxBatchSize: -1, MaxDecompressedSize: -1})
		require.NoError(t, err)
		require.Equal(t, len(out), ob.Size())
		require.Equal(t, in.BaseOffset, ob.BaseOffset)
		require.Equal(t, in.LastOffsetDelta, ob.LastOffsetDelta)
		require.Equal(t, res.RecordsKept, int(ob.RecordCount))
		if res.Original {
			require.Equal(t, batch[:in.Size()], out)
		}
		for r := range ob.Records() {
			got := decoded{ob.RecordOffset(&r), ob.RecordTimestamp(&r), r.Key, r.Value}
			want, ok := inRecs[got.Offset]
			require.True(t, ok, "offset %d not in the input", got.Offset)
			require.Equal(t, want, got)
		}
	})
}

// TestFuzzCorpus checks that the committed seed corpora are what this generator makes (valid
// batches under every codec, with tombstones, keyless records, offset gaps and a delete horizon),
// and rewrites them when run with -gencorpus.
func TestFuzzCorpus(t *testing.T) {
	var seeds [][]byte
	for _, codec := range []recordbatch.Codec{recordbatch.CodecNone, recordbatch.CodecGzip, recordbatch.CodecSnappy, recordbatch.CodecLZ4, recordbatch.CodecZstd} {
		h := header(10)
		h.Attributes = recordbatch.Attributes(codec)
		seeds = append(seeds, build(t, h, rec{0, 1000, b("a"), b("1")}, rec{1, 1001, b("b"), nil}, rec{3, 1002, nil, b("x")}, rec{4, 1003, b("a"), b("2")}))
	}
	h := header(0)
	h.Attributes = recordbatch.AttrLogAppendTime | recordbatch.AttrTransactional
	h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.MaxTimestamp = 3, 1, 0, 5000
	seeds = append(seeds, build(t, h, rec{0, 1, b("a"), b("v")}, rec{1, 2, b("a"), b("w")}))
	var fl Filter
	withHorizon, _, err := fl.Batch(nil, seeds[0], &Rules{Map: mapOf(t, "a", 14, "b", 11), Now: 2000, DeleteRetention: 100})
	require.NoError(t, err)
	seeds = append(seeds, withHorizon)
	ctl := header(20)
	ctl.Attributes = recordbatch.AttrControl | recordbatch.AttrTransactional
	ctl.ProducerID, ctl.ProducerEpoch = 3, 1
	seeds = append(seeds, build(t, ctl, rec{0, 10, []byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 0, 0}}))

	q := func(p []byte) string { return "[]byte(" + strconv.Quote(string(p)) + ")" }
	write := func(name string, i int, lines ...string) {
		dir := filepath.Join("testdata", "fuzz", name)
		if *genCorpus {
			require.NoError(t, os.MkdirAll(dir, 0o755))
		}
		body := "go test fuzz v1\n"
		for _, l := range lines {
			body += l + "\n"
		}
		name = filepath.Join(dir, fmt.Sprintf("seed-%02d", i))
		if *genCorpus {
			require.NoError(t, os.WriteFile(name, []byte(body), 0o644))
			return
		}
		got, err := os.ReadFile(name)
		require.NoError(t, err)
		require.Equal(t, body, string(got), "%s differs from the generator's: rerun with -gencorpus", name)
	}
	for i, s := range seeds {
		write("FuzzFilterBatch", i, q(s), q(b("a")), "int64(14)", q(b("b")), "int64(11)", "int64(2000)", "int64(100)", fmt.Sprintf("bool(%v)", i%2 == 0))
	}
}
