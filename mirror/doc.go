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
package mirror
