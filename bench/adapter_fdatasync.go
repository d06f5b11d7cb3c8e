package main

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The disk's own rate: each append is one pwrite of the records' frames at the end of one
// file and one fdatasync, what a durable log cannot beat without sharing
// syncs between appends. Workload c only.

func fdatasyncSystem() *System {
	return &System{
		Name:       "fdatasync",
		Kind:       KindBaseline,
		Version:    "pwrite + fdatasync (golang.org/x/sys/unix)",
		Config:     "one pwrite and one fdatasync per append, no sharing between goroutines",
		Workloads:  "c",
		Named:      []string{"producers"},
		Persistent: true,
		Open: func(dir string, o Options) (Log, error) {
			f, err := os.OpenFile(filepath.Join(dir, "fdatasync"), os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				return nil, err
			}
			return &syncLog{f: f}, nil
		},
	}
}

// syncLog is the file and the next write position.
type syncLog struct {
	f     *os.File
	end   atomic.Int64
	count atomic.Int64
	pool  sync.Pool // *[]byte
}

func (s *syncLog) Append(recs []Rec) error {
	bp, _ := s.pool.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	*bp = (*bp)[:0]
	for i := range recs {
		*bp = AppendFrame(*bp, &recs[i])
	}
	defer s.pool.Put(bp)
	pos := s.end.Add(int64(len(*bp))) - int64(len(*bp))
	if _, err := s.f.WriteAt(*bp, pos); err != nil {
		return err
	}
	if err := unix.Fdatasync(int(s.f.Fd())); err != nil {
		return err
	}
	s.count.Add(int64(len(recs)))
	return nil
}

func (s *syncLog) Sync() error { return unix.Fdatasync(int(s.f.Fd())) }

func (s *syncLog) Count() (int64, error) { return s.count.Load(), nil }

func (s *syncLog) Scan(func(int64, []byte, []byte) error) error {
	return errors.New("the fdatasync baseline is write-only")
}

func (s *syncLog) Get(int64) ([]byte, []byte, error) {
	return nil, nil, errors.New("the fdatasync baseline is write-only")
}

func (s *syncLog) Close() error { return s.f.Close() }
