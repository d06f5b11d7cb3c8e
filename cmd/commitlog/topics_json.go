package main

import (
	"maps"
	"slices"

	"github.com/commitlog-go/commitlog"
)

// topicsDocument is topics --output json's document: the table's columns per partition, and the
// groups' total lag per topic.
type topicsDocument struct {
	Topics []topicSummary `json:"topics"`
}

type topicSummary struct {
	Topic         string             `json:"topic"`
	CleanupPolicy string             `json:"cleanup_policy"`
	Partitions    []partitionSummary `json:"partitions"`
	// GroupLag is each consumer group's lag summed over the topic's partitions it has a
	// committed position in.
	GroupLag map[string]int64 `json:"group_lag"`
}

type partitionSummary struct {
	Partition      int32 `json:"partition"`
	LogStartOffset int64 `json:"log_start_offset"`
	HighWatermark  int64 `json:"high_watermark"` // the table's END
	// LastStableOffset is where a ReadCommitted reader stops (the high watermark when no
	// transaction is open).
	LastStableOffset int64 `json:"last_stable_offset"`
	OpenTxns         int   `json:"open_txns"`
	Size             int64 `json:"size_bytes"`
	Segments         int   `json:"segments"`
	// CleanerPoint and DirtyRatio: a compacted topic's; null otherwise.
	CleanerPoint *int64   `json:"cleaner_point"`
	DirtyRatio   *float64 `json:"dirty_ratio"`
	// ReaderLag is each named reader's lag, for the readers with a committed position here.
	ReaderLag map[string]int64 `json:"reader_lag"`
}

// topicsJSON writes ts as one JSON document; positions are the named readers' committed
// positions (reader → topic → partition → offset), groupLag the groups' lag by topic.
func topicsJSON(g *globals, ts []*commitlog.Topic, figures map[string][]commitlog.PartitionStats, readerLag map[string]map[string]map[int32]int64, groupLag map[string]map[string]int64) error {
	doc := topicsDocument{Topics: []topicSummary{}}
	for _, t := range ts {
		policy := t.Config().CleanupPolicy
		ts := topicSummary{Topic: t.Name(), CleanupPolicy: policy.String(), Partitions: []partitionSummary{}, GroupLag: map[string]int64{}}
		maps.Copy(ts.GroupLag, groupLag[t.Name()])
		for id := range t.PartitionCount() {
			p, err := t.Partition(id)
			if err != nil {
				return err
			}
			var st commitlog.PartitionStats
			if f := figures[t.Name()]; int(id) < len(f) {
				st = f[id]
			} else {
				st = p.Stats()
			}
			ps := partitionSummary{Partition: id, LogStartOffset: st.LogStartOffset, HighWatermark: st.HighWatermark,
				LastStableOffset: st.LastStableOffset, Size: st.Size, Segments: st.Segments, ReaderLag: map[string]int64{}}
			for _, ps2 := range p.Producers() {
				if ps2.CurrentTxnFirstOffset >= 0 {
					ps.OpenTxns++
				}
			}
			if policy.Compact() {
				cs := p.CompactionState()
				ps.CleanerPoint, ps.DirtyRatio = &cs.CleanerPoint, &cs.DirtyRatio
			}
			for _, name := range slices.Sorted(maps.Keys(readerLag)) {
				if lag, ok := readerLag[name][t.Name()][id]; ok {
					ps.ReaderLag[name] = lag
				}
			}
			ts.Partitions = append(ts.Partitions, ps)
		}
		doc.Topics = append(doc.Topics, ts)
	}
	return writeJSON(g.io.out, doc)
}
