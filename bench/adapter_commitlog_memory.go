package main

import (
	"fmt"

	"github.com/commitlog-go/commitlog"
)

// This library's in-memory store (OpenInMemory): the same code over a memory file system, one
// topic of one partition for the log workloads. Nothing survives the process, so the read
// workloads fill it first in the measuring process, and it has no reopen (f) or durable (c)
// rows.

func commitlogMemorySystem() *System {
	return &System{
		Name:      "commitlog-memory",
		Kind:      KindOurs,
		Version:   "this repository (OpenInMemory)",
		Config:    "OpenInMemory, topic of 1 partition (g: 8), SyncNever; reads as commitlog",
		Workloads: "abdeg",
		Open: func(dir string, o Options) (Log, error) {
			s, err := commitlog.OpenInMemory()
			if err != nil {
				return nil, err
			}
			t, err := s.CreateTopic("bench", commitlog.TopicConfig{Partitions: 1, LogConfig: logConfig(o)})
			if err != nil {
				return nil, fmt.Errorf("%w (and closing: %v)", err, s.Close())
			}
			p, err := t.Partition(0)
			if err != nil {
				return nil, fmt.Errorf("%w (and closing: %v)", err, s.Close())
			}
			return &ourLog{app: p, read: p, sync: p.Sync, count: p.LogEndOffset, close: s.Close}, nil
		},
		OpenTopic: func(dir string, partitions int) (Topic, error) {
			s, err := commitlog.OpenInMemory()
			if err != nil {
				return nil, err
			}
			return openOurTopic(s, partitions)
		},
	}
}
