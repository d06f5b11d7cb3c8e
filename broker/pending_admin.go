package broker

import (
	"errors"
	"fmt"

	"github.com/commitlog-go/commitlog"
)

// Not built yet, and refused rather than faked: topic configs by Kafka name, and ListOffsets
// max timestamp (ListOffsets is served to v6, before it).

func applyKafkaConfig(cfg commitlog.TopicConfig, name, _ string) (commitlog.TopicConfig, error) {
	return cfg, fmt.Errorf("config %q: topic configs in CreateTopics are not served yet", name)
}

func partitionMaxTimestamp(*commitlog.Partition) (int64, int64, error) {
	return -1, -1, errors.ErrUnsupported
}
