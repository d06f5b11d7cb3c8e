package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// A child process of the bench binary measures one system in one case, so that every figure
// comes from a fresh heap and its own peak RSS; it prints its Result as one JSON line.

// runCase measures system s in case c with the folder dir (created and removed by the parent;
// for d and e it holds the log workload a left there).
func runCase(s *System, c string, dir string, p Params) (Result, error) {
	switch c {
	case "a":
		return runAppend(s, dir, p.SmallN, 100, p.Batch)
	case "b":
		return runAppend(s, dir, p.LargeN, 1024, p.Batch)
	case "c1":
		return runDurable(s, dir, 1, p.Duration)
	case "c16":
		return runDurable(s, dir, 16, p.Duration)
	case "d":
		return runScan(s, dir, p)
	case "e":
		return runRandom(s, dir, p)
	case "fclean":
		return runReopenClean(s, dir, p)
	case "fkill":
		return runReopenKill(s, dir, p)
	case "g":
		return runFlights(s, dir, p)
	case "reader":
		return runReader(s, dir, p)
	case "scale":
		return runScale(dir, p)
	case "scalekill":
		return runScaleKill(dir, p)
	}
	if g, ok := producerGoroutines(c); ok {
		return runDurable(s, dir, g, p.Duration)
	}
	return Result{}, fmt.Errorf("unknown case %q", c)
}

// fill appends records first..first+n-1 of gen to l in batches, untimed.
func fill(l Log, gen *Gen, first int64, n, batch int) error {
	recs := make([]Rec, batch)
	keys := make([]byte, batch*keySize)
	for i := 0; i < n; i += batch {
		k := min(batch, n-i)
		gen.Batch(recs[:k], keys, first+int64(i))
		if err := l.Append(recs[:k]); err != nil {
			return fmt.Errorf("appending record %d: %w", first+int64(i), err)
		}
	}
	return nil
}

// runAppend appends n records of valueSize-byte values in batches (workloads a and b). The log
// stays in dir (workloads d and e read it).
func runAppend(s *System, dir string, n, valueSize, batch int) (Result, error) {
	gen := NewGen(valueSize)
	l, err := s.Open(dir, Options{SizeHint: int64(n) * int64(keySize+valueSize)})
	if err != nil {
		return Result{}, err
	}
	recs := make([]Rec, batch)
	keys := make([]byte, batch*keySize)
	r := Result{Records: int64(n), Bytes: int64(n) * int64(keySize+valueSize)}
	m := startMeter()
	for i := 0; i < n; i += batch {
		k := min(batch, n-i)
		gen.Batch(recs[:k], keys, int64(i))
		if err := l.Append(recs[:k]); err != nil {
			return r, errors.Join(fmt.Errorf("appending record %d: %w", i, err), l.Close())
		}
	}
	m.stop(&r)
	return r, closeChecked(l, int64(n))
}

// closeChecked syncs and closes l after checking that it holds want records.
func closeChecked(l Log, want int64) error {
	got, err := l.Count()
	if err == nil && got != want {
		err = fmt.Errorf("log holds %d records, want %d", got, want)
	}
	return errors.Join(err, l.Sync(), l.Close())
}

// runDurable appends single records from g goroutines for d, each append durable (workload c).
func runDurable(s *System, dir string, g int, d time.Duration) (Result, error) {
	gen := NewGen(100)
	l, err := s.Open(dir, Options{Durable: true})
	if err != nil {
		return Result{}, err
	}
	var next atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make([]error, g)
	m := startMeter()
	for w := range g {
		wg.Go(func() {
			recs := make([]Rec, 1)
			key := make([]byte, keySize)
			for !stop.Load() {
				i := next.Add(1) - 1
				recs[0] = Rec{Key: PutKey(key, i), Value: gen.Value(i)}
				if err := l.Append(recs); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	var r Result
	m.stop(&r)
	if err := errors.Join(errs...); err != nil {
		return r, errors.Join(err, l.Close())
	}
	// Every append that started finished: next counts them all.
	r.Records = next.Load()
	r.Bytes = r.Records * (keySize + 100)
	return r, closeChecked(l, r.Records)
}

// openFilled opens the log of workload a in dir, or for a system that keeps nothing on disk
// fills a new one in this process; neither is timed.
func openFilled(s *System, dir string, p Params, gen *Gen) (Log, error) {
	l, err := s.Open(dir, Options{SizeHint: int64(p.SmallN) * (keySize + 100), ReadMostly: true})
	if err != nil || s.Persistent {
		return l, err
	}
	if err := fill(l, gen, 0, p.SmallN, p.Batch); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	return l, nil
}

// runScan reads a's log from the first record to the last (workload d).
func runScan(s *System, dir string, p Params) (Result, error) {
	gen := NewGen(100)
	l, err := openFilled(s, dir, p, gen)
	if err != nil {
		return Result{}, err
	}
	return timedScan(l, gen, int64(p.SmallN))
}

// timedScan reads l from its first record to its last, checking each, times it, and closes l.
func timedScan(l Log, gen *Gen, want int64) (Result, error) {
	var r Result
	var next int64
	m := startMeter()
	err := l.Scan(func(i int64, k, v []byte) error {
		if i != next {
			return fmt.Errorf("read record %d after %d", i, next-1)
		}
		next++
		r.Bytes += int64(len(k) + len(v))
		return gen.Check(i, k, v)
	})
	m.stop(&r)
	r.Records = next
	if err == nil && next != want {
		err = fmt.Errorf("read %d records, want %d", next, want)
	}
	return r, errors.Join(err, l.Close())
}

// runRandom reads p.RandomReads records at seeded random offsets of a's log (workload e).
func runRandom(s *System, dir string, p Params) (Result, error) {
	gen := NewGen(100)
	l, err := openFilled(s, dir, p, gen)
	if err != nil {
		return Result{}, err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	offsets := make([]int64, p.RandomReads)
	for i := range offsets {
		offsets[i] = rng.Int64N(int64(p.SmallN))
	}
	r := Result{Records: int64(len(offsets))}
	m := startMeter()
	for _, off := range offsets {
		k, v, err := l.Get(off)
		if err == nil {
			err = gen.Check(off, k, v)
		}
		if err != nil {
			m.stop(&r)
			return r, errors.Join(fmt.Errorf("reading record %d: %w", off, err), l.Close())
		}
		r.Bytes += int64(len(k) + len(v))
	}
	m.stop(&r)
	return r, l.Close()
}
