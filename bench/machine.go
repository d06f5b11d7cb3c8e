package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
)

// Machine describes the computer a run measured.
type Machine struct {
	CPU     string
	Cores   int
	Memory  string
	Kernel  string
	Go      string
	TempFS  string // file system of the temporary folder the logs live in
	TempDir string
}

// describeMachine reads the CPU model, memory and kernel from /proc; fields it cannot read say
// "unknown".
func describeMachine(tempDir string) Machine {
	m := Machine{CPU: "unknown", Cores: runtime.NumCPU(), Memory: "unknown", Kernel: "unknown",
		Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH, TempFS: "unknown", TempDir: tempDir}
	if v := procField("/proc/cpuinfo", "model name"); v != "" {
		m.CPU = v
	}
	if v := procField("/proc/meminfo", "MemTotal"); v != "" {
		var kb int64
		if _, err := fmt.Sscanf(v, "%d kB", &kb); err == nil {
			m.Memory = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(tempDir, &st); err == nil {
		m.TempFS = fsName(st.Type)
	}
	return m
}

// procField returns the value of the first "name : value" line of a /proc file.
func procField(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// fsName names the common Linux file system magic numbers.
func fsName(magic int64) string {
	switch magic {
	case 0xEF53:
		return "ext4"
	case 0x58465342:
		return "xfs"
	case 0x9123683E:
		return "btrfs"
	case 0x01021994:
		return "tmpfs"
	case 0x794c7630:
		return "overlayfs"
	}
	return fmt.Sprintf("magic %#x", magic)
}
