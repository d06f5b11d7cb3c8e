package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/commitlog-go/commitlog"
)

// openStore opens the store in g.dir. Unless create is set, a missing directory is an error
// rather than a new, empty store. Commands that only read turn the background retention check
// and the background log cleaner off: reading never deletes records.
func (g *globals) openStore(create bool, opts ...commitlog.Option) (*commitlog.Store, error) {
	if !create {
		if err := g.checkStoreDir(); err != nil {
			return nil, err
		}
		opts = append(opts, commitlog.WithRetentionCheckInterval(-1), commitlog.WithCleanerThreads(0))
	}
	opts = append([]commitlog.Option{commitlog.WithLogger(g.logger())}, opts...)
	s, err := commitlog.Open(g.dir, opts...)
	if errors.Is(err, commitlog.ErrLocked) {
		return nil, storeBusyError{dir: g.dir}
	}
	return s, err
}

// storeBusyError is openStore's error when another process holds the store.
type storeBusyError struct{ dir string }

func (e storeBusyError) Error() string {
	return fmt.Sprintf("the store in %s is open in another process (one process at a time writes a store; commands that only read open it read-only)", e.dir)
}

// openStoreReadOnly opens the store in g.dir read-only (commitlog.OpenReadOnly): for commands
// that only read, it writes nothing to the store and is safe while another process writes it,
// following that process's appends, rolls, retention and truncations. A missing directory is an
// error.
func (g *globals) openStoreReadOnly(opts ...commitlog.Option) (*commitlog.ReadOnlyStore, error) {
	if err := g.checkStoreDir(); err != nil {
		return nil, err
	}
	return commitlog.OpenReadOnly(g.dir, append([]commitlog.Option{commitlog.WithLogger(g.logger())}, opts...)...)
}

// checkStoreDir returns an error unless g.dir is an existing directory: the commands that open a
// store they do not create.
func (g *globals) checkStoreDir() error {
	info, err := os.Stat(g.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no store at %s (set --dir)", g.dir)
	}
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s is not a directory", g.dir)
	}
	return nil
}

// topic returns the topic name of s, with a message naming the topics there are when it is not.
func topicOf(s *commitlog.Store, name string) (*commitlog.Topic, error) {
	if err := commitlog.CheckTopicName(name); err != nil {
		return nil, usageError("%s", oneLine(err.Error())) // no topic could have the name
	}
	t, err := s.Topic(name)
	if errors.Is(err, commitlog.ErrUnknownTopic) {
		have := s.Topics()
		list := "none"
		if len(have) > 0 {
			list = strings.Join(have, ", ")
		}
		return nil, fmt.Errorf("unknown topic %q in %s (topics: %s)", name, s.Dir(), list)
	}
	return t, err
}

// parseSize reads a byte count: a plain integer or one with a unit (KB, MB, GB: powers of 1000;
// KiB, MiB, GiB: powers of 1024; K, M, G as the binary ones).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1},
	}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || (n > 0 && n > (1<<62)/mult) {
		return 0, fmt.Errorf("%q is not a size (like 1048576, 64MiB or 1GB)", s)
	}
	return n * mult, nil
}

// parseRetention reads a retention time: a Go duration ("36h", "90m"), a number of days ("7d"),
// or "forever" / "-1" to keep records forever.
func parseRetention(s string) (time.Duration, error) {
	switch strings.TrimSpace(s) {
	case "forever", "-1", "infinite":
		return -1, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err == nil && n > 0 && n < 1e6 {
			return time.Duration(n * float64(24*time.Hour)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a retention time (like 7d, 36h, or forever)", s)
	}
	return d, nil
}

// parseLag reads a compaction time (min.compaction.lag.ms, max.compaction.lag.ms,
// delete.retention.ms): a Go duration ("36h", "90m", "0"), or a number of days ("7d"); with
// unlimited, also "unlimited", "forever" or "-1", returned as 0 (LogConfig's "no limit").
func parseLag(s string, unlimited bool) (time.Duration, error) {
	t := strings.TrimSpace(s)
	want := "like 0, 90m, 36h or 7d"
	if unlimited {
		want += ", or unlimited"
		switch t {
		case "unlimited", "forever", "infinite", "-1":
			return 0, nil
		}
	}
	if t == "0" {
		return 0, nil
	}
	if days, ok := strings.CutSuffix(t, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err == nil && n >= 0 && n < 1e6 {
			return time.Duration(n * float64(24*time.Hour)), nil
		}
	}
	d, err := time.ParseDuration(t)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration (%s)", s, want)
	}
	return d, nil
}

// formatBytes writes n bytes for people: 1.5 MB.
func formatBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
