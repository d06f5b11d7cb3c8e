package main

import (
	"github.com/commitlog-go/commitlog"
)

// This library's file store read through its convenience API, ReadRecords, which copies every
// record it returns into a *Record of the caller's: the same log as "commitlog", another read
// path, so it takes part in the read workloads only (its log is built as commitlog's).

func commitlogRecordsSystem() *System {
	return &System{
		Name:       "commitlog-ReadRecords",
		Kind:       KindOurs,
		Version:    "this repository (Log, file store)",
		Config:     "as commitlog; reads: ReadRecords(offset, 1 MiB) and ReadRecords(offset, 1)",
		Workloads:  "de",
		Named:      []string{"reader"},
		Persistent: true,
		Open: func(dir string, o Options) (Log, error) {
			l, err := commitlog.OpenLog(dir, logConfig(o))
			if err != nil {
				return nil, err
			}
			return &ourRecordsLog{ourLog: ourLog{app: l, read: l, sync: l.Sync, count: l.LogEndOffset, close: l.Close}}, nil
		},
	}
}

// ourRecordsLog reads through ReadRecords.
type ourRecordsLog struct {
	ourLog
}

func (l *ourRecordsLog) Scan(fn func(i int64, key, value []byte) error) error {
	end := l.count()
	for off := int64(0); off < end; {
		recs, err := l.read.ReadRecords(off, readChunk)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := fn(r.Offset, r.Key, r.Value); err != nil {
				return err
			}
		}
		off = recs[len(recs)-1].Offset + 1
	}
	return nil
}

func (l *ourRecordsLog) Get(i int64) ([]byte, []byte, error) {
	recs, err := l.read.ReadRecords(i, 1)
	if err != nil {
		return nil, nil, err
	}
	return recs[0].Key, recs[0].Value, nil
}
