package recordbatch

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/stretchr/testify/require"
)

// TestLZ4FrameAsKafkaWrites pins our LZ4 frame descriptor to what Kafka's
// KafkaLZ4BlockOutputStream writes: version 1, independent blocks, no block or content
// checksum, no content size (FLG 0x60), 64 KiB maximum block size (BD 0x40).
func TestLZ4FrameAsKafkaWrites(t *testing.T) {
	var c compressor
	src := bytes.Repeat([]byte("kafka lz4 "), 20000) // 200 KB: several 64 KiB blocks
	out, err := c.compress(nil, CodecLZ4, src)
	require.NoError(t, err)
	require.Equal(t, []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40}, out[:6])
	require.Equal(t, []byte{0, 0, 0, 0}, out[len(out)-4:], "end mark, no content checksum after it")

	var d decompressor
	back, err := d.decompress(nil, CodecLZ4, out, len(src))
	require.NoError(t, err)
	require.Equal(t, src, back)
}

// TestXerialAsSnappyJavaWrites checks our snappy framing: the xerial header with version and
// compatible version 1, then blocks of at most 32 KiB of input each.
func TestXerialAsSnappyJavaWrites(t *testing.T) {
	src := bytes.Repeat([]byte("0123456789"), 10240) // 102400 bytes: 3 full blocks and 4096 bytes
	out := appendXerial([]byte("keep"), src)
	require.Equal(t, "keep", string(out[:4]))
	out = out[4:]
	require.Equal(t, []byte("\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"), out[:16])
	var sizes []int
	var joined []byte
	for p := out[16:]; len(p) > 0; {
		n := binary.BigEndian.Uint32(p)
		block, err := snappy.DecodeStrict(nil, p[4:4+n])
		require.NoError(t, err)
		sizes = append(sizes, len(block))
		joined = append(joined, block...)
		p = p[4+n:]
	}
	require.Equal(t, []int{32768, 32768, 32768, 4096}, sizes)
	require.Equal(t, src, joined)

	require.Equal(t, []byte("\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"), appendXerial(nil, nil))
}

type stuckReader struct{}

func (stuckReader) Read([]byte) (int, error) { return 0, nil }

func TestReadBoundedNoProgress(t *testing.T) {
	_, err := readBounded(nil, stuckReader{}, 1<<20, CodecGzip)
	require.ErrorIs(t, err, ErrCorrupt)
}

func TestReadBoundedExact(t *testing.T) {
	src := bytes.Repeat([]byte{7}, 10000)
	for _, prefix := range [][]byte{nil, []byte("pre")} {
		out, err := readBounded(append([]byte(nil), prefix...), bytes.NewReader(src), len(src), CodecGzip)
		require.NoError(t, err)
		require.Equal(t, append(append([]byte(nil), prefix...), src...), out)
		out, err = readBounded(append([]byte(nil), prefix...), bytes.NewReader(src), len(src)-1, CodecGzip)
		require.ErrorIs(t, err, ErrTooLarge)
		require.Equal(t, string(prefix), string(out), "a failure leaves dst as it was")
	}
}
