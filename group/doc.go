// Package group is a consumer group coordinator: Kafka's classic group protocol (JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete,
// ListGroups, DescribeGroups, DeleteGroups) over in-memory state kept durably in Kafka's __consumer_offsets
// record formats, and the assignors members run (range, roundrobin, cooperative-sticky).
//
// The store (commitlog.Store) owns one Coordinator and stores its records in its internal log
// __consumer_offsets-0; its GroupReader drives the protocol for a Go program, and the Kafka
// protocol server hands clients' requests to the same Coordinator.
//
// # Protocol
//
// A member joins (Coordinator.Join) with its protocols: for consumers, assignor names, each with
// the member's encoded Subscription (EncodeSubscription). When every known member has rejoined,
// or the rebalance timeout passed, the join phase ends: the generation advances, one member is
// leader, and only the leader's response lists the members. The leader computes the assignment
// with the chosen Assignor and sends it in its SyncGroup (Coordinator.Sync); each member's
// SyncGroup returns its part (DecodeAssignment). Members then heartbeat (Coordinator.Heartbeat)
// within their session timeout; a heartbeat that returns ErrRebalanceInProgress sends the
// member back to join. Commits (Coordinator.CommitOffsets) carry the member's generation, and one
// from another generation is refused with ErrIllegalGeneration, so a member that lost its
// partitions cannot move the group's positions.
//
// A producer's transaction commits a group's offsets with Coordinator.CommitTxnOffsets (Kafka's
// TxnOffsetCommit): they are stored as the transaction's records and stay pending until
// CompleteTxnOffsets at its marker makes them the group's, or drops them (txn_offsets.go).
//
// The leader member computes the assignment, rather than the coordinator as in KIP-848, because
// Kafka's clients in use speak the classic protocol and bring their own assignors: one
// coordinator serves them and the in-process members alike.
package group
