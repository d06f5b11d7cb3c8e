package main

import (
	"fmt"
)

// The targets this library is held to, each a ratio to a baseline or a peer measured in the
// same run (or, for reopen, a time).

// ours is the name of the system the ratios are taken against.
const ours = "commitlog"

// producersBefore1 and producersBefore16 are Topic.Append's durable records/s with 1 and 16
// goroutines on the benchmark machine before appends waiting together were coalesced (and 53k
// with 64): the producers workload's targets are set from them, as absolute figures.
const producersBefore1, producersBefore16 = 3500, 11300

// Verdict is one target checked.
type Verdict struct {
	Case     string
	Target   string // what is asked
	Measured string // what was measured
	Met      bool
	Known    bool // false when a figure is missing (failed or not run)
}

// State is the Targets table's last column: met, **missed** or n/a.
func (v Verdict) State() string {
	switch {
	case !v.Known:
		return "n/a"
	case v.Met:
		return "met"
	}
	return "**missed**"
}

// Cell is the target column's text.
func (v Verdict) Cell() string {
	switch {
	case !v.Known:
		return v.Target + ": n/a"
	case v.Met:
		return v.Target + ": " + v.Measured + " **met**"
	}
	return v.Target + ": " + v.Measured + " **missed**"
}

// medians looks up a system's summary in a case; nil when missing or failed.
type medians func(caseID, system string) *Summary

// verdicts checks every target that applies to system sys (one of ours) in case c. The memory
// target applies to the persistent systems only: an in-memory store's records are its RSS.
func verdicts(c, sys string, persistent bool, med medians, p Params, peers []string) []Verdict {
	me := med(c, sys)
	ratio := func(target string, base *Summary, min float64) Verdict {
		v := Verdict{Case: c, Target: target}
		if me == nil || base == nil || base.RPS == 0 {
			return v
		}
		r := me.RPS / base.RPS
		return Verdict{Case: c, Target: target, Measured: fmt.Sprintf("%.2f×", r), Met: r >= min, Known: true}
	}
	switch c {
	case "a":
		out := []Verdict{ratio("≥0.8× bufio", med("a", "bufio"), 0.8)}
		if !persistent {
			return out
		}
		rss := Verdict{Case: c, Target: "peak RSS ≤ bufio's + 64 MiB"}
		if base := med("a", "bufio"); me != nil && base != nil {
			d := mib(me.RSS - base.RSS)
			rss.Measured, rss.Met, rss.Known = fmt.Sprintf("%+.0f MiB", d), d <= 64, true
		}
		return append(out, rss)
	case "b":
		return []Verdict{ratio("≥0.9× bufio", med("b", "bufio"), 0.9)}
	case "c1":
		if sys != ours {
			return nil
		}
		return []Verdict{ratio("≥0.9× fdatasync", med("c1", "fdatasync"), 0.9)}
	case "c16":
		if sys != ours {
			return nil
		}
		return []Verdict{ratio("≥10× ours at 1 goroutine", med("c1", ours), 10)}
	case "d":
		return []Verdict{ratio("≥1.0× bufio reader", med("d", "bufio"), 1)}
	case "e":
		return []Verdict{ratio("≥1.0× pread table", med("e", "bufio"), 1)}
	case "fclean", "fkill":
		if sys != ours {
			return nil
		}
		limit, what := 50.0, "clean reopen <50 ms"
		if c == "fkill" {
			limit, what = 2000, "reopen after kill <2 s"
		}
		if p.ReopenBytes != 1<<30 {
			what += " (set for 1 GiB)"
		}
		v := Verdict{Case: c, Target: what}
		if me != nil {
			v.Measured, v.Met, v.Known = fmt.Sprintf("%.1f ms", me.OpenMS), me.OpenMS < limit, true
		}
		return []Verdict{v}
	case "reader":
		switch sys {
		case "commitlog-Reader":
			return []Verdict{ratio("Reader.Records ≥0.8× Partition.Scan", med("reader", "commitlog-Scan"), 0.8)}
		case "commitlog-Reader.Scan":
			return []Verdict{ratio("Reader.Scan (the zero-copy mode) ≥0.8× Partition.Scan", med("reader", "commitlog-Scan"), 0.8)}
		}
		return nil
	case "producers1", "producers16":
		if sys != "commitlog-Topic" {
			return nil
		}
		floor, what := float64(producersBefore1), fmt.Sprintf("≥%s records/s (no slower than before coalescing)", human(producersBefore1))
		if c == "producers16" {
			floor, what = 4*producersBefore16, fmt.Sprintf("≥%s records/s (4× the %s before coalescing)", human(4*producersBefore16), human(producersBefore16))
		}
		v := Verdict{Case: c, Target: what}
		if me != nil {
			v.Measured, v.Met, v.Known = human(me.RPS)+" records/s", me.RPS >= floor, true
		}
		return []Verdict{v}
	case "g":
		var best *Summary
		bestName := ""
		for _, name := range peers {
			if s := med("g", name); s != nil && (best == nil || s.RPS > best.RPS) {
				best, bestName = s, name
			}
		}
		if bestName == "" {
			return []Verdict{{Case: c, Target: "≥2× best peer"}}
		}
		return []Verdict{ratio("≥2× best peer ("+bestName+")", best, 2)}
	}
	return nil
}
