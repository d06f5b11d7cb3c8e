package recordbatch

import (
	"bytes"
	stdgzip "compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"io"
	"testing"

	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The tests here check our codec against franz-go's kmsg, an independent implementation of the
// same wire format: batches we write are read by kmsg (records decompressed by each codec's
// reference library), and batches kmsg writes are read by us.

// compatRecords covers null and empty keys and values, repeated and null-valued headers,
// negative timestamp deltas and a large value.
func compatRecords() []Record {
	big := bytes.Repeat([]byte("0123456789abcdef"), 9000) // 144 KB: several compression blocks
	return []Record{
		{TimestampDelta: 0, OffsetDelta: 0, Key: []byte("k0"), Value: []byte("v0")},
		{TimestampDelta: -5000, OffsetDelta: 1, Key: nil, Value: []byte{}},
		{TimestampDelta: 3, OffsetDelta: 2, Key: []byte{}, Value: nil,
			Headers: []RecordHeader{{Key: "h", Value: []byte("1")}, {Key: "h", Value: []byte("2")},
				{Key: "", Value: nil}, {Key: "h", Value: []byte{}}}},
		{TimestampDelta: 1 << 40, OffsetDelta: 3, Key: []byte("big"), Value: big},
		{TimestampDelta: -1, OffsetDelta: 4, Key: []byte("last"), Value: []byte("v")},
	}
}

func compatHeaders() []Header {
	var out []Header
	for _, codec := range allCodecs {
		for _, attrs := range []Attributes{0, AttrTransactional, AttrControl | AttrTransactional, AttrLogAppendTime} {
			out = append(out, Header{
				BaseOffset: 1 << 33, PartitionLeaderEpoch: 12, Attributes: attrs.WithCodec(codec),
				LastOffsetDelta: 4, BaseTimestamp: 1700000000000, MaxTimestamp: 1700000000000 + 1<<40,
				ProducerID: 987654321, ProducerEpoch: 3, BaseSequence: 1000,
			})
		}
	}
	return out
}

// refDecompress decompresses with each codec's reference reader, independent of our code.
func refDecompress(t *testing.T, codec Codec, b []byte) []byte {
	t.Helper()
	var r io.Reader
	switch codec {
	case CodecNone:
		return b
	case CodecGzip:
		zr, err := stdgzip.NewReader(bytes.NewReader(b))
		require.NoError(t, err)
		r = zr
	case CodecSnappy:
		require.True(t, bytes.HasPrefix(b, []byte("\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")), "xerial framing")
		out, err := xerial.Decode(b)
		require.NoError(t, err)
		return out
	case CodecLZ4:
		r = lz4.NewReader(bytes.NewReader(b))
	case CodecZstd:
		zr, err := zstd.NewReader(bytes.NewReader(b))
		require.NoError(t, err)
		defer zr.Close()
		out, err := io.ReadAll(zr)
		require.NoError(t, err)
		return out
	}
	out, err := io.ReadAll(r)
	require.NoError(t, err)
	return out
}

func refCompress(t *testing.T, codec Codec, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch codec {
	case CodecNone:
		return b
	case CodecGzip:
		w := stdgzip.NewWriter(&buf)
		_, err := w.Write(b)
		require.NoError(t, err)
		require.NoError(t, w.Close())
	case CodecSnappy:
		return xerial.Encode(nil, b)
	case CodecLZ4:
		w := lz4.NewWriter(&buf) // pierrec's defaults: 4 MB blocks, content checksum
		_, err := w.Write(b)
		require.NoError(t, err)
		require.NoError(t, w.Close())
	case CodecZstd:
		w, err := zstd.NewWriter(&buf) // streaming: no content size in the frame
		require.NoError(t, err)
		_, err = w.Write(b)
		require.NoError(t, err)
		require.NoError(t, w.Close())
	}
	return buf.Bytes()
}

func TestKmsgReadsOurBatches(t *testing.T) {
	recs := compatRecords()
	for _, h := range compatHeaders() {
		out, err := Encode(nil, h, recs)
		require.NoError(t, err)

		var kb kmsg.RecordBatch
		require.NoError(t, kb.ReadFrom(out))
		name := h.Attributes.Codec().String()
		require.Equal(t, h.BaseOffset, kb.FirstOffset, name)
		require.Equal(t, int32(len(out)-LogOverhead), kb.Length, name)
		require.Equal(t, h.PartitionLeaderEpoch, kb.PartitionLeaderEpoch, name)
		require.Equal(t, int8(2), kb.Magic, name)
		require.Equal(t, crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)), uint32(kb.CRC), name)
		require.Equal(t, int16(h.Attributes), kb.Attributes, name)
		require.Equal(t, h.LastOffsetDelta, kb.LastOffsetDelta, name)
		require.Equal(t, h.BaseTimestamp, kb.FirstTimestamp, name)
		require.Equal(t, h.MaxTimestamp, kb.MaxTimestamp, name)
		require.Equal(t, h.ProducerID, kb.ProducerID, name)
		require.Equal(t, h.ProducerEpoch, kb.ProducerEpoch, name)
		require.Equal(t, h.BaseSequence, kb.FirstSequence, name)
		require.Equal(t, int32(len(recs)), kb.NumRecords, name)

		raw := refDecompress(t, h.Attributes.Codec(), kb.Records)
		var got []kmsg.Record
		for len(raw) > 0 {
			length, n := binary.Varint(raw)
			require.Greater(t, n, 0)
			one := raw[:n+int(length)]
			var kr kmsg.Record
			require.NoError(t, kr.ReadFrom(one), name)
			require.Equal(t, one, kr.AppendTo(nil), "%s: record length covers exactly its fields", name)
			got = append(got, kr)
			raw = raw[len(one):]
		}
		require.Len(t, got, len(recs), name)
		for i, kr := range got {
			r := recs[i]
			require.Equal(t, r.Attributes, kr.Attributes, name)
			require.Equal(t, r.TimestampDelta, kr.TimestampDelta64, name)
			require.Equal(t, r.OffsetDelta, kr.OffsetDelta, name)
			require.Equal(t, r.Key, kr.Key, "%s record %d key", name, i)
			require.Equal(t, r.Value, kr.Value, "%s record %d value", name, i)
			require.Equal(t, len(r.Headers), len(kr.Headers), name)
			for j, hd := range r.Headers {
				require.Equal(t, hd.Key, kr.Headers[j].Key, name)
				require.Equal(t, hd.Value, kr.Headers[j].Value, "%s record %d header %d", name, i, j)
			}
		}
	}
}

func TestWeReadKmsgBatches(t *testing.T) {
	recs := compatRecords()
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for _, h := range compatHeaders() {
		codec := h.Attributes.Codec()
		var raw []byte
		for _, r := range recs {
			kr := kmsg.Record{Attributes: r.Attributes, TimestampDelta64: r.TimestampDelta,
				OffsetDelta: r.OffsetDelta, Key: r.Key, Value: r.Value}
			for _, hd := range r.Headers {
				kr.Headers = append(kr.Headers, kmsg.Header{Key: hd.Key, Value: hd.Value})
			}
			kr.Length = int32(len(kr.AppendTo(nil)) - 1) // a zero Length varint takes one byte
			raw = kr.AppendTo(raw)
		}
		kb := kmsg.RecordBatch{
			FirstOffset: h.BaseOffset, PartitionLeaderEpoch: h.PartitionLeaderEpoch, Magic: 2,
			Attributes: int16(h.Attributes), LastOffsetDelta: h.LastOffsetDelta,
			FirstTimestamp: h.BaseTimestamp, MaxTimestamp: h.MaxTimestamp, ProducerID: h.ProducerID,
			ProducerEpoch: h.ProducerEpoch, FirstSequence: h.BaseSequence,
			NumRecords: int32(len(recs)), Records: refCompress(t, codec, raw),
		}
		kb.Length = int32(len(kb.Records) + 49)
		out := kb.AppendTo(nil)
		kb.CRC = int32(crc32.Checksum(out[21:], castagnoli))
		out = kb.AppendTo(nil)

		got, err := Decode(out, Limits{})
		require.NoError(t, err, codec)
		want := h
		want.Magic = 2
		want.BatchLength = kb.Length
		want.CRC = uint32(kb.CRC)
		want.RecordCount = int32(len(recs))
		require.Equal(t, want, got.Header, codec)
		require.Equal(t, recs, got.AppendRecords(nil), codec)
		if codec == CodecNone {
			again, err := Encode(nil, got.Header, got.AppendRecords(nil))
			require.NoError(t, err)
			require.Equal(t, out, again, "kmsg's bytes re-encode identically")
		}
	}
}
