package main

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"testing"
)

// The adapters are honest: what each one appends, it reads back exactly, in order and by
// number, after a reopen where the system keeps its records on disk.

const roundTripRecords = 1000

func TestAdaptersRoundTrip(t *testing.T) {
	for _, s := range allSystems() {
		if !s.Takes("a") && !s.Takes("d") && !s.Takes("reader") {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			gen := NewGen(100)
			dir := t.TempDir()
			l, err := s.Open(dir, Options{SizeHint: roundTripRecords * (keySize + 100)})
			if err != nil {
				t.Fatal(err)
			}
			// Batches of 100, then single records: both append paths.
			if err := fill(l, gen, 0, roundTripRecords-10, 100); err != nil {
				t.Fatal(err)
			}
			if err := fill(l, gen, roundTripRecords-10, 10, 1); err != nil {
				t.Fatal(err)
			}
			if s.Persistent {
				if err := l.Sync(); err != nil {
					t.Fatal(err)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if l, err = s.Open(dir, Options{}); err != nil {
					t.Fatal(err)
				}
			}
			defer func() {
				if err := l.Close(); err != nil {
					t.Error(err)
				}
			}()
			checkLog(t, l, gen, roundTripRecords)
		})
	}
}

// checkLog checks that l holds exactly records 0..n-1 of gen.
func checkLog(t *testing.T, l Log, gen *Gen, n int64) {
	t.Helper()
	if got, err := l.Count(); err != nil || got != n {
		t.Fatalf("Count() = %d, %v; want %d", got, err, n)
	}
	next := int64(0)
	if err := l.Scan(func(i int64, k, v []byte) error {
		if i != next {
			return fmt.Errorf("record %d after %d", i, next-1)
		}
		next++
		return gen.Check(i, k, v)
	}); err != nil {
		t.Fatal(err)
	}
	if next != n {
		t.Fatalf("Scan read %d records, want %d", next, n)
	}
	for _, i := range []int64{0, 1, 99, 100, 500, n - 11, n - 10, n - 1} {
		k, v, err := l.Get(i)
		if err != nil {
			t.Fatalf("Get(%d): %v", i, err)
		}
		if err := gen.Check(i, k, v); err != nil {
			t.Fatalf("Get(%d): %v", i, err)
		}
	}
}

// TestAdaptersDurable appends single records in the durable mode of workloads c and producers
// from several goroutines and counts them.
func TestAdaptersDurable(t *testing.T) {
	for _, s := range allSystems() {
		if !s.Takes("c") && !s.Takes("producers") {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			res, err := runDurable(s, t.TempDir(), 4, 50e6)
			if err != nil {
				t.Fatal(err)
			}
			if res.Records == 0 {
				t.Fatal("no durable append in 50 ms")
			}
		})
	}
}

// TestTopics appends a few records with keys of uneven sizes to every system's topic and
// checks the count.
func TestTopics(t *testing.T) {
	recs := make([]Rec, 500)
	for i := range recs {
		recs[i] = Rec{Key: fmt.Appendf(nil, "K%d", i%37), Value: fmt.Appendf(nil, "value %d", i), Time: 978307200000 + int64(i)}
	}
	for _, s := range allSystems() {
		if !s.Takes("g") {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			tp, err := openTopic(s, t.TempDir(), 8, Options{SizeHint: 1 << 16})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < len(recs); i += 128 {
				if err := tp.Append(recs[i:min(i+128, len(recs))]); err != nil {
					t.Fatal(err)
				}
			}
			if n, err := tp.Count(); err != nil || n != int64(len(recs)) {
				t.Errorf("Count() = %d, %v; want %d", n, err, len(recs))
			}
			if err := tp.Sync(); err != nil {
				t.Error(err)
			}
			if err := tp.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestFlightLine parses one line of the flights CSV.
func TestFlightLine(t *testing.T) {
	r, err := parseFlight([]byte("978307200000,-3,413,ORD,MSP"))
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Key) != "ORD" || r.Time != 978307200000 || string(r.Value) != "978307200000,-3,413,ORD,MSP" {
		t.Fatalf("parsed %q %q %d", r.Key, r.Value, r.Time)
	}
	if _, err := parseFlight([]byte("1,2,3")); err == nil {
		t.Fatal("a line of 3 fields parsed")
	}
}

// The groupsync baselines hold, after their durable appends from many goroutines, exactly the
// records they acknowledged, each once, as length-prefixed frames; groupsync-4 holds each in the
// file its key hashes to.
func TestGroupSyncFile(t *testing.T) {
	for _, tc := range []struct {
		system string
		files  []string
	}{
		{"groupsync", []string{"groupsync"}},
		{"groupsync-4", []string{"groupsync-0", "groupsync-1", "groupsync-2", "groupsync-3"}},
	} {
		t.Run(tc.system, func(t *testing.T) {
			s, err := systemByName(tc.system)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			res, err := runDurable(s, dir, 8, 50e6)
			if err != nil {
				t.Fatal(err)
			}
			gen := NewGen(100)
			seen := map[int64]bool{}
			for fi, name := range tc.files {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				for len(b) > 0 {
					if len(b) < 4 || len(b)-4 < int(binary.BigEndian.Uint32(b)) {
						t.Fatalf("%s: torn frame after %d records", name, len(seen))
					}
					n := int(binary.BigEndian.Uint32(b))
					k, v, err := SplitFrame(b[4 : 4+n])
					if err != nil {
						t.Fatal(err)
					}
					i := int64(binary.BigEndian.Uint64(k))
					if err := gen.Check(i, k, v); err != nil {
						t.Fatal(err)
					}
					if len(tc.files) > 1 {
						h := fnv.New32a()
						h.Write(k)
						if got := int(h.Sum32() % uint32(len(tc.files))); got != fi {
							t.Fatalf("record %d in %s, its key hashes to file %d", i, name, got)
						}
					}
					if seen[i] {
						t.Fatalf("record %d twice", i)
					}
					seen[i] = true
					b = b[4+n:]
				}
			}
			if int64(len(seen)) != res.Records || res.Records == 0 {
				t.Fatalf("files hold %d records, %d acknowledged", len(seen), res.Records)
			}
			for i := range res.Records {
				if !seen[i] {
					t.Fatalf("record %d acknowledged, not in the files", i)
				}
			}
		})
	}
}
