// Package segment is one segment of a partition's log: its .log file of batches, its two indexes
// and its aborted-transaction index, as Kafka's LogSegment holds a FileRecords with an
// OffsetIndex, a TimeIndex and a TransactionIndex. The log
// above it (the root package's Log) keeps the policy (when to roll, sync, retain, truncate; the
// leader epochs; the recovery point) and the list of segments; a segment knows nothing of them,
// and never refers to its log.
//
// # Files and byte layout
//
// A segment at base offset B is three files in the partition's folder, and a fourth once it has an
// aborted transaction, named by B in 20 digits, zero-padded (Name), as Kafka names them:
//
//   - 00000000000000000B.log: Kafka's RecordBatch v2 batches back to back, as a producer or a
//     leader sent them (61-byte header: base offset int64, batch length int32, partition leader
//     epoch int32, magic int8 = 2, CRC-32C uint32 over the rest, attributes int16, last offset
//     delta int32, base and max timestamps int64, producer id int64, producer epoch int16, base
//     sequence int32, record count int32; then the records), big-endian. Nothing else: no
//     framing of ours, so the bytes can go to a Kafka fetch response unchanged (File, sendfile).
//   - .index: the offset index (index.Offset, Kafka's OffsetIndex): 8-byte entries, the offset
//     relative to B (int32) and the position of a batch in the .log (int32), one every
//     index.interval.bytes of batches, grown by steps up to segment.index.bytes while the
//     segment is active (an empty one unmapped until an entry needs room) and trimmed to its
//     entries when sealed.
//   - .timeindex: the time index (index.Time, Kafka's TimeIndex): 12-byte entries, a timestamp
//     (int64, ms) and an offset relative to B (int32), the largest timestamp so far and the last
//     offset of the batch holding it, written with the offset index's entries and once more when
//     the segment is sealed or closed.
//   - .txnindex: the aborted-transaction index (txnindex.Index, Kafka's TransactionIndex): 34-byte
//     entries, version int16 (0), producer id, first offset, last offset (the ABORT marker's)
//     and last stable offset (int64 each), in marker order; created by the first
//     AppendAbortedTxn, absent until then. Its entries are kept in memory and no descriptor
//     stays open (see FilesPerSegment); a corrupt file is emptied at open (TxnIndexCorrupt).
//
// A retired segment's files carry a further suffix, ".deleted" (DeletedSuffix), or ".<n>.deleted"
// when a retired segment at the same base offset still waits (Retire).
//
// # Lifecycle
//
// Create makes the files of a new, empty, active segment. The single writer then appends
// (ReserveIndexes, WriteAt, IndexBatch, SetSize; CanHold says when a write does not fit and the
// log must roll, by Kafka's roll rules of UnifiedLog.roll: segment.bytes, segment.ms in record
// time, full indexes, 31-bit relative offsets), syncs (Sync, SyncIndexes), and seals the segment
// when the log rolls (Seal, or SealIndexes then SyncIndexes and Unpin). A sealed segment is
// read-only, until Truncate makes it the active segment again. When retention or truncation takes
// it out of the log, Retire renames its files; RemoveIfDue closes and deletes them once no read
// holds it and its delete time has come. Close releases the files for good (the log closes);
// Remove closes and deletes a segment that was never retired.
//
// Open opens the .log file of an existing segment and Load recovers it (Kafka's
// LogSegment.recover, or, for a segment trusted as it is, the header walk of
// LogSegment.readNextOffset): it scans the batches, rebuilds indexes that are missing or
// disagree with the data, walks over batches whose framing is whole but whose CRC fails, and
// reports where the batches stop (LoadReport). It changes no byte of the .log: whether to cut a
// torn tail (DiscardFrom, Truncate) or keep unreadable bytes in place (SetSize,
// MarkTimesUnknown) is the log's recovery rule.
//
// # Reads
//
// Read returns whole batches from an offset, FirstAtOrAfter finds an offset by timestamp,
// ReadRecord hands over one record, WalkHeaders walks batch headers; Lookup and LookupTime give
// the positions to start from. A read first finds its segment in the log's list and calls
// Acquire under the log's read lock, loading Size and Truncations there; it calls FilesReady, or,
// outside the lock, OpenFiles (a sealed segment's files may have been closed for idleness by the
// FileCache), looks the index up under the lock, reads without it, compares Truncations (a
// change says a truncation overtook it: read again, do not report damage) and calls Release.
//
// The reference count protects the files: a segment's files are closed for idleness only when no
// read holds it, and a retired segment's renamed files are deleted only when its count is 0. A
// read that acquired a segment before it was retired reads on, reopening the files under their
// retired names if need be.
//
// ReadRecord reads through a read-only mapping of the .log file where the file system's mappings
// share its pages (SharesMappings: mmap, the memory file system), elsewhere with ReadAt. The
// mapping rule: the file never shrinks under a mapping in use, since touching a mapped page past
// the end of the file is a SIGBUS. Appends only grow the file; Truncate runs between HoldMappings,
// which waits for the reads using the current mapping and makes no new one, and ReleaseMappings.
// A page that faults anyway (a disk error, or the file cut outside this package) is the read's
// ErrCorrupt, not a crash. The PositionCache keeps, per batch read, its verified header and the
// position of every PositionStride-th record, so that a batch's CRC is checked once.
//
// # Concurrency
//
// The caller serialises the writer's methods (one writer per segment: Create, Load, ReserveIndexes,
// WriteAt, DiscardFrom, IndexBatch, SetSize, MarkTimesUnknown, SealIndexes, Seal, SyncIndexes,
// Unpin, PositionOf, Truncate, Retire, AppendAbortedTxn, TruncateTxnIndex), and runs IndexBatch, SealIndexes and Truncate with no index
// lookup in progress (the log holds the writer side of the lock its readers hold for Lookup,
// LookupTime and for NextOffset, MaxTimestamp and TimesUnknown). Safe concurrently with each other
// and with the writer: Acquire, Release, FilesReady, OpenFiles, Size, Truncations, Read,
// FirstAtOrAfter, ReadRecord, WalkHeaders, CollectAbortedTxns, Sync, Close, RemoveIfDue, and the
// caches.
//
// # Errors
//
// Damaged bytes wrap ErrCorrupt with the file, the position and the offset; a read of a segment
// closed for good returns ErrClosed; ReadRecord returns ErrNoRecord when no record lies below the
// end it was given. The root package re-exports ErrCorrupt and ErrClosed under the same names and
// texts. Other errors are the file system's (syscall.ENOSPC from a full disk among them).
package segment
