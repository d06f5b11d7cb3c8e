package main

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The memory ceiling: the same length-prefixed frames as the file baseline, copied (memmove)
// into one buffer sized once from the expected total, read back by walking it or from a kept
// position table. No file, no system call: no log can append or read faster than this.

func memmoveSystem() *System {
	return &System{
		Name:      "memmove",
		Kind:      KindBaseline,
		Version:   "Go copy into one preallocated []byte",
		Config:    "length-prefixed frames appended to one buffer; position table for e",
		Workloads: "abdeg",
		Open: func(dir string, o Options) (Log, error) {
			if o.Durable {
				return nil, errors.New("the memmove baseline has no durable mode")
			}
			return &memLog{buf: make([]byte, 0, o.SizeHint+o.SizeHint/8), pos: []int{0}}, nil
		},
	}
}

// memLog is the buffer and its position table.
type memLog struct {
	buf []byte
	pos []int // start of every record, then the end of the last
}

func (m *memLog) Append(recs []Rec) error {
	for i := range recs {
		m.buf = binary.BigEndian.AppendUint32(m.buf, uint32(FrameSize(&recs[i])))
		m.buf = AppendFrame(m.buf, &recs[i])
		m.pos = append(m.pos, len(m.buf))
	}
	return nil
}

func (m *memLog) Sync() error { return nil }

func (m *memLog) Count() (int64, error) { return int64(len(m.pos) - 1), nil }

func (m *memLog) Scan(fn func(i int64, key, value []byte) error) error {
	for i, p := int64(0), 0; p < len(m.buf); i++ {
		n := int(binary.BigEndian.Uint32(m.buf[p:]))
		k, v, err := SplitFrame(m.buf[p+4 : p+4+n])
		if err != nil {
			return err
		}
		if err := fn(i, k, v); err != nil {
			return err
		}
		p += 4 + n
	}
	return nil
}

func (m *memLog) Get(i int64) ([]byte, []byte, error) {
	if i < 0 || i >= int64(len(m.pos)-1) {
		return nil, nil, fmt.Errorf("record %d not in a buffer of %d", i, len(m.pos)-1)
	}
	return SplitFrame(m.buf[m.pos[i]+4 : m.pos[i+1]])
}

func (m *memLog) Close() error { return nil }
