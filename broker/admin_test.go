package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAdminKadm drives the admin APIs through kadm as an operator's tool would: create a topic
// with configs, describe and alter them, add partitions, list offsets (earliest, latest, by
// time, max timestamp), delete records, delete the topic. Both stores.
func TestAdminKadm(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			b := startBroker(t, be.open(t), Config{})
			ctx := testContext(t)
			adm := kadm.NewClient(b.client(t))

			retention := "3600000"
			created, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": &retention, "cleanup.policy": kmsg.StringPtr("delete")}, "admin")
			require.NoError(t, err)
			require.NoError(t, created.Err)
			require.Equal(t, int32(2), created.NumPartitions)
			require.Equal(t, int16(1), created.ReplicationFactor)
			topic, err := b.store.Topic("admin")
			require.NoError(t, err)
			require.Equal(t, [16]byte(topic.ID()), [16]byte(created.ID), "CreateTopics v7 answers the topic's id")

			// kadm's CreateTopic returns the topic's error as its error.
			_, err = adm.CreateTopic(ctx, 1, 1, nil, "admin")
			require.ErrorIs(t, err, kerr.TopicAlreadyExists)
			_, err = adm.CreateTopic(ctx, 1, 3, nil, "three-replicas")
			require.ErrorIs(t, err, kerr.InvalidReplicationFactor)
			_, err = adm.CreateTopic(ctx, 1, 1, map[string]*string{"no.such.config": kmsg.StringPtr("1")}, "bad-config")
			require.ErrorIs(t, err, kerr.InvalidConfig)

			configs := func() map[string]kadm.Config {
				rcs, err := adm.DescribeTopicConfigs(ctx, "admin")
				require.NoError(t, err)
				rc, err := rcs.On("admin", nil)
				require.NoError(t, err)
				require.NoError(t, rc.Err)
				out := map[string]kadm.Config{}
				for _, c := range rc.Configs {
					out[c.Key] = c
				}
				return out
			}
			cfgs := configs()
			require.Equal(t, "3600000", *cfgs["retention.ms"].Value)
			require.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, cfgs["retention.ms"].Source)
			require.Equal(t, "delete", *cfgs["cleanup.policy"].Value)
			require.Equal(t, kmsg.ConfigSourceDefaultConfig, cfgs["segment.bytes"].Source)
			require.Equal(t, "1073741824", *cfgs["segment.bytes"].Value)

			// Incremental alter: set, append to a list, delete back to the default.
			altered, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
				{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("7200000")},
				{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("compact")},
			}, "admin")
			require.NoError(t, err)
			require.NoError(t, altered[0].Err)
			cfgs = configs()
			require.Equal(t, "7200000", *cfgs["retention.ms"].Value)
			require.Equal(t, "compact,delete", *cfgs["cleanup.policy"].Value, "the store keeps the policy set in its own order")
			require.Equal(t, 2*time.Hour, topic.Config().RetentionDuration, "the live topic runs the new value")
			altered, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
				{Op: kadm.DeleteConfig, Name: "retention.ms"},
				{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("compact")},
			}, "admin")
			require.NoError(t, err)
			require.NoError(t, altered[0].Err)
			require.Equal(t, "604800000", *configs()["retention.ms"].Value, "back to the default of 7 days")
			require.Equal(t, kmsg.ConfigSourceDefaultConfig, configs()["retention.ms"].Source)
			require.Equal(t, "delete", *configs()["cleanup.policy"].Value)
			bad, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("soon")}}, "admin")
			require.NoError(t, err)
			require.ErrorIs(t, bad[0].Err, kerr.InvalidConfig)

			// Partitions: only up.
			grown, err := adm.UpdatePartitions(ctx, 3, "admin")
			require.NoError(t, err)
			require.NoError(t, grown["admin"].Err)
			require.Equal(t, int32(3), topic.PartitionCount())
			shrink, err := adm.UpdatePartitions(ctx, 2, "admin")
			require.NoError(t, err)
			require.ErrorIs(t, shrink["admin"].Err, kerr.InvalidPartitions)

			// Records with known timestamps in partition 2, then offsets.
			prod := b.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			base := time.UnixMilli(1_700_000_000_000)
			var recs []*kgo.Record
			for i := range 10 {
				ts := base.Add(time.Duration(i) * time.Second)
				if i == 4 {
					ts = base.Add(time.Hour) // the largest timestamp, at offset 4
				}
				recs = append(recs, &kgo.Record{Topic: "admin", Partition: 2, Value: fmt.Appendf(nil, "v%d", i), Timestamp: ts})
			}
			produceSync(t, ctx, prod, recs...)
			listed := func(l kadm.ListedOffsets, err error) kadm.ListedOffset {
				require.NoError(t, err)
				o, ok := l.Lookup("admin", 2)
				require.True(t, ok)
				require.NoError(t, o.Err)
				return o
			}
			require.Equal(t, int64(0), listed(adm.ListStartOffsets(ctx, "admin")).Offset)
			require.Equal(t, int64(10), listed(adm.ListEndOffsets(ctx, "admin")).Offset)
			maxTS := listed(adm.ListMaxTimestampOffsets(ctx, "admin"))
			require.Equal(t, int64(4), maxTS.Offset)
			require.Equal(t, base.Add(time.Hour).UnixMilli(), maxTS.Timestamp)
			after := listed(adm.ListOffsetsAfterMilli(ctx, base.Add(5*time.Second).UnixMilli(), "admin"))
			require.Equal(t, int64(4), after.Offset, "the first record at or after the time is offset 4 (its timestamp is later)")
			// Past every record: offset -1 and timestamp -1, as Kafka answers (kadm then asks
			// for the end offset, so the request goes as it is).
			lreq := kmsg.NewPtrListOffsetsRequest()
			lt := kmsg.NewListOffsetsRequestTopic()
			lt.Topic = "admin"
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Partition, lp.Timestamp = 2, base.Add(2*time.Hour).UnixMilli()
			lt.Partitions = append(lt.Partitions, lp)
			lreq.Topics = append(lreq.Topics, lt)
			lresp, err := lreq.RequestWith(ctx, prod)
			require.NoError(t, err)
			none := lresp.Topics[0].Partitions[0]
			require.Equal(t, int16(0), none.ErrorCode)
			require.Equal(t, int64(-1), none.Offset)
			require.Equal(t, int64(-1), none.Timestamp)

			// Delete records below 6: the low watermark moves, reads below it are out of range.
			deleted, err := adm.DeleteRecords(ctx, kadm.Offsets{"admin": {2: {At: 6}}})
			require.NoError(t, err)
			d, ok := deleted.Lookup("admin", 2)
			require.True(t, ok)
			require.NoError(t, d.Err)
			require.Equal(t, int64(6), d.LowWatermark)
			require.Equal(t, int64(6), listed(adm.ListStartOffsets(ctx, "admin")).Offset)
			tooFar, err := adm.DeleteRecords(ctx, kadm.Offsets{"admin": {2: {At: 11}}})
			require.NoError(t, err)
			d, _ = tooFar.Lookup("admin", 2)
			require.ErrorIs(t, d.Err, kerr.OffsetOutOfRange)

			// Delete the topic: gone from the store and from metadata.
			dt, err := adm.DeleteTopics(ctx, "admin")
			require.NoError(t, err)
			require.NoError(t, dt["admin"].Err)
			_, err = b.store.Topic("admin")
			require.Error(t, err)
			mreq := kmsg.NewPtrMetadataRequest()
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr("admin")
			mreq.Topics = append(mreq.Topics, mt)
			md, err := mreq.RequestWith(ctx, b.client(t))
			require.NoError(t, err)
			require.Len(t, md.Topics, 1)
			require.Equal(t, kerr.UnknownTopicOrPartition.Code, md.Topics[0].ErrorCode)
			gone, err := adm.DeleteTopics(ctx, "admin")
			require.NoError(t, err)
			require.ErrorIs(t, gone["admin"].Err, kerr.UnknownTopicOrPartition)
		})
	}
}

// TestDescribeClusterAndBrokerConfigs: the cluster is this node; its broker configs are
// read-only static ones.
func TestDescribeClusterAndBrokerConfigs(t *testing.T) {
	b := startBroker(t, nil, Config{NodeID: 7, ClusterID: "test-cluster", DefaultPartitions: 3})
	ctx := testContext(t)
	adm := kadm.NewClient(b.client(t))
	md, err := adm.BrokerMetadata(ctx)
	require.NoError(t, err)
	require.Equal(t, "test-cluster", md.Cluster)
	require.Equal(t, int32(7), md.Controller)
	require.Len(t, md.Brokers, 1)
	require.Equal(t, int32(7), md.Brokers[0].NodeID)
	rcs, err := adm.DescribeBrokerConfigs(ctx, 7)
	require.NoError(t, err)
	require.Len(t, rcs, 1)
	require.NoError(t, rcs[0].Err)
	byName := map[string]kadm.Config{}
	for _, c := range rcs[0].Configs {
		byName[c.Key] = c
	}
	require.Equal(t, "3", *byName["num.partitions"].Value)
	require.Equal(t, kmsg.ConfigSourceStaticBrokerConfig, byName["num.partitions"].Source)
}

// TestAlterConfigsReplaces: the legacy AlterConfigs replaces a topic's configuration whole;
// configs it does not name return to their defaults (Kafka's semantics, unlike
// IncrementalAlterConfigs).
func TestAlterConfigsReplaces(t *testing.T) {
	b := startBroker(t, nil, Config{})
	ctx := testContext(t)
	cl := b.client(t)
	adm := kadm.NewClient(cl)
	_, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kmsg.StringPtr("3600000")}, "legacy")
	require.NoError(t, err)
	req := kmsg.NewPtrAlterConfigsRequest()
	res := kmsg.NewAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "legacy"
	rc := kmsg.NewAlterConfigsRequestResourceConfig()
	rc.Name, rc.Value = "segment.bytes", kmsg.StringPtr("1048576")
	res.Configs = append(res.Configs, rc)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Equal(t, int16(0), resp.Resources[0].ErrorCode)
	topic, err := b.store.Topic("legacy")
	require.NoError(t, err)
	got := topic.StoredConfig().KafkaConfigOverrides()
	require.Equal(t, map[string]string{"segment.bytes": "1048576"}, got, "retention.ms went back to its default")

	rc.Name, rc.Value = "no.such.config", kmsg.StringPtr("1")
	req.Resources[0].Configs = []kmsg.AlterConfigsRequestResourceConfig{rc}
	resp, err = req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Equal(t, kerr.InvalidConfig.Code, resp.Resources[0].ErrorCode)
	require.Equal(t, map[string]string{"segment.bytes": "1048576"}, topic.StoredConfig().KafkaConfigOverrides(), "nothing changed")
}
