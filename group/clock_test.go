package group

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a Clock whose time moves only by Advance. AfterFunc registers a timer; Advance
// fires the timers that fall due, in deadline order (ties in the order they were registered),
// synchronously in the caller's goroutine, with Now at each timer's deadline while it runs. A
// timer that a callback registers is fired in the same Advance when it falls due by the target
// time. Callbacks run without the clock's lock held, so they may call the clock.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers []*fakeTimer // pending, unordered
}

type fakeTimer struct {
	c    *fakeClock
	when time.Time
	seq  uint64
	f    func()
	done bool // fired or stopped
}

// clockStart is a whole millisecond, so that times survive the millisecond timestamps of the
// storage records exactly.
var clockStart = time.UnixMilli(1_700_000_000_000)

func newFakeClock() *fakeClock { return &fakeClock{now: clockStart} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &fakeTimer{c: c, when: c.now.Add(d), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	t.c.timers = slices.DeleteFunc(t.c.timers, func(o *fakeTimer) bool { return o == t })
	return true
}

// Advance moves the clock d forward, firing every timer due by then.
func (c *fakeClock) Advance(d time.Duration) { c.advance(d, -1) }

// advance is Advance firing at most limit timers (no limit if negative); it reports whether it
// reached the target time.
func (c *fakeClock) advance(d time.Duration, limit int) bool {
	if d < 0 {
		panic("fakeClock: negative Advance")
	}
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	for ; ; limit-- {
		c.mu.Lock()
		var next *fakeTimer
		for _, t := range c.timers {
			if t.when.After(target) {
				continue
			}
			if next == nil || t.when.Before(next.when) || (t.when.Equal(next.when) && t.seq < next.seq) {
				next = t
			}
		}
		if next == nil {
			c.now = target
			c.mu.Unlock()
			return true
		}
		if limit == 0 {
			c.mu.Unlock()
			return false
		}
		next.done = true
		c.timers = slices.DeleteFunc(c.timers, func(o *fakeTimer) bool { return o == next })
		if next.when.After(c.now) {
			c.now = next.when
		}
		c.mu.Unlock()
		next.f()
	}
}

// Pending returns the number of timers not yet fired or stopped.
func (c *fakeClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// elapsed returns the time since clockStart.
func (c *fakeClock) elapsed() time.Duration { return c.Now().Sub(clockStart) }

func TestFakeClockFiresInDeadlineOrder(t *testing.T) {
	c := newFakeClock()
	var fired []string
	var at []time.Duration
	rec := func(name string) func() {
		return func() { fired = append(fired, name); at = append(at, c.elapsed()) }
	}
	c.AfterFunc(3*time.Second, rec("c"))
	c.AfterFunc(time.Second, rec("a"))
	c.AfterFunc(2*time.Second, rec("b1"))
	c.AfterFunc(2*time.Second, rec("b2"))
	c.AfterFunc(10*time.Second, rec("late"))
	require.Equal(t, 5, c.Pending())

	c.Advance(999 * time.Millisecond)
	require.Empty(t, fired)
	c.Advance(2001 * time.Millisecond)
	require.Equal(t, []string{"a", "b1", "b2", "c"}, fired)
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 2 * time.Second, 3 * time.Second}, at)
	require.Equal(t, 3*time.Second, c.elapsed())
	require.Equal(t, 1, c.Pending())
}

func TestFakeClockStop(t *testing.T) {
	c := newFakeClock()
	fired := false
	tm := c.AfterFunc(time.Second, func() { fired = true })
	require.True(t, tm.Stop())
	require.False(t, tm.Stop())
	c.Advance(time.Hour)
	require.False(t, fired)
	require.Zero(t, c.Pending())

	n := 0
	tm = c.AfterFunc(0, func() { n++ })
	c.Advance(0)
	require.Equal(t, 1, n)
	require.False(t, tm.Stop(), "a fired timer cannot be stopped")
}

func TestFakeClockCallbacksScheduleAndStop(t *testing.T) {
	c := newFakeClock()
	var fired []time.Duration
	var victim Timer
	// A callback that schedules another timer, due within the same Advance, and stops a third.
	c.AfterFunc(time.Second, func() {
		fired = append(fired, c.elapsed())
		victim.Stop()
		c.AfterFunc(time.Second, func() {
			fired = append(fired, c.elapsed())
			c.AfterFunc(5*time.Second, func() { fired = append(fired, c.elapsed()) })
		})
	})
	victim = c.AfterFunc(1500*time.Millisecond, func() { t.Fatal("stopped timer fired") })
	c.Advance(3 * time.Second)
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second}, fired)
	require.Equal(t, 3*time.Second, c.elapsed())
	c.Advance(4 * time.Second)
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 7 * time.Second}, fired)
}

func TestFakeClockAdvanceLimit(t *testing.T) {
	c := newFakeClock()
	n := 0
	var tick func()
	tick = func() { n++; c.AfterFunc(time.Millisecond, tick) }
	c.AfterFunc(time.Millisecond, tick)
	require.False(t, c.advance(time.Hour, 10))
	require.Equal(t, 10, n)
	require.Equal(t, 10*time.Millisecond, c.elapsed())
	require.True(t, c.advance(5*time.Millisecond, 10))
	require.Equal(t, 15, n)
}
