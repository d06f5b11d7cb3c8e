package cleaner

import "math"

// SegmentSpan is what GroupBySize knows of a segment.
type SegmentSpan struct {
	BaseOffset       int64
	Size             int64 // bytes of the .log file
	OffsetIndexBytes int   // bytes of the offset index's entries
	TimeIndexBytes   int   // bytes of the time index's entries
	LastOffset       int64 // the last offset the segment may hold (the next segment's base - 1)
}

// GroupBySize groups consecutive segments into the runs each cleaned into one segment, as Kafka's
// Cleaner.groupSegmentsBySize: a group grows while its total size stays at most maxSize
// (segment.bytes), each of its index sizes at most maxIndexBytes (segment.index.bytes), and its
// offsets within 2^31-1 of its base offset (an index holds 32-bit relative offsets). A segment
// alone is a group whatever its size.
func GroupBySize(segs []SegmentSpan, maxSize int64, maxIndexBytes int) [][]SegmentSpan {
	var groups [][]SegmentSpan
	for len(segs) > 0 {
		g := segs[:1]
		size, ox, tx := segs[0].Size, segs[0].OffsetIndexBytes, segs[0].TimeIndexBytes
		for len(g) < len(segs) {
			n := segs[len(g)]
			if size+n.Size > maxSize || ox+n.OffsetIndexBytes > maxIndexBytes || tx+n.TimeIndexBytes > maxIndexBytes ||
				(n.Size > 0 && n.LastOffset-g[0].BaseOffset > math.MaxInt32) {
				break
			}
			size, ox, tx = size+n.Size, ox+n.OffsetIndexBytes, tx+n.TimeIndexBytes
			g = segs[:len(g)+1]
		}
		groups = append(groups, g)
		segs = segs[len(g):]
	}
	return groups
}
