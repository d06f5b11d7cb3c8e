package faultfs

import "slices"

// spans is a sorted set of disjoint, non-adjacent half-open byte ranges [start, end).
type spans [][2]int64

// add returns s with [a, b) included.
func (s spans) add(a, b int64) spans {
	if a >= b {
		return s
	}
	out := make(spans, 0, len(s)+1)
	for _, r := range s {
		switch {
		case r[1] < a || r[0] > b:
			out = append(out, r)
		default: // overlapping or adjacent: merge into [a, b)
			a, b = min(a, r[0]), max(b, r[1])
		}
	}
	out = append(out, [2]int64{a, b})
	slices.SortFunc(out, func(x, y [2]int64) int { return int(min(max(x[0]-y[0], -1), 1)) })
	return out
}

// remove returns s without [a, b).
func (s spans) remove(a, b int64) spans {
	if a >= b || len(s) == 0 {
		return s
	}
	var out spans
	for _, r := range s {
		if r[1] <= a || r[0] >= b {
			out = append(out, r)
			continue
		}
		if r[0] < a {
			out = append(out, [2]int64{r[0], a})
		}
		if r[1] > b {
			out = append(out, [2]int64{b, r[1]})
		}
	}
	return out
}

// diffSpans returns the ranges of cur that differ from old, a byte past old's end counting as
// different.
func diffSpans(cur, old []byte) spans {
	var out spans
	start := int64(-1)
	for i := range cur {
		differs := i >= len(old) || cur[i] != old[i]
		switch {
		case differs && start < 0:
			start = int64(i)
		case !differs && start >= 0:
			out = append(out, [2]int64{start, int64(i)})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, [2]int64{start, int64(len(cur))})
	}
	return out
}
