package main

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Result is what one child process measured for one system and case.
type Result struct {
	Records int64   `json:"records"`
	Bytes   int64   `json:"bytes"`   // key and value bytes of the records
	Seconds float64 `json:"seconds"` // the timed part
	Mallocs uint64  `json:"mallocs"` // heap allocations in the timed part
	// CPU is the user and system CPU seconds of the process in the timed part.
	CPU     float64 `json:"cpu,omitempty"`
	PeakRSS int64   `json:"peak_rss"`
	// OpenMS is the reopen time of workload f, in milliseconds.
	OpenMS float64 `json:"open_ms,omitempty"`
	// Written is how many records workload f's log held before the reopen (after a kill: as
	// many as the killed writer had seen acknowledged when it said so).
	Written int64 `json:"written,omitempty"`
	// Scale is what the scale workload's cases measured (nil for the others).
	Scale *ScaleResult `json:"scale,omitempty"`
	// Err says why the case failed.
	Err string `json:"error,omitempty"`
}

// RecordsPerSec is the throughput of the timed part.
func (r *Result) RecordsPerSec() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.Records) / r.Seconds
}

// MBPerSec is the payload throughput in MB/s (10^6 bytes).
func (r *Result) MBPerSec() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.Bytes) / 1e6 / r.Seconds
}

// AllocsPerRecord is the heap allocations of the timed part per record.
func (r *Result) AllocsPerRecord() float64 {
	if r.Records <= 0 {
		return 0
	}
	return float64(r.Mallocs) / float64(r.Records)
}

// CPUMicrosPerRecord is the process's CPU time of the timed part per record, in µs.
func (r *Result) CPUMicrosPerRecord() float64 {
	if r.Records <= 0 {
		return 0
	}
	return 1e6 * r.CPU / float64(r.Records)
}

// meter measures one timed part: time, allocations, CPU, and the peak resident set since it
// started.
type meter struct {
	start   time.Time
	mallocs uint64
	cpu     int64 // ns
}

// startMeter collects garbage, resets the process's peak RSS (VmHWM) where the kernel allows,
// and starts the clock.
func startMeter() *meter {
	runtime.GC()
	debug.FreeOSMemory()
	// Writing 5 to clear_refs resets VmHWM to the current RSS (Linux 4.0 and later).
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return &meter{start: time.Now(), mallocs: ms.Mallocs, cpu: processCPU()}
}

// stop fills r's time, allocations and peak RSS.
func (m *meter) stop(r *Result) {
	r.Seconds = time.Since(m.start).Seconds()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.Mallocs = ms.Mallocs - m.mallocs
	r.CPU = time.Duration(processCPU() - m.cpu).Seconds()
	r.PeakRSS = peakRSS()
}

// peakRSS returns the process's peak resident set in bytes: VmHWM from /proc/self/status, or
// getrusage's ru_maxrss where that file is missing.
func peakRSS() int64 {
	if f, err := os.Open("/proc/self/status"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss << 10
}
