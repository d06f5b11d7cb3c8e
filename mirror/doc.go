// Package mirror copies topics between a commitlog.Store and a Kafka cluster, exactly once, with
// franz-go's kgo client: Push ships local topics to a cluster (store-and-forward from an edge
// machine), Pull follows a cluster's topics into a local store (a local read replica). Each is a
// long-running job that returns when its context ends and resumes where it stopped when run
// again, also after the process was killed.
//
// Records keep their key, value, headers and timestamp. A partition maps to the same partition
// number when both sides have as many, else by key with Kafka's murmur2 (the Java client's
// placement). Topic names can be renamed with a prefix (MirrorMaker's "source.topic" style).
//
// # Push: exactly once, positions on the cluster
//
// Push keeps its positions where MirrorMaker 2 keeps a task's, on the cluster side, and moves
// them in the same Kafka transaction as the records:
//
//   - One transactional.id per mirror, "commitlog-mirror-push-<name>". Every session (a start,
//     a restart after a failure, a new process after kill -9) begins with InitProducerId, which
//     bumps the producer epoch: every older producer of the id is fenced, and the transaction it
//     left open is aborted, before anything else happens.
//   - The session then reads the positions from the cluster, in the consumer group
//     "commitlog-mirror-push-<name>", with OffsetFetch's require_stable (KIP-447): only
//     positions of committed transactions, never one still pending. A partition without a
//     position starts at its log start offset. The positions stay in memory from then on; the
//     local store keeps none.
//   - Each transaction holds the records read from the positions up to the new positions, sent
//     with the producer's transactional batches, and the new positions, sent with
//     AddOffsetsToTxn and TxnOffsetCommit (generation -1, no member: they are the mirror's, not
//     a group member's). EndTxn makes both visible together, or, aborted, neither; a failure
//     anywhere ends the session, and the next one starts from what the cluster committed.
//   - So after any crash the positions on the cluster are exactly where the committed records
//     end: the next session neither ships a record again (a read_committed consumer never sees
//     an aborted transaction's) nor skips one (a position only moves with its records). The
//     local partitions read are synced before the commit, so the cluster is never ahead of what
//     the local log keeps after a power loss.
//
// A position is committed under the destination topic, because Kafka (like kfake and this
// module's broker) refuses group offsets for partitions the cluster does not hold: local
// partition p of a topic shipped to dest is (dest, p) in the group when dest has a partition p,
// else (dest, 0) in the group "commitlog-mirror-push-<name>.<p>". The metadata of each position
// names the local topic and its topic ID: a position of a local topic deleted and created again
// under its name is not taken for the new one's. The group has no members: kafka-consumer-groups
// --reset-offsets can move a position (its offsets are local offsets, so its lag column means
// nothing). Kafka deletes a group's offsets of a topic it deletes: a destination deleted on the
// cluster is shipped again from the local log start.
//
// The producer speaks transaction.version 1 (KIP-890 part 1: Produce up to v11, EndTxn and
// TxnOffsetCommit up to v4), which every transactional Kafka accepts, so that the mirror's own
// AddOffsetsToTxn and TxnOffsetCommit agree with kgo on the transaction protocol.
//
// Retention can delete local records before they are shipped (a cluster away for longer than
// retention.ms): Push then logs PushLossEvent at slog.LevelError with the offsets, counts it in
// PushState, and goes on from the log start offset.
//
// # Pull: exactly once, positions in the local store
//
// Pull keeps its positions on the local side, in the store it writes to, and moves them in the
// same local transaction as the records, so that nothing on the cluster has to agree:
//
//   - A read_committed kgo consumer that assigns itself every partition of the topics
//     (kgo.ConsumePartitions at explicit offsets; no consumer group, so no coordinator, no
//     rebalance, no session timeout after a kill). It never resets a position by itself
//     (kgo.NoResetOffset) and receives the transaction markers as control records, so that its
//     position passes them as Kafka's consumer's does.
//   - One local transactional producer per mirror, commitlog.Store.NewProducer with the
//     transactional id "commitlog-mirror-pull-<name>". Starting it fences every older producer of
//     the id, completes a transaction it had prepared to commit and aborts one it left open (a
//     process killed mid-transaction), before anything is read.
//   - The positions live in the local compacted topic "commitlog-mirror-pull-<name>" (one
//     partition; PullPositionsTopic): a record per source partition, key "<topic>/<partition>",
//     value the next offset to pull in decimal. At start they are read back with a read_committed
//     reader up to the last stable offset, the last value of each key winning; a partition with
//     none starts at the cluster's log start offset.
//   - Each poll (at most PullConfig.MaxRecords records) is one local transaction: Begin, the
//     records appended to their local partitions, the new positions appended to the positions
//     topic, Commit. The store commits all of it or none: after any crash the stored positions
//     end exactly where the committed records end, so the next run neither pulls a record again
//     nor skips one. A local read_committed reader sees every committed source record once; the
//     records of a transaction a kill interrupted stay in the log, aborted, as in Kafka.
//
// The positions topic works whatever the partition counts: with records placed by key, a local
// partition mixes several source partitions, so the remote positions cannot be stored as a
// reader's positions in the local partitions (Producer.CommitReaderPositions), which would
// serve only when the counts match. It is an ordinary topic, readable by any read_committed
// reader or Kafka client. The mirror's name identifies the positions: a Pull that follows
// another cluster, or other topics under the same local names, needs a name of its own.
//
// A local topic is created when missing with the source topic's partition count,
// cleanup.policy and max.message.bytes; its partitioner is set to commitlog.ManualPartitioner
// while Pull runs (Pull places every record itself). The cluster's retention may delete records
// before they are pulled (a local store away for longer than retention.ms): Pull then logs
// PullLossEvent at slog.LevelError with the offsets, counts it in PullState, and goes on from the
// cluster's log start offset.
package mirror
