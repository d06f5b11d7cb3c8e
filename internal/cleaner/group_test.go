package cleaner

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGroupBySize(t *testing.T) {
	// seg returns a segment at base of size bytes whose offsets run to last.
	seg := func(base, size, last int64) SegmentSpan {
		return SegmentSpan{BaseOffset: base, Size: size, LastOffset: last}
	}
	idx := func(s SegmentSpan, ox, tx int) SegmentSpan {
		s.OffsetIndexBytes, s.TimeIndexBytes = ox, tx
		return s
	}
	// bases returns the base offsets of each group.
	bases := func(groups [][]SegmentSpan) [][]int64 {
		var out [][]int64
		for _, g := range groups {
			var bs []int64
			for _, s := range g {
				bs = append(bs, s.BaseOffset)
			}
			out = append(out, bs)
		}
		return out
	}
	cases := []struct {
		name     string
		segs     []SegmentSpan
		maxSize  int64
		maxIndex int
		want     [][]int64
	}{
		{name: "empty", segs: nil, maxSize: 100, maxIndex: 100, want: nil},
		{name: "one", segs: []SegmentSpan{seg(0, 10, 9)}, maxSize: 100, maxIndex: 100, want: [][]int64{{0}}},
		{
			name:    "size limit, equal allowed",
			segs:    []SegmentSpan{seg(0, 40, 9), seg(10, 60, 19), seg(20, 1, 29), seg(30, 50, 39), seg(40, 50, 49)},
			maxSize: 100, maxIndex: 100,
			want: [][]int64{{0, 10}, {20, 30}, {40}},
		},
		{
			name:    "a single oversized segment alone",
			segs:    []SegmentSpan{seg(0, 10, 9), seg(10, 500, 19), seg(20, 10, 29), seg(30, 10, 39)},
			maxSize: 100, maxIndex: 100,
			want: [][]int64{{0}, {10}, {20, 30}},
		},
		{
			name:    "oversized first segment",
			segs:    []SegmentSpan{seg(0, 500, 9), seg(10, 1, 19)},
			maxSize: 100, maxIndex: 100,
			want: [][]int64{{0}, {10}},
		},
		{
			name: "offset index limit",
			segs: []SegmentSpan{idx(seg(0, 1, 9), 60, 0), idx(seg(10, 1, 19), 40, 0), idx(seg(20, 1, 29), 1, 0),
				idx(seg(30, 1, 39), 99, 0)},
			maxSize: 1000, maxIndex: 100,
			want: [][]int64{{0, 10}, {20, 30}},
		},
		{
			name: "time index limit",
			segs: []SegmentSpan{idx(seg(0, 1, 9), 0, 60), idx(seg(10, 1, 19), 0, 41), idx(seg(20, 1, 29), 0, 41),
				idx(seg(30, 1, 39), 0, 41)},
			maxSize: 1000, maxIndex: 100,
			want: [][]int64{{0}, {10, 20}, {30}},
		},
		{
			name: "offset range within 2^31-1 of the group's base",
			segs: []SegmentSpan{seg(100, 1, 1000), seg(1001, 1, 100+math.MaxInt32), seg(101+math.MaxInt32, 1, 101+math.MaxInt32),
				seg(102+math.MaxInt32, 1, 200+math.MaxInt32)},
			maxSize: 1000, maxIndex: 1000,
			want: [][]int64{{100, 1001}, {101 + math.MaxInt32, 102 + math.MaxInt32}},
		},
		{
			name:    "an empty segment skips the offset range check",
			segs:    []SegmentSpan{seg(0, 1, 10), seg(11, 0, 10+2*math.MaxInt32), seg(11+2*math.MaxInt32, 1, 20+2*math.MaxInt32)},
			maxSize: 1000, maxIndex: 1000,
			want: [][]int64{{0, 11}, {11 + 2*math.MaxInt32}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			groups := GroupBySize(c.segs, c.maxSize, c.maxIndex)
			require.Equal(t, c.want, bases(groups))
			// The groups are the segments in order, each once.
			var all []SegmentSpan
			for _, g := range groups {
				require.NotEmpty(t, g)
				all = append(all, g...)
			}
			require.Equal(t, len(c.segs), len(all))
			for i := range all {
				require.Equal(t, c.segs[i], all[i])
			}
		})
	}
}
