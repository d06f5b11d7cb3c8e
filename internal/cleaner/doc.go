// Package cleaner is the part of Kafka's log cleaner that knows batches but not logs: the offset
// map of the keys of a log's dirty part (OffsetMap, Kafka's SkimpyOffsetMap), the filter that
// copies a batch keeping what compaction keeps (Filter, Kafka's MemoryRecords.filterTo with
// LogCleaner's RecordFilter), the grouping of segments into cleaned ones (GroupBySize, Kafka's
// Cleaner.groupSegmentsBySize). The log (the root package's Log.Compact) plans a clean, reads
// the segments (segment.Segment.EachBatch), writes the cleaned ones and swaps them in.
//
// # What a clean keeps
//
// A record past the offset map's latest offset is kept as it is: the pass did not read its key
// (the map filled first), and removing a tombstone there could bring back an older value the map
// holds (Kafka's shouldRetainRecord keeps such records too). Below it, a record is kept when it
// has a key, no later record of its key is in the offset map (its
// offset is at least the map's offset for the key), and it is not a tombstone (a null value)
// whose batch's delete horizon has come. Records without a key are removed (a compacted log
// refuses them on append; an older one may hold some). A batch whose records are all kept is
// copied byte for byte unless a delete horizon must be set; otherwise it is rebuilt with its
// base offset, leader epoch, codec, timestamp type, transactional bit, producer id, epoch, base
// sequence and last offset delta, so offsets never move and producer sequences stay valid.
// A batch none of whose records is kept goes, unless it is its producer's last, which is kept
// empty (record count 0), as Kafka keeps it so that producer state survives. Control batches
// (transaction markers) are kept unchanged. The records of a batch of an aborted transaction
// (Rules.Aborted) all go, as Kafka's cleaner discards aborted batches; the caller leaves such
// batches out of the offset map, so that an aborted value never stands for its key.
//
// # Tombstones (KIP-534)
//
// The first clean that keeps a tombstone rewrites its batch with a delete horizon, the clean's
// time plus delete.retention.ms, in the BaseTimestamp field (attribute bit 6), the records'
// timestamp deltas re-based on it so that their timestamps stay what they were. A clean at or
// after the horizon removes the batch's tombstones. A reader that was behind therefore has
// delete.retention.ms from the first clean to see a delete.
//
// # Why a hash collision cannot lose a record
//
// Kafka's map keys its slots by a 16-byte digest of the key, so two keys with one digest would
// be taken for one and the older record of either dropped. OffsetMap stores the key's bytes in
// an arena and compares them on every lookup; the hash (xxhash64) only picks where to probe. Two
// different keys are therefore never merged, whatever their hashes: a collision costs a longer
// probe, never a record. A full map refuses a new key (Put returns false) rather than evict one,
// and the clean then ends its pass before that batch (AddBatch is all or nothing per batch), so
// every key the pass's filter looks up is in the map with its latest offset in the mapped range,
// or not in the map at all, in which case its records are kept.
package cleaner
