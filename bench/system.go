package main

import (
	"fmt"
	"slices"
	"strings"
)

// Log is one open log of a system under test, as every workload drives it. Methods other than
// Append need not be safe for concurrent use; Append must be when the log was opened with
// Options.Durable (workload c calls it from many goroutines).
type Log interface {
	// Append appends recs, in order, as one batch where the system has batches. Under
	// Options.Durable it returns only once the records are on stable storage.
	Append(recs []Rec) error
	// Sync flushes whatever the system buffers and makes the log durable.
	Sync() error
	// Count returns the number of records in the log.
	Count() (int64, error)
	// Scan calls fn with every record from the first, in order. Key and value are valid only
	// during the call.
	Scan(fn func(i int64, key, value []byte) error) error
	// Get returns record i (0-based) as views valid until the next call.
	Get(i int64) (key, value []byte, err error)
	// Close releases the log; for a persistent system the records stay in its folder.
	Close() error
}

// Topic is a partitioned log as workload g drives it: records are spread by the xxhash64 of
// their key modulo the partition count, as this library's default partitioner does.
type Topic interface {
	// Append appends a batch of records, each to its partition.
	Append(recs []Rec) error
	// Sync makes every partition durable.
	Sync() error
	// Count returns the number of records in all partitions.
	Count() (int64, error)
	// Close closes every partition.
	Close() error
}

// Options say how a log is opened.
type Options struct {
	// Durable asks for the system's sync-every-append mode (workload c); otherwise the
	// system's no-fsync mode.
	Durable bool
	// SizeHint is the expected number of payload bytes, for in-memory baselines to size their
	// buffer once.
	SizeHint int64
	// ReadMostly says the log is opened to be read (workloads d and e): a system may size its
	// read caches for that, as a user would.
	ReadMostly bool
}

// Kind says what a system is in the tables.
type Kind int

const (
	// KindOurs is this library.
	KindOurs Kind = iota
	// KindPeer is another Go log a user could pick instead.
	KindPeer
	// KindBaseline is a plain-Go lower or upper bound, not a log.
	KindBaseline
)

// System is one contender: how to open it and which workloads it takes part in.
type System struct {
	// Name is the name used by -systems and in the tables.
	Name string
	// Kind says whether this is ours, a peer or a baseline.
	Kind Kind
	// Version is the module and version measured, or a short description.
	Version string
	// Config says how the system is configured, for the report.
	Config string
	// Workloads lists the lettered workloads it takes part in (a-g).
	Workloads string
	// Named lists the named workloads it takes part in (reader, producers, scale).
	Named []string
	// Persistent is false for systems that keep records in memory only: their read workloads
	// fill them in the measuring process first.
	Persistent bool
	// Open opens (or creates) the log in dir.
	Open func(dir string, o Options) (Log, error)
	// OpenTopic opens a natively partitioned topic in dir; nil means the harness routes
	// records to one Open'd log per partition.
	OpenTopic func(dir string, partitions int) (Topic, error)
	// Label renames the system in one workload's table (the file baseline is a pread table in
	// e); nil keeps Name.
	Label func(workload string) string
}

// Takes reports whether s takes part in workload w: a letter of Workloads, or one of Named.
func (s *System) Takes(w string) bool {
	if len(w) == 1 {
		return strings.Contains(s.Workloads, w)
	}
	return slices.Contains(s.Named, w)
}

// WorkloadList is the workloads s takes part in, for the systems table: the letters, then the
// names.
func (s *System) WorkloadList() string {
	return strings.Join(slices.DeleteFunc(append([]string{s.Workloads}, s.Named...), func(w string) bool { return w == "" }), ", ")
}

// DisplayName is the system's name in workload w's table.
func (s *System) DisplayName(w string) string {
	if s.Label != nil {
		if l := s.Label(w); l != "" {
			return l
		}
	}
	return s.Name
}

// Skipped is a system this benchmark does not measure, with the reason written into the report.
type Skipped struct {
	Name   string
	Reason string
}

// allSystems returns every system in table order: ours first, then the peers, then the
// baselines.
func allSystems() []*System {
	return []*System{
		commitlogSystem(),
		commitlogRecordsSystem(),
		commitlogMemorySystem(),
		commitlogScanSystem(),
		commitlogReaderSystem(),
		commitlogReaderScanSystem(),
		commitlogTopicSystem(),
		tidwallSystem(),
		raftWALSystem(),
		roseDBSystem(),
		natsSystem(),
		fileSystem(),
		memmoveSystem(),
		fdatasyncSystem(),
		groupSyncSystem(),
		groupSyncPartitionedSystem(),
	}
}

// skippedSystems returns the systems asked for that could not be measured, and why.
func skippedSystems() []Skipped {
	return []Skipped{{
		Name: "github.com/klev-dev/klevdb (with and without its time index)",
		Reason: "the Go module proxy reachable from the benchmark machine refuses the module " +
			"(403 \"not available\" for its version list and for exact versions such as v0.13.0), " +
			"so it cannot be built here; re-add an adapter where the module resolves",
	}}
}

// selectSystems returns the systems named in list (comma-separated; "all" or empty for all).
func selectSystems(list string) ([]*System, error) {
	all := allSystems()
	if list == "" || list == "all" {
		return all, nil
	}
	var out []*System
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(all, func(s *System) bool { return s.Name == name })
		if i < 0 {
			var names []string
			for _, s := range all {
				names = append(names, s.Name)
			}
			return nil, fmt.Errorf("unknown system %q (have %s)", name, strings.Join(names, ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}

// systemByName returns the system called name.
func systemByName(name string) (*System, error) {
	s, err := selectSystems(name)
	if err != nil {
		return nil, err
	}
	return s[0], nil
}
