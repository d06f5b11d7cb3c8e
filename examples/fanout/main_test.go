package main

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestFanout runs the example and checks its table against the sample: every reader's row,
// its records per partition adding up, the counts the sample dictates.
func TestFanout(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	quakes, err := loadSample()
	if err != nil {
		t.Fatal(err)
	}
	strongCount, sinceReplay := 0, 0
	for _, q := range quakes {
		if q.Mag >= strong {
			strongCount++
		}
		if q.Time >= replayFrom.UnixMilli() {
			sinceReplay++
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.HasPrefix(lines[0], "500 USGS earthquakes, 2018-02-04 22:06 to 2018-02-07 01:26 UTC") {
		t.Errorf("first line: %q", lines[0])
	}
	rows := map[string][]string{}
	var header []string
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "reader" {
			header = f
		}
		if len(f) > 0 && strings.Contains("live-scorer hourly-loader audit replay", f[0]) {
			rows[f[0]] = f
		}
	}
	if strings.Join(header[:6], " ") != "reader started records p0 p1 p2" {
		t.Fatalf("table header: %q\n%s", header, out.String())
	}
	want := map[string]int{"live-scorer": 500, "hourly-loader": 500, "audit": 500, "replay": sinceReplay}
	var perPart []string
	for name, total := range want {
		f := rows[name]
		if f == nil {
			t.Fatalf("no row for %s:\n%s", name, out.String())
		}
		// The columns after "started" (whose words vary): records, p0, p1, p2.
		i := 0
		for i = 1; i < len(f) && !isNumber(f[i]); i++ {
		}
		if i+4 > len(f) {
			t.Fatalf("row %q", f)
		}
		nums := make([]int, 4)
		for j := range nums {
			nums[j], _ = strconv.Atoi(f[i+j])
		}
		if nums[0] != total || nums[1]+nums[2]+nums[3] != total {
			t.Errorf("%s: records %d, per partition %v; want %d", name, nums[0], nums[1:], total)
		}
		if name != "replay" {
			perPart = append(perPart, fmt.Sprint(nums[1:]))
		}
	}
	if perPart[0] != perPart[1] || perPart[1] != perPart[2] {
		t.Errorf("readers of everything saw different partitions: %v", perPart)
	}
	for _, s := range []string{
		fmt.Sprintf("flagged %d of M2.5 or more", strongCount),
		"strongest M6.4, 22km NNE of Hualian, Taiwan",
		"each of 12 networks in one partition",
		fmt.Sprintf("only the %d events since then", sinceReplay),
		"run 2 resumed at offsets",
	} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
	}
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}
