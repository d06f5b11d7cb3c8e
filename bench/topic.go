package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// openTopic opens s's topic of partitions partitions in dir: its own when it has one, else one
// log per partition (in dir/p0, dir/p1, ...) with records routed as this library routes them.
func openTopic(s *System, dir string, partitions int, o Options) (Topic, error) {
	if s.OpenTopic != nil {
		return s.OpenTopic(dir, partitions)
	}
	t := &routedTopic{}
	for p := range partitions {
		pdir := filepath.Join(dir, fmt.Sprintf("p%d", p))
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return nil, errors.Join(err, t.Close())
		}
		po := o
		po.SizeHint = o.SizeHint / int64(partitions) * 2 // partitions are uneven
		l, err := s.Open(pdir, po)
		if err != nil {
			return nil, errors.Join(err, t.Close())
		}
		t.parts = append(t.parts, l)
	}
	return t, nil
}

// routedTopic is one log per partition. Append splits a batch by partition and appends the
// parts in parallel, one goroutine each, as this library's Topic.Append does.
type routedTopic struct {
	parts []Log
	route [][]Rec
	errs  []error
}

func (t *routedTopic) Append(recs []Rec) error {
	t.route = routeRecs(t.route, recs, len(t.parts))
	if cap(t.errs) < len(t.parts) {
		t.errs = make([]error, len(t.parts))
	}
	var wg sync.WaitGroup
	for p, rs := range t.route {
		t.errs[p] = nil
		if len(rs) == 0 {
			continue
		}
		wg.Go(func() { t.errs[p] = t.parts[p].Append(rs) })
	}
	wg.Wait()
	return errors.Join(t.errs[:len(t.parts)]...)
}

func (t *routedTopic) Sync() error {
	var errs []error
	for _, l := range t.parts {
		errs = append(errs, l.Sync())
	}
	return errors.Join(errs...)
}

func (t *routedTopic) Count() (int64, error) {
	var n int64
	for _, l := range t.parts {
		c, err := l.Count()
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

func (t *routedTopic) Close() error {
	var errs []error
	for _, l := range t.parts {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// routeRecs splits recs by partition, xxhash64(key) mod n as this library's default
// partitioner, into route (reused).
func routeRecs(route [][]Rec, recs []Rec, n int) [][]Rec {
	if len(route) != n {
		route = make([][]Rec, n)
	}
	for p := range route {
		route[p] = route[p][:0]
	}
	for _, r := range recs {
		p := xxhash.Sum64(r.Key) % uint64(n)
		route[p] = append(route[p], r)
	}
	return route
}
