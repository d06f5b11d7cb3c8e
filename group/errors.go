package group

// Error is one of Kafka's group coordinator errors: the sentinels below are the only values,
// compared with errors.Is; Code is the error code a Kafka client gets for it on the wire.
type Error struct {
	// Code is Kafka's error code (org.apache.kafka.common.protocol.Errors).
	Code int16
	// Name is Kafka's name of the error, as in Errors: UNKNOWN_MEMBER_ID.
	Name string
	msg  string
}

// Error returns "group: " and the error's description.
func (e *Error) Error() string { return "group: " + e.msg }

// The coordinator's errors, each Kafka's of the same name, returned (wrapped, with the group and
// member involved) where Kafka's GroupCoordinator returns them.
var (
	// ErrCoordinatorNotAvailable (15): the coordinator is closed, or the group is being deleted.
	ErrCoordinatorNotAvailable = &Error{15, "COORDINATOR_NOT_AVAILABLE", "coordinator not available"}
	// ErrIllegalGeneration (22): the request's generation id is not the group's current one: the
	// member was left behind by a rebalance, and its partitions may have moved. A commit from it is
	// refused, so a zombie cannot move the group's positions.
	ErrIllegalGeneration = &Error{22, "ILLEGAL_GENERATION", "illegal generation: the group has moved on to another generation"}
	// ErrInconsistentGroupProtocol (23): the member's protocol type or protocols share nothing with
	// the group's, or a SyncGroup names another protocol than the group chose.
	ErrInconsistentGroupProtocol = &Error{23, "INCONSISTENT_GROUP_PROTOCOL", "the member's protocols are not compatible with the group's"}
	// ErrInvalidGroupID (24): the group id is empty.
	ErrInvalidGroupID = &Error{24, "INVALID_GROUP_ID", "invalid group id"}
	// ErrUnknownMemberID (25): the member id is not a member of the group (it was removed: it left,
	// its session timed out, or it missed a rebalance), or the group does not exist.
	ErrUnknownMemberID = &Error{25, "UNKNOWN_MEMBER_ID", "unknown member id"}
	// ErrInvalidSessionTimeout (26): the session timeout lies outside the coordinator's
	// group.min.session.timeout.ms and group.max.session.timeout.ms.
	ErrInvalidSessionTimeout = &Error{26, "INVALID_SESSION_TIMEOUT", "session timeout outside the coordinator's bounds"}
	// ErrRebalanceInProgress (27): the group is rebalancing: the member must rejoin (JoinGroup)
	// before its heartbeat, sync or commit is taken.
	ErrRebalanceInProgress = &Error{27, "REBALANCE_IN_PROGRESS", "the group is rebalancing"}
	// ErrNonEmptyGroup (68): a group with members cannot be deleted.
	ErrNonEmptyGroup = &Error{68, "NON_EMPTY_GROUP", "the group has members"}
	// ErrGroupIDNotFound (69): no group of the id exists.
	ErrGroupIDNotFound = &Error{69, "GROUP_ID_NOT_FOUND", "group id not found"}
	// ErrMemberIDRequired (79): a new dynamic member is given its member id and must join again
	// with it (KIP-394); the JoinResponse carries the id.
	ErrMemberIDRequired = &Error{79, "MEMBER_ID_REQUIRED", "join again with the given member id"}
	// ErrGroupMaxSizeReached (81): the group holds group.max.size members.
	ErrGroupMaxSizeReached = &Error{81, "GROUP_MAX_SIZE_REACHED", "the group is full"}
	// ErrFencedInstanceID (82): another member joined with the same group.instance.id since
	// (KIP-345): this one is a zombie.
	ErrFencedInstanceID = &Error{82, "FENCED_INSTANCE_ID", "another member has the group.instance.id"}
	// ErrGroupSubscribedToTopic (86): OffsetDelete of a topic that the group's live members
	// subscribe to.
	ErrGroupSubscribedToTopic = &Error{86, "GROUP_SUBSCRIBED_TO_TOPIC", "the group's members subscribe to the topic"}
)
