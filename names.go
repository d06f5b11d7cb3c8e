package commitlog

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
)

// maxNameLength is Kafka's limit on a topic name (249 characters, so that a partition folder name
// fits 255 bytes).
const maxNameLength = 249

// validName reports why name is not a legal topic or reader name under Kafka's rule: 1 to 249
// characters of [a-zA-Z0-9._-], and neither "." nor "..". It returns "" when name is legal.
func validName(name string) string {
	switch {
	case name == "":
		return "empty"
	case name == "." || name == "..":
		return "may not be . or .."
	case len(name) > maxNameLength:
		return fmt.Sprintf("longer than %d characters", maxNameLength)
	}
	for i, c := range name { // by character: a non-ASCII one is named whole, not by its first byte
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Sprintf("character %q at byte %d is not one of [a-zA-Z0-9._-] (ASCII letters and digits, '.', '_' and '-', as Kafka's topic names)", c, i)
		}
	}
	return ""
}

// checkTopicName returns ErrInvalidTopicName, saying why, unless name is legal.
func checkTopicName(name string) error {
	if why := validName(name); why != "" {
		return fmt.Errorf("%w: %q: %s", ErrInvalidTopicName, name, why)
	}
	if isInternalTopic(name) {
		owner := "transaction coordinator"
		if name == consumerOffsetsTopic {
			owner = "group coordinator (consumer groups' members and committed positions)"
		}
		return fmt.Errorf("%w: %q is an internal topic of the store's %s", ErrInvalidTopicName, name, owner)
	}
	if why := reservedTopicName(name); why != "" {
		return fmt.Errorf("%w: %q: %s", ErrInvalidTopicName, name, why)
	}
	return nil
}

// storeFileNames are the files the store keeps in its directory beside the partition folders,
// and in them (commitlog-state, commitlog-replication, commitlog-sync-failed); reserved as
// topic names, in any case, with every name beginning with readerFilePrefix.
var storeFileNames = []string{topicsFileName, creatingFileName, producerIDsFileName, stateFileName,
	replicationFileName, syncFailedFileName}

// reservedTopicName says why name is reserved for the store's own files, "" when it is not. A
// topic's partition folders, "<topic>-<n>", share the store's directory with the store's files:
// a topic named "commitlog-reader-zz" has the folder "commitlog-reader-zz-0", which is the
// positions file of reader "zz-0" (Readers, CommittedPositions and verify took it for one). So
// every name beginning with "commitlog-reader-" is reserved, as are the names of the store's
// files themselves, as Kafka reserves the internal topics it owns (Topic.isInternal). The
// comparison ignores case: on a case-insensitive file system "Commitlog-Reader-zz-0" is the file
// "commitlog-reader-zz-0". Other names beginning with "commitlog-" stay legal (the mirror's
// positions topics "commitlog-mirror-pull-<name>" among them): no other file of the store's
// ends in "-<n>", so no partition folder can be one. Kafka's own files in a log directory
// (cleaner-offset-checkpoint, recovery-point-offset-checkpoint, log-start-offset-checkpoint,
// replication-offset-checkpoint, meta.properties) do not either, and stay legal topics as in Kafka.
func reservedTopicName(name string) string {
	if len(name) >= len(readerFilePrefix) && strings.EqualFold(name[:len(readerFilePrefix)], readerFilePrefix) {
		return fmt.Sprintf("names beginning with %q (in any case) are reserved for the store's reader positions files", readerFilePrefix)
	}
	for _, f := range storeFileNames {
		if strings.EqualFold(name, f) {
			return "the names of the store's own files (in any case) are reserved"
		}
	}
	return ""
}

// maxReaderNameLength is shorter than a topic name's limit: a reader's positions live in
// "commitlog-reader-<name>", whose temporary file adds ".tmp", and both must fit a 255-byte file
// name with room to spare on file systems that take less.
const maxReaderNameLength = 200

// checkReaderName returns ErrInvalidReaderName, saying why, unless name is legal (the topic-name
// rule, at most maxReaderNameLength characters). A reader's positions file is named after it,
// so a name ending in the checkpoint's temporary suffix is refused: its file would be the temporary file of the reader named without the suffix, and be
// removed as a leftover whenever the store opens.
func checkReaderName(name string) error {
	why := validName(name)
	switch {
	case why != "":
	case strings.HasSuffix(name, checkpoint.TempSuffix):
		why = fmt.Sprintf("may not end in %q", checkpoint.TempSuffix)
	case len(name) > maxReaderNameLength:
		why = fmt.Sprintf("longer than %d characters", maxReaderNameLength)
	}
	if why != "" {
		return fmt.Errorf("%w: %q: %s", ErrInvalidReaderName, name, why)
	}
	return nil
}

// maxDirNameLength is the longest file name most file systems take.
const maxDirNameLength = 255

// deleteDirName is the name a partition folder is renamed to while it is deleted:
// "<topic>-<partition>-delete", the topic cut short (as Kafka cuts it) when the whole would pass
// maxDirNameLength; a 249-character topic name leaves no room for the suffix otherwise.
func deleteDirName(topic string, partition int32) string {
	suffix := "-" + strconv.Itoa(int(partition)) + deleteSuffix
	return topic[:min(len(topic), maxDirNameLength-len(suffix))] + suffix
}

// partitionDirName is the folder of a partition in a Kafka log directory: "<topic>-<partition>".
func partitionDirName(topic string, partition int32) string {
	return topic + "-" + strconv.Itoa(int(partition))
}

// parsePartitionDirName splits a folder name "<topic>-<partition>" at its last '-'. Kafka's
// folders of logs being deleted or moved ("...-delete", "...-future") do not parse.
func parsePartitionDirName(name string) (topic string, partition int32, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return "", 0, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || name[i+1] == '+' || (len(name[i+1:]) > 1 && name[i+1] == '0') {
		return "", 0, false
	}
	topic = name[:i]
	if validName(topic) != "" {
		return "", 0, false
	}
	return topic, int32(p), true
}

// CheckTopicName returns ErrInvalidTopicName, saying why, unless name is a legal topic name
// (Kafka's Topic.validate: 1 to 249 characters of ASCII letters, digits, '.', '_' and '-',
// neither "." nor ".."), not one of the store's internal topics and not reserved for the store's
// own files (beginning with "commitlog-reader-", or one of their names; see reservedTopicName):
// what CreateTopic checks,
// for a caller that validates before creating (CreateTopics with validate_only).
func CheckTopicName(name string) error { return checkTopicName(name) }
