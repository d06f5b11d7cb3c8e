package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerProtocolType is the protocol type of consumer groups in JoinGroup ("consumer"): their
// protocol metadata is a ConsumerProtocolSubscription and their assignments are
// ConsumerProtocolAssignments.
const ConsumerProtocolType = "consumer"

// subscriptionVersion is the ConsumerProtocolSubscription version members here write: 3, with
// owned partitions, generation and rack, as Kafka 3.5 and later clients write.
const subscriptionVersion = 3

// ErrBadProtocolMetadata is returned by DecodeSubscription and DecodeAssignment for bytes that
// are not a ConsumerProtocolSubscription or ConsumerProtocolAssignment.
var ErrBadProtocolMetadata = errors.New("group: malformed consumer protocol metadata")

// EncodeSubscription returns s in Kafka's ConsumerProtocolSubscription format, version 3 (the
// JoinGroup protocol metadata of a consumer; s.MemberID and s.InstanceID are not part of it).
// Topics are written sorted; owned partitions by topic, as Kafka's ConsumerProtocol writes them.
func EncodeSubscription(s Subscription) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = subscriptionVersion
	m.Topics = slices.Sorted(slices.Values(s.Topics))
	m.UserData = s.UserData
	for _, tp := range sortedTopicPartitions(s.Owned) {
		m.OwnedPartitions = append(m.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: tp.Topic, Partitions: tp.Partitions})
	}
	m.Generation = s.Generation
	if s.Rack != "" {
		m.Rack = &s.Rack
	}
	return m.AppendTo(nil)
}

// DecodeSubscription decodes a ConsumerProtocolSubscription of any version (0 to 3; later
// versions' extra fields are ignored, as Kafka's parser ignores them) into a Subscription with
// the given member and instance ids. A version without a generation gives Generation -1.
// Returns ErrBadProtocolMetadata for bytes that do not decode.
func DecodeSubscription(memberID, instanceID string, b []byte) (Subscription, error) {
	var m kmsg.ConsumerMemberMetadata
	if err := m.ReadFrom(b); err != nil {
		return Subscription{}, fmt.Errorf("%w: subscription of member %s: %w", ErrBadProtocolMetadata, memberID, err)
	}
	s := Subscription{MemberID: memberID, InstanceID: instanceID, Topics: m.Topics, UserData: m.UserData, Generation: -1}
	if m.Version >= 2 {
		s.Generation = m.Generation
	} else if len(m.UserData) == 4 {
		// Kafka's CooperativeStickyAssignor puts the generation in the user data for the
		// versions that lack the field.
		s.Generation = int32(binary.BigEndian.Uint32(m.UserData))
	}
	for _, op := range m.OwnedPartitions {
		s.Owned = append(s.Owned, TopicPartitions{Topic: op.Topic, Partitions: op.Partitions})
	}
	if m.Rack != nil {
		s.Rack = *m.Rack
	}
	return s, nil
}

// EncodeAssignment returns a member's partitions, by topic, in Kafka's
// ConsumerProtocolAssignment format, version 3 (the SyncGroup assignment of a consumer); topics
// sorted, partitions as given.
func EncodeAssignment(assigned map[string][]int32, userData []byte) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	a.Version = subscriptionVersion
	for _, t := range slices.Sorted(maps.Keys(assigned)) {
		a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: t, Partitions: assigned[t]})
	}
	a.UserData = userData
	return a.AppendTo(nil)
}

// DecodeAssignment decodes a ConsumerProtocolAssignment of any version into partitions by topic.
// Empty bytes are the empty assignment (Kafka's coordinator hands a member that the leader left
// out an empty assignment). Returns ErrBadProtocolMetadata for bytes that do not decode.
func DecodeAssignment(b []byte) (map[string][]int32, error) {
	out := map[string][]int32{}
	if len(b) == 0 {
		return out, nil
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("%w: assignment: %w", ErrBadProtocolMetadata, err)
	}
	for _, t := range a.Topics {
		out[t.Topic] = append(out[t.Topic], t.Partitions...)
	}
	return out, nil
}

// GenerationUserData returns the user data Kafka's CooperativeStickyAssignor sends in a
// subscription: the generation, a big-endian int32.
func GenerationUserData(generation int32) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(generation))
}

func sortedTopicPartitions(tps []TopicPartitions) []TopicPartitions {
	out := slices.Clone(tps)
	slices.SortFunc(out, func(a, b TopicPartitions) int { return compareStrings(a.Topic, b.Topic) })
	return out
}
