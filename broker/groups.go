package broker

import (
	"context"
	"errors"
	"net"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// What the consumer group handlers share: the wait of JoinGroup and SyncGroup, the member's
// client host, and the bounds Kafka's coordinator applies around the store's group.Coordinator.

// offsetMetadataMaxSize is Kafka's offset.metadata.max.bytes (4096): the longest metadata string
// an OffsetCommit may carry, counted as Java counts String.length (UTF-16 code units).
const offsetMetadataMaxSize = 4096

// groupAuthorizedOperations is what DescribeGroups answers for include_authorized_operations:
// every operation Kafka supports on a group (AclEntry.supportedOperations(GROUP)), as Kafka
// answers without an authorizer.
var groupAuthorizedOperations = aclBits(kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete,
	kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs)

func aclBits(ops ...kmsg.ACLOperation) int32 {
	var b int32
	for _, op := range ops {
		b |= 1 << op
	}
	return b
}

// groupWait returns ctx ended also when Serve's context ends, with its cancel func: a JoinGroup
// or SyncGroup that the coordinator holds until the rebalance moves on then returns, so that
// Serve does not wait a rebalance timeout for it.
func (c *conn) groupWait(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-c.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// groupWaitCode is the error code of a JoinGroup or SyncGroup whose wait ended with err:
// NOT_COORDINATOR when Serve is ending (Kafka answers the requests its coordinator holds so when
// it unloads its groups at shutdown, and the client finds the coordinator again), else the
// error's code.
func (c *conn) groupWaitCode(err error) int16 {
	if errors.Is(err, context.Canceled) {
		select {
		case <-c.stopping:
			return kerr.NotCoordinator.Code
		default:
		}
	}
	return c.groupErrorCode(err)
}

// groupErrorCode is errorCode(err), logging an error that is not one of Kafka's (an unknown
// server error).
func (c *conn) groupErrorCode(err error) int16 {
	code := errorCode(err)
	if code == errUnknownServer {
		c.log.Warn("kafka group request failed", "err", err)
	}
	return code
}

// clientHost is the member's client host as Kafka gives it in DescribeGroups: the client's IP
// address after a slash (Java's InetAddress.toString of an address without a host name).
func (c *conn) clientHost() string {
	host, _, err := net.SplitHostPort(c.remote)
	if err != nil {
		host = c.remote
	}
	return "/" + host
}

// millis is a protocol's millisecond count as a duration.
func millis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

// javaLength is Java's String.length of s: its UTF-16 code units.
func javaLength(s string) int {
	n := 0
	for _, r := range s {
		n += max(utf16.RuneLen(r), 1)
	}
	return n
}
