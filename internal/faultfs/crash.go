package faultfs

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"slices"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// Mode says what a crash image keeps.
type Mode uint8

const (
	// ProcessKill keeps everything: every directory entry as it is now and every byte written,
	// synced or not (the page cache outlives a killed process), bytes a failed fsync dropped
	// included.
	ProcessKill Mode = iota
	// PowerLossKeep is a power loss after which every file happens to hold all its unsynced
	// bytes; directories hold only their durable entries.
	PowerLossKeep
	// PowerLossDrop is a power loss that keeps only what syncs covered: durable entries, durable
	// bytes.
	PowerLossDrop
	// PowerLossTorn is a power loss that keeps, of each file with unsynced bytes, the durable
	// bytes overwritten by a prefix of the unsynced ones: from the first byte that differs, a
	// random number of bytes of what a sync would have written: from none up to all but the last
	// byte that differs.
	// A file whose only unsynced change is a shrink keeps its old or its new size at random.
	PowerLossTorn
	// PowerLoss is the power loss of the explorer: durable entries, and each file, at random,
	// as PowerLossKeep, PowerLossDrop or PowerLossTorn would leave it.
	PowerLoss
)

var modeNames = [...]string{ProcessKill: "process-kill", PowerLossKeep: "power-loss-keep",
	PowerLossDrop: "power-loss-drop", PowerLossTorn: "power-loss-torn", PowerLoss: "power-loss"}

// String returns the mode's name ("power-loss-torn", ...).
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", m)
}

// fileState is a file's bytes at the crash: what it holds, what a sync would make durable, and
// what is durable.
type fileState struct {
	cur, pending, durable []byte
}

// snapshot is the state a crash image is made from. Directory entries need no copy: after a
// crash no operation changes them.
type snapshot struct {
	files map[*node]fileState
}

// snapshot reads every tracked file. Callers hold f.mu.
func (f *FS) snapshot() *snapshot {
	s := &snapshot{files: make(map[*node]fileState, len(f.files))}
	for _, n := range f.files {
		cur, err := n.current()
		if err != nil {
			panic("faultfs: reading a tracked file: " + err.Error())
		}
		s.files[n] = fileState{cur: cur, pending: n.pending(cur), durable: slices.Clone(n.durable)}
	}
	return s
}

// CrashImage returns a new memory file system holding what the crash leaves, under the same
// names: the state at the crash if a Rule crashed the process, otherwise the state now (a crash
// at this moment). It can be called several times, with different modes; each call with a
// power-loss mode that chooses at random draws from the FS's seeded source.
func (f *FS) CrashImage(mode Mode) (fsys.FS, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.frozen
	if s == nil {
		if f.released {
			return nil, errors.New("faultfs: CrashImage after Release, without a crash")
		}
		s = f.snapshot()
	}
	img := fsys.NewMemory()
	b := imageBuilder{img: img, s: s, mode: mode, rng: f.rng, done: map[*node][]byte{}}
	if err := b.dir(f.root, "/"); err != nil {
		return nil, err
	}
	return img, nil
}

type imageBuilder struct {
	img  fsys.FS
	s    *snapshot
	mode Mode
	rng  *rand.Rand
	done map[*node][]byte // contents chosen per file, for a file reachable under two names
}

// dir writes directory d's entries, in name order, under p.
func (b *imageBuilder) dir(d *node, p string) error {
	entries := d.synced
	if b.mode == ProcessKill {
		entries = d.children
	}
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		c, cp := entries[name], path.Join(p, name)
		if c.dir {
			if err := b.img.MkdirAll(cp, 0o755); err != nil {
				return err
			}
			if err := b.dir(c, cp); err != nil {
				return err
			}
			continue
		}
		data, ok := b.done[c]
		if !ok {
			data = b.contents(b.s.files[c])
			b.done[c] = data
		}
		if err := writeFile(b.img, cp, data); err != nil {
			return err
		}
	}
	return nil
}

// contents picks what a file holds after the crash.
func (b *imageBuilder) contents(st fileState) []byte {
	mode := b.mode
	if mode == PowerLoss {
		mode = []Mode{PowerLossKeep, PowerLossDrop, PowerLossTorn}[b.rng.IntN(3)]
	}
	switch mode {
	case ProcessKill:
		return st.cur
	case PowerLossKeep:
		return st.pending
	case PowerLossDrop:
		return st.durable
	}
	return tear(st.pending, st.durable, b.rng)
}

// tear returns durable overwritten by a prefix of pending's differing bytes (see PowerLossTorn).
func tear(pending, durable []byte, rng *rand.Rand) []byte {
	p := 0
	for p < len(pending) && p < len(durable) && pending[p] == durable[p] {
		p++
	}
	switch {
	case p == len(pending) && p == len(durable):
		return pending
	case p == len(pending): // only a shrink is unsynced
		if rng.IntN(2) == 0 {
			return pending
		}
		return durable
	}
	// The tear falls before the last byte that differs, so that the image is neither the old
	// bytes (unless k == p) nor the new ones.
	q := len(pending)
	if q <= len(durable) {
		for q > p && pending[q-1] == durable[q-1] {
			q--
		}
	}
	k := p + rng.IntN(q-p)
	out := append([]byte(nil), pending[:k]...)
	if len(durable) > k {
		out = append(out, durable[k:]...)
	}
	return out
}

func writeFile(fsy fsys.FS, name string, data []byte) error {
	f, err := fsy.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if len(data) > 0 {
		if _, err := f.WriteAt(data, 0); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
