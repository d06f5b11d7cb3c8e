package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// api is one Kafka API the broker serves: its versions and its handler.
type api struct {
	key      kmsg.Key
	min, max int16
	// beforeAuth says that the API is answered before SASL authentication (ApiVersions and the
	// SASL exchange itself).
	beforeAuth bool
	handle     func(ctx context.Context, c *conn, r *request) (reply, error)
}

// servedAPIs returns the APIs served: what ApiVersions advertises. The version ranges are those
// Kafka 4.1 serves, down to the oldest that clients in the field still send, capped at what
// kmsg encodes and at what the store models.
func servedAPIs() []api {
	return []api{
		{key: kmsg.Produce, min: 0, max: 13, handle: handleProduce},
		{key: kmsg.Fetch, min: 4, max: 18, handle: handleFetch},
		{key: kmsg.ListOffsets, min: 1, max: 10, handle: handleListOffsets},
		{key: kmsg.Metadata, min: 0, max: 13, handle: handleMetadata},
		{key: kmsg.ApiVersions, min: 0, max: 4, beforeAuth: true, handle: handleAPIVersions},
		{key: kmsg.CreateTopics, min: 2, max: 7, handle: handleCreateTopics},
		{key: kmsg.DeleteTopics, min: 1, max: 6, handle: handleDeleteTopics},
		{key: kmsg.OffsetForLeaderEpoch, min: 2, max: 4, handle: handleOffsetForLeaderEpoch},
		{key: kmsg.FindCoordinator, min: 0, max: 6, handle: handleFindCoordinator},
		{key: kmsg.InitProducerID, min: 0, max: 5, handle: handleInitProducerID},
		{key: kmsg.AddPartitionsToTxn, min: 0, max: 3, handle: handleAddPartitionsToTxn},
		{key: kmsg.AddOffsetsToTxn, min: 0, max: 4, handle: handleAddOffsetsToTxn},
		{key: kmsg.EndTxn, min: 0, max: 4, handle: handleEndTxn},
		{key: kmsg.TxnOffsetCommit, min: 0, max: 4, handle: handleTxnOffsetCommit},
		{key: kmsg.DeleteRecords, min: 0, max: 2, handle: handleDeleteRecords},
		{key: kmsg.DescribeConfigs, min: 1, max: 4, handle: handleDescribeConfigs},
		{key: kmsg.AlterConfigs, min: 0, max: 2, handle: handleAlterConfigs},
		{key: kmsg.IncrementalAlterConfigs, min: 0, max: 1, handle: handleIncrementalAlterConfigs},
		{key: kmsg.CreatePartitions, min: 0, max: 3, handle: handleCreatePartitions},
		{key: kmsg.DescribeCluster, min: 0, max: 1, handle: handleDescribeCluster},
		{key: kmsg.SASLHandshake, min: 0, max: 1, beforeAuth: true, handle: handleSASLHandshake},
		{key: kmsg.SASLAuthenticate, min: 0, max: 2, beforeAuth: true, handle: handleSASLAuthenticate},
		{key: kmsg.OffsetCommit, min: 2, max: 9, handle: handleOffsetCommit},
		{key: kmsg.OffsetFetch, min: 1, max: 9, handle: handleOffsetFetch},
		{key: kmsg.JoinGroup, min: 0, max: 9, handle: handleJoinGroup},
		{key: kmsg.Heartbeat, min: 0, max: 4, handle: handleHeartbeat},
		{key: kmsg.LeaveGroup, min: 0, max: 5, handle: handleLeaveGroup},
		{key: kmsg.SyncGroup, min: 0, max: 5, handle: handleSyncGroup},
		{key: kmsg.DescribeGroups, min: 0, max: 6, handle: handleDescribeGroups},
		{key: kmsg.ListGroups, min: 0, max: 5, handle: handleListGroups},
		{key: kmsg.DeleteGroups, min: 0, max: 2, handle: handleDeleteGroups},
		{key: kmsg.OffsetDelete, min: 0, max: 0, handle: handleOffsetDelete},
	}
}

// apiTable indexes the APIs served by key; nil where a key is not served.
type apiTable []*api

func newAPITable(served []api) apiTable {
	var t apiTable
	for i := range served {
		k := int(served[i].key)
		for len(t) <= k {
			t = append(t, nil)
		}
		t[k] = &served[i]
	}
	return t
}

// lookup returns the API of key, or nil when the broker does not serve it.
func (t apiTable) lookup(key int16) *api {
	if key < 0 || int(key) >= len(t) {
		return nil
	}
	return t[key]
}
