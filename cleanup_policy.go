package commitlog

import (
	"fmt"
	"strings"
	"time"
)

// CleanupPolicy is Kafka's cleanup.policy: what happens to a log's old segments.
type CleanupPolicy int8

const (
	// CleanupDelete deletes whole segments by retention.ms and retention.bytes (Kafka's
	// "delete", the default).
	CleanupDelete CleanupPolicy = iota
	// CleanupCompact keeps at least the latest record of every key and removes the older ones
	// and, after delete.retention.ms, tombstones (Kafka's "compact"). Records without a key are
	// refused (ErrKeylessRecord).
	CleanupCompact
	// CleanupCompactDelete compacts and also deletes by retention (Kafka's "compact,delete").
	CleanupCompactDelete
)

// Kafka's defaults for the compaction configs.
const (
	DefaultMinCleanableDirtyRatio = 0.5            // min.cleanable.dirty.ratio
	DefaultDeleteRetention        = 24 * time.Hour // delete.retention.ms
)

// Compact reports whether the policy compacts (compact or compact,delete).
func (p CleanupPolicy) Compact() bool { return p == CleanupCompact || p == CleanupCompactDelete }

// Delete reports whether the policy deletes by retention (delete or compact,delete).
func (p CleanupPolicy) Delete() bool { return p == CleanupDelete || p == CleanupCompactDelete }

func (p CleanupPolicy) valid() bool { return p >= CleanupDelete && p <= CleanupCompactDelete }

// String returns Kafka's name of the policy: "delete", "compact" or "compact,delete".
func (p CleanupPolicy) String() string {
	switch p {
	case CleanupDelete:
		return "delete"
	case CleanupCompact:
		return "compact"
	case CleanupCompactDelete:
		return "compact,delete"
	}
	return fmt.Sprintf("CleanupPolicy(%d)", int8(p))
}

// ParseCleanupPolicy returns the policy Kafka's cleanup.policy value names: "delete" ("" too),
// "compact", or both in either order, comma-separated ("compact,delete", "delete,compact"),
// spaces around the names ignored. ErrInvalidConfig for anything else.
func ParseCleanupPolicy(s string) (CleanupPolicy, error) {
	var compact, del bool
	for _, part := range strings.Split(s, ",") {
		switch strings.TrimSpace(part) {
		case "compact":
			compact = true
		case "delete":
			del = true
		case "":
			if s != "" {
				return 0, fmt.Errorf("%w: cleanup.policy %q", ErrInvalidConfig, s)
			}
			del = true
		default:
			return 0, fmt.Errorf("%w: cleanup.policy %q", ErrInvalidConfig, s)
		}
	}
	switch {
	case compact && del:
		return CleanupCompactDelete, nil
	case compact:
		return CleanupCompact, nil
	}
	return CleanupDelete, nil
}
