package recordbatch

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVarint(t *testing.T) {
	for _, tc := range []struct {
		v    int32
		want string
	}{
		{0, "00"},
		{-1, "01"},
		{1, "02"},
		{-64, "7f"},
		{63, "7e"},
		{64, "8001"},
		{-65, "8101"},
		{168, "d002"},
		{math.MaxInt32, "feffffff0f"},
		{math.MinInt32, "ffffffff0f"},
	} {
		got := appendVarint(nil, tc.v)
		require.Equal(t, unhex(t, tc.want), got, "%d", tc.v)
		require.Equal(t, len(got), sizeVarint(tc.v), "%d", tc.v)
		v, n := readVarint(got)
		require.Equal(t, tc.v, v)
		require.Equal(t, len(got), n)
		// Every proper prefix is truncated, not a value.
		for i := range got {
			_, n := readVarint(got[:i])
			require.Zero(t, n, "%d: prefix of %d bytes", tc.v, i)
		}
	}
}

func TestVarlong(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		want string
	}{
		{0, "00"},
		{-1, "01"},
		{1, "02"},
		{-168, "cf02"},
		{math.MaxInt32 + 1, "8080808010"},
		{math.MaxInt64, "feffffffffffffffff01"},
		{math.MinInt64, "ffffffffffffffffff01"},
	} {
		got := appendVarlong(nil, tc.v)
		require.Equal(t, unhex(t, tc.want), got, "%d", tc.v)
		require.Equal(t, len(got), sizeVarlong(tc.v), "%d", tc.v)
		v, n := readVarlong(got)
		require.Equal(t, tc.v, v)
		require.Equal(t, len(got), n)
		for i := range got {
			_, n := readVarlong(got[:i])
			require.Zero(t, n, "%d: prefix of %d bytes", tc.v, i)
		}
	}
}

func TestVarintMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		n    int
		v    int32
	}{
		{"six bytes", "808080808000", -1, 0},
		{"fifth byte past 32 bits", "8080808010", -1, 0},
		{"fifth byte continues", "8080808080", -1, 0},
		{"non-minimal zero is accepted, like Kafka", "8000", 2, 0},
	} {
		v, n := readVarint(unhex(t, tc.in))
		require.Equal(t, tc.n, n, tc.name)
		require.Equal(t, tc.v, v, tc.name)
	}
	for _, tc := range []struct {
		name string
		in   string
		n    int
	}{
		{"eleven bytes", "8080808080808080808000", -1},
		{"tenth byte past 64 bits", "80808080808080808002", -1},
		{"ten bytes within 64 bits", "80808080808080808001", 10},
	} {
		_, n := readVarlong(unhex(t, tc.in))
		require.Equal(t, tc.n, n, tc.name)
	}
}
