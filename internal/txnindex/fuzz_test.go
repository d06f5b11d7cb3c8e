package txnindex

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzTxnIndexDecode decodes any bytes as a .txnindex file (seeds in
// testdata/fuzz/FuzzTxnIndexDecode). Decode must not panic; it fails, with ErrCorrupt, exactly when
// the length is not whole entries or an entry's version is not 0; what it decodes re-encodes to
// the same bytes.
func FuzzTxnIndexDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			if entries != nil {
				t.Fatalf("entries %v with error %v", entries, err)
			}
			valid := len(data)%EntrySize == 0
			for pos := 0; valid && pos < len(data); pos += EntrySize {
				valid = data[pos] == 0 && data[pos+1] == 0
			}
			if valid {
				t.Fatalf("%d valid bytes refused: %v", len(data), err)
			}
			return
		}
		if len(entries) != len(data)/EntrySize {
			t.Fatalf("%d entries from %d bytes", len(entries), len(data))
		}
		var out []byte
		for _, a := range entries {
			out = a.AppendTo(out)
		}
		if !bytes.Equal(out, data) {
			t.Fatalf("re-encoded\n%x\nfrom\n%x", out, data)
		}
	})
}
