package commitlog

import "sync"

// parallelLogs is how many partition logs a store opens, recovers or closes at once: Kafka's
// LogManager loads and shuts down the logs of a log directory on num.recovery.threads.per.data.dir
// threads. Opening and closing a log waits mostly on the file system (creating files, fsyncs of
// files and folders), not on a CPU, so more run at once than Kafka's default of one thread: the
// file system's journal then commits the fsyncs of many logs together.
const parallelLogs = 16

// logWorkers bounds the logs of one store opened or closed at once, across every caller (the
// partitions of all the topics an Open loads, of a CreateTopic, of a Close). The zero value runs
// everything in the caller's goroutine, one at a time.
type logWorkers struct {
	slots chan struct{}
}

// withParallelLogs sets how many logs a store opens and closes at once; 1 makes the order of the
// store's file operations deterministic, for tests that replay them.
func withParallelLogs(n int) Option { return func(o *options) { o.parallelLogs = n } }

// newLogWorkers returns workers running at most n jobs at once.
func newLogWorkers(n int) logWorkers { return logWorkers{slots: make(chan struct{}, n)} }

// all runs fn(i) for every i in [0, n) at once, each in its own goroutine, without taking a
// slot (each fn takes the slots of its own logs, with each), and returns when all have returned;
// errs[i] is fn(i)'s error. With workers of one slot it runs them in order, in the caller's
// goroutine.
func (w logWorkers) all(n int, fn func(i int) error) (errs []error) {
	errs = make([]error, n)
	if w.slots == nil || cap(w.slots) <= 1 {
		for i := range n {
			errs[i] = fn(i)
		}
		return errs
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	return errs
}

// each runs fn(i) for every i in [0, n), at most as many at once as the workers allow (waiting
// for a free slot), and returns when all have returned; errs[i] is fn(i)'s error.
func (w logWorkers) each(n int, fn func(i int) error) (errs []error) {
	errs = make([]error, n)
	if w.slots == nil || n == 1 {
		for i := range n {
			errs[i] = fn(i)
		}
		return errs
	}
	var wg sync.WaitGroup
	for i := range n {
		w.slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-w.slots }()
			errs[i] = fn(i)
		})
	}
	wg.Wait()
	return errs
}
