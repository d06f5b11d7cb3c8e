package recordbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// A compressed batch compresses its whole records section as one stream; the header stays
// uncompressed, and RecordCount counts the records inside the stream.

// xerialMagic starts snappy data in the framing of the xerial snappy-java library, which is what
// Kafka's Java client writes (SnappyOutputStream): this magic, a big-endian int32 version and
// int32 minimum compatible version (both 1), then blocks of a big-endian int32 length and a
// snappy block.
var xerialMagic = [8]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = len(xerialMagic) + 8
	// xerialBlockSize is snappy-java's default block size, the uncompressed bytes per block.
	xerialBlockSize = 32 << 10
	// zstdMinWindow is the window RFC 8878 recommends every decoder accept. Frames from a
	// streaming writer (Kafka's zstd-jni) declare a window from the compression level, not from
	// their content, so the window limit cannot simply be the decompressed-size bound.
	zstdMinWindow = 8 << 20
)

// sliceWriter is an io.Writer appending to b, for compressors that only write to writers.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// compressor holds one encoder per codec, created on first use and reused across batches.
type compressor struct {
	w    sliceWriter
	gzip *gzip.Writer
	lz4  *lz4.Writer
	zstd *zstd.Encoder
}

// compress appends src compressed with codec to dst. The formats are the ones Kafka's Java
// client writes: gzip at the default level, xerial-framed snappy, the LZ4 frame format with
// 64 KiB independent blocks and no content checksum (KafkaLZ4BlockOutputStream), and a zstd
// frame at the default level (3).
func (c *compressor) compress(dst []byte, codec Codec, src []byte) ([]byte, error) {
	switch codec {
	case CodecGzip:
		c.w.b = dst
		if c.gzip == nil {
			c.gzip = gzip.NewWriter(&c.w)
		} else {
			c.gzip.Reset(&c.w)
		}
		if _, err := c.gzip.Write(src); err != nil {
			return dst, fmt.Errorf("recordbatch: gzip: %w", err)
		}
		if err := c.gzip.Close(); err != nil {
			return dst, fmt.Errorf("recordbatch: gzip: %w", err)
		}
		dst, c.w.b = c.w.b, nil
		return dst, nil
	case CodecSnappy:
		return appendXerial(dst, src), nil
	case CodecLZ4:
		c.w.b = dst
		if c.lz4 == nil {
			c.lz4 = lz4.NewWriter(&c.w)
			err := c.lz4.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false),
				lz4.BlockChecksumOption(false), lz4.ConcurrencyOption(1))
			if err != nil {
				c.lz4 = nil
				return dst, fmt.Errorf("recordbatch: lz4: %w", err)
			}
		} else {
			c.lz4.Reset(&c.w)
		}
		if _, err := c.lz4.Write(src); err != nil {
			return dst, fmt.Errorf("recordbatch: lz4: %w", err)
		}
		if err := c.lz4.Close(); err != nil {
			return dst, fmt.Errorf("recordbatch: lz4: %w", err)
		}
		dst, c.w.b = c.w.b, nil
		return dst, nil
	case CodecZstd:
		if c.zstd == nil {
			// A nil writer and one goroutine: EncodeAll runs synchronously on the caller's.
			enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1),
				zstd.WithEncoderLevel(zstd.SpeedDefault))
			if err != nil {
				return dst, fmt.Errorf("recordbatch: zstd: %w", err)
			}
			c.zstd = enc
		}
		return c.zstd.EncodeAll(src, dst), nil
	}
	return dst, fmt.Errorf("%w: unknown compression codec %d", ErrCorrupt, codec)
}

// appendXerial appends src as xerial-framed snappy, in blocks of xerialBlockSize like
// snappy-java. Empty input is the bare header.
func appendXerial(dst, src []byte) []byte {
	dst = append(dst, xerialMagic[:]...)
	dst = binary.BigEndian.AppendUint32(dst, 1) // version
	dst = binary.BigEndian.AppendUint32(dst, 1) // minimum compatible version
	for len(src) > 0 {
		chunk := src[:min(len(src), xerialBlockSize)]
		src = src[len(chunk):]
		at := len(dst)
		need := 4 + snappy.MaxEncodedLen(len(chunk))
		if cap(dst)-at < need {
			dst = append(dst[:cap(dst)], make([]byte, need-(cap(dst)-at))...)
		}
		dst = dst[:at+need]
		// s2's plain snappy encoder: standard snappy blocks at snappy's speed. snappy.Encode
		// is s2's "better" snappy encoder, several times slower for a few percent of size.
		block := s2.EncodeSnappy(dst[at+4:], chunk)
		binary.BigEndian.PutUint32(dst[at:], uint32(len(block)))
		dst = dst[:at+4+len(block)]
	}
	return dst
}

// decompressor holds one decoder per codec, created on first use and reused across batches.
type decompressor struct {
	src        bytes.Reader
	gzip       *gzip.Reader
	lz4        *lz4.Reader
	zstd       *zstd.Decoder
	zstdWindow uint64
}

// decompress appends the decompressed form of src to dst, reading at most bound bytes of
// output. It never sizes anything by a length the stream declares: output is read through a
// limit of bound+1 bytes and growing past bound is ErrTooLarge (snappy blocks, which state
// their length, are checked against what is left of the bound before any allocation). A bomb
// thus costs about twice the bound in buffer growth, plus the codec's own state: for zstd the
// frame's window, refused above max(bound, 8 MiB); for lz4 one block, at most 4 MiB.
//
// Returns ErrCorrupt for an unknown codec or a stream its decoder rejects (bad framing,
// checksum, truncation, data after the stream's end where the format can tell).
func (d *decompressor) decompress(dst []byte, codec Codec, src []byte, bound int) ([]byte, error) {
	if len(src) == 0 {
		// Every codec's framing takes bytes even for no records; Kafka writes empty batches
		// (what compaction leaves of a producer's state) uncompressed.
		return dst, fmt.Errorf("%w: %s: no compressed bytes", ErrCorrupt, codec)
	}
	var r io.Reader
	switch codec {
	case CodecSnappy:
		return decodeSnappy(dst, src, bound)
	case CodecGzip:
		d.src.Reset(src)
		if d.gzip == nil {
			d.gzip = new(gzip.Reader)
		}
		if err := d.gzip.Reset(&d.src); err != nil {
			return dst, fmt.Errorf("%w: gzip: %v", ErrCorrupt, err)
		}
		r = d.gzip
	case CodecLZ4:
		d.src.Reset(src)
		if d.lz4 == nil {
			d.lz4 = lz4.NewReader(&d.src)
			// One goroutine, the caller's: concurrent lz4 reading starts goroutines that a
			// pooled decompressor would leave behind.
			if err := d.lz4.Apply(lz4.ConcurrencyOption(1)); err != nil {
				d.lz4 = nil
				return dst, fmt.Errorf("recordbatch: lz4: %w", err)
			}
		} else {
			d.lz4.Reset(&d.src)
		}
		r = d.lz4
	case CodecZstd:
		d.src.Reset(src)
		window := max(uint64(bound)+1, zstdMinWindow)
		var err error
		switch {
		case d.zstd == nil:
			// One goroutine makes streaming decode synchronous: nothing runs after we return,
			// so a pooled decoder needs no Close.
			d.zstd, err = zstd.NewReader(&d.src, zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(window))
		case d.zstdWindow != window:
			err = d.zstd.ResetWithOptions(&d.src, zstd.WithDecoderMaxWindow(window))
		default:
			err = d.zstd.Reset(&d.src)
		}
		if err != nil {
			d.zstd = nil
			return dst, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
		}
		d.zstdWindow = window
		r = d.zstd
	default:
		return dst, fmt.Errorf("%w: unknown compression codec %d", ErrCorrupt, codec)
	}
	dst, err := readBounded(dst, r, bound, codec)
	d.src.Reset(nil) // the decoders keep reading d.src; do not let it pin the caller's batch
	return dst, err
}

// readBounded appends everything r yields to dst, failing with ErrTooLarge once that passes
// bound bytes. The buffer grows with what actually arrives, never by a declared size. codec
// names the stream in errors.
func readBounded(dst []byte, r io.Reader, bound int, codec Codec) ([]byte, error) {
	start := len(dst)
	lr := io.LimitedReader{R: r, N: int64(bound) + 1}
	idle := 0
	for {
		if len(dst) == cap(dst) {
			// Double what has arrived so far (at least 4 KiB), up to just past the bound.
			dst = grow(dst, min(max(len(dst)-start, 4<<10), bound+1-(len(dst)-start)), start+bound+1)
		}
		n, err := lr.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst)-start > bound {
			return dst[:start], fmt.Errorf("%w: %s records decompress to more than %d bytes", ErrTooLarge, codec, bound)
		}
		if errors.Is(err, io.EOF) {
			return dst, nil
		}
		if err != nil {
			return dst[:start], fmt.Errorf("%w: %s: %v", ErrCorrupt, codec, err)
		}
		// A reader that keeps returning nothing would spin here forever (io.Reader permits
		// (0, nil) but discourages it, as bufio does).
		if n > 0 {
			idle = 0
		} else if idle++; idle >= 100 {
			return dst[:start], fmt.Errorf("%w: %s: %v", ErrCorrupt, codec, io.ErrNoProgress)
		}
	}
}

// grow returns dst with room for n more bytes. When it must reallocate it at least doubles the
// capacity, so filling a buffer piecemeal costs about twice its final size, but never past
// limit (>= len(dst)+n) bytes, so a bound is not overshot by the doubling.
func grow(dst []byte, n, limit int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	out := make([]byte, len(dst), min(max(len(dst)+n, 2*cap(dst)), limit))
	copy(out, dst)
	return out
}

// decodeSnappy appends the decoded form of src, xerial-framed or (as older non-Java producers
// write it) one plain snappy block, like snappy-java's SnappyInputStream reads either.
func decodeSnappy(dst, src []byte, bound int) ([]byte, error) {
	start := len(dst)
	if len(src) < len(xerialMagic) || !bytes.Equal(src[:len(xerialMagic)], xerialMagic[:]) {
		return snappyBlock(dst, src, bound)
	}
	if len(src) < xerialHeaderSize {
		return dst, fmt.Errorf("%w: snappy: xerial header of %d bytes, want %d", ErrCorrupt, len(src), xerialHeaderSize)
	}
	// The version fields are not checked: snappy-java only refuses a compatible version it
	// does not know, and every writer uses 1.
	p := src[xerialHeaderSize:]
	for len(p) > 0 {
		at := len(src) - len(p)
		if len(p) < 4 {
			return dst[:start], fmt.Errorf("%w: snappy: %d bytes at %d, too few for a xerial block length", ErrCorrupt, len(p), at)
		}
		n := binary.BigEndian.Uint32(p)
		p = p[4:]
		if uint64(n) > uint64(len(p)) {
			return dst[:start], fmt.Errorf("%w: snappy: xerial block at %d of %d bytes, only %d present", ErrCorrupt, at, n, len(p))
		}
		var err error
		if dst, err = snappyBlock(dst, p[:n], bound-(len(dst)-start)); err != nil {
			return dst[:start], err
		}
		p = p[n:]
	}
	return dst, nil
}

// snappyBlock appends one decoded snappy block. A block states its decoded length up front;
// it is checked against the bound before anything is allocated, and the strict decoder then
// fails unless the block decodes to exactly that length.
func snappyBlock(dst, block []byte, bound int) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return dst, fmt.Errorf("%w: snappy: %v", ErrCorrupt, err)
	}
	if n > bound {
		return dst, fmt.Errorf("%w: snappy block decodes to %d bytes, more than the %d left", ErrTooLarge, n, bound)
	}
	at := len(dst)
	dst = grow(dst, n, at+bound)
	// DecodeStrict rejects the s2 extensions that snappy.Decode accepts but no snappy decoder
	// in a Kafka client would.
	window := dst[at : at+n]
	out, err := snappy.DecodeStrict(window, block)
	if err != nil {
		return dst[:at], fmt.Errorf("%w: snappy: %v", ErrCorrupt, err)
	}
	if len(out) != n || (n > 0 && &out[0] != &window[0]) {
		return dst[:at], fmt.Errorf("%w: snappy: block decoded to %d bytes, declared %d", ErrCorrupt, len(out), n)
	}
	return dst[:at+n], nil
}
